import pg from 'pg';

/** The text of every statement any pg client of this process sends (pooled or not), from now until
 * `stop()`: what a test asserts about the round trips an operation makes. */
export function recordPgStatements(): { texts: string[]; stop(): void } {
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  const texts: string[] = [];
  proto.query = function (this: unknown, ...args: unknown[]) {
    const q = args[0];
    texts.push(typeof q === 'string' ? q : typeof q === 'object' && q !== null && 'text' in q ? String(q.text) : '');
    return original.apply(this, args);
  };
  return { texts, stop: () => void (proto.query = original) };
}
