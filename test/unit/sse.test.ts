/** Server-Sent Events as both ends of a live replication stream write and read them (shared/wire/sse.ts). */
import { describe, expect, it } from 'vitest';
import { readSseData, sseComment, sseEvent } from '../../shared/wire/sse.ts';

/** A stream that hands its bytes out in the given pieces. */
function streamOf(pieces: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const p of pieces) controller.enqueue(typeof p === 'string' ? encoder.encode(p) : p);
      controller.close();
    },
  });
}

async function read(pieces: (string | Uint8Array)[], onBytes?: () => void): Promise<string[]> {
  const out: string[] = [];
  for await (const data of readSseData(streamOf(pieces), onBytes)) out.push(data);
  return out;
}

describe('server-sent events', () => {
  it('writes events and comments in the wire format, a line break in data as a second data line', () => {
    expect(sseEvent('RESYNC')).toBe('data: RESYNC\n\n');
    expect(sseEvent('{"a":1}')).toBe('data: {"a":1}\n\n');
    expect(sseEvent('one\ntwo')).toBe('data: one\ndata: two\n\n');
    expect(sseComment('ping')).toBe(': ping\n\n');
    expect(sseComment('a\nb')).toBe(': a b\n\n');
  });

  it('reads back what it writes, whatever the chunking, with comments and other fields ignored', async () => {
    const events = ['RESYNC', '{"documents":[{"id":"é😀","_deleted":false}],"checkpoint":{"seq":3}}', 'line one\nline two', ''];
    const text = `${sseComment('ping')}${events.map(sseEvent).join(sseComment('ping'))}event: other\nid: 7\nretry: 10\n\n`;
    const bytes = new TextEncoder().encode(text.replace(/\n/g, '\r\n'));
    // Every split point, including inside a multi-byte character and between "\r" and "\n".
    for (let cut = 0; cut <= bytes.length; cut++) {
      expect(await read([bytes.slice(0, cut), bytes.slice(cut)]), `cut at ${cut}`).toEqual(events);
    }
  });

  it('takes CRLF and CR line ends and "data:" without a space, and drops an event the stream broke off', async () => {
    expect(await read(['data:a\r\ndata: b\r\n\r', '\ndata: c\r\rdata: cut off'])).toEqual(['a\nb', 'c']);
    expect(await read(['data\n\n'])).toEqual(['']);
  });

  it('tells the reader whenever bytes arrive, comments included', async () => {
    let calls = 0;
    expect(await read([': ping\n\n', ': ping\n\n', 'data: x\n\n'], () => calls++)).toEqual(['x']);
    expect(calls).toBe(3);
  });
});
