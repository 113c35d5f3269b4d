/** A live replication stream read the way a client reads it: every `data:` event kept in order. */

export type LiveStream = {
  /** The data of every event so far (`RESYNC`, or the JSON of a page of documents). */
  readonly events: readonly string[];
  /** Resolves with the first event from index `from` on that satisfies `pred`; rejects after
   * `timeoutMs` with the events seen. */
  waitFor(pred: (data: string) => boolean, timeoutMs: number, from?: number): Promise<string>;
  close(): void;
};

/** Whether an event is a page holding a document with this `name`. */
export function carriesName(name: string): (data: string) => boolean {
  return (data) => {
    if (data === 'RESYNC') return false;
    const page = JSON.parse(data) as { documents?: { name?: unknown }[] };
    return (page.documents ?? []).some((d) => d.name === name);
  };
}

/** Opens GET /replication/<collection>/stream and reads it in the background. */
export async function openStream(url: string, key: string, collection: string): Promise<LiveStream> {
  const abort = new AbortController();
  const res = await fetch(`${url}/replication/${collection}/stream`, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' }, signal: abort.signal });
  if (!res.ok || !res.body) throw new Error(`The stream answered ${res.status}: ${await res.text()}`);
  const events: string[] = [];
  const waiters = new Set<() => void>();
  const reader = res.body.getReader();
  void (async () => {
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        let end: number;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, end);
          buf = buf.slice(end + 2);
          const data = frame
            .split('\n')
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).trimStart())
            .join('\n');
          if (data) events.push(data);
        }
        for (const w of waiters) w();
      }
    } catch {
      // Closed (by close() or by the server).
    }
  })();
  return {
    events,
    waitFor(pred, timeoutMs, from = 0) {
      return new Promise((resolve, reject) => {
        const check = (): boolean => {
          const hit = events.slice(from).find(pred);
          if (hit === undefined) return false;
          done();
          resolve(hit);
          return true;
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`No matching stream event within ${timeoutMs} ms; events from ${from}: ${JSON.stringify(events.slice(from)).slice(0, 2000)}`));
        }, timeoutMs);
        const done = (): void => {
          clearTimeout(timer);
          waiters.delete(onEvent);
        };
        const onEvent = (): void => void check();
        waiters.add(onEvent);
        check();
      });
    },
    close() {
      abort.abort();
    },
  };
}
