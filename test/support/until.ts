/**
 * Waiting in tests for something another process, thread or timer brings about: polls `probe`
 * until it gives a truthy value, and returns that value. After `ms`
 * it throws "timed out waiting for <what>", with `detail()` (the logs that say why) when given.
 */
export async function until<T>(
  what: string,
  probe: () => T | null | undefined | false | 0 | '' | Promise<T | null | undefined | false | 0 | ''>,
  ms = 30_000,
  detail?: () => string,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (${ms} ms)${detail ? `\n${detail()}` : ''}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
