/**
 * Server-Sent Events (the WHATWG "event stream" format) as both ends of a live replication stream
 * use it: the sync server writes events and keep-alive comments, the desktop reads the events'
 * data. Only what the stream needs: `data` fields and comments; `event`, `id` and `retry` are
 * ignored by the reader and never written.
 */

export const SSE_CONTENT_TYPE = 'text/event-stream; charset=utf-8';

/** One event carrying `data` (a line break in it becomes a second `data:` line, as the format wants). */
export function sseEvent(data: string): string {
  return `${data
    .split(/\r\n|\r|\n/)
    .map((line) => `data: ${line}`)
    .join('\n')}\n\n`;
}

/** A comment line: readers ignore it, proxies and idle timers see traffic. */
export function sseComment(text: string): string {
  return `: ${text.replace(/[\r\n]+/g, ' ')}\n\n`;
}

/**
 * The `data` of each event of a stream, in order. `onBytes` runs whenever bytes arrive (comments
 * included), for a reader that gives up on a silent stream. A last event without its closing blank
 * line is dropped, as the format says: the stream ended in the middle of it.
 */
export async function* readSseData(body: ReadableStream<Uint8Array>, onBytes: () => void = () => undefined): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buf = '';
  let data: string[] = [];
  // A "\r" at the end of a chunk may be the first half of "\r\n": wait for the next chunk.
  const lineEnd = /\r\n|\r(?=[^\n])|\n/;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      onBytes();
      buf += decoder.decode(value, { stream: true });
      for (let m = lineEnd.exec(buf); m; m = lineEnd.exec(buf)) {
        const line = buf.slice(0, m.index);
        buf = buf.slice(m.index + m[0].length);
        if (line === '') {
          if (data.length > 0) yield data.join('\n');
          data = [];
        } else if (line === 'data') data.push('');
        else if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
      }
    }
  } finally {
    reader.releaseLock();
  }
}
