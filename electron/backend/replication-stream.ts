/**
 * One collection's live stream (GET /replication/<collection>/stream, Server-Sent Events): what the
 * server commits arrives as pages of documents, and RESYNC asks for a pull from the replication's own
 * checkpoint. The stream is followed until its signal aborts: a dropped, refused or silent stream
 * (servers send heartbeats) is opened again after an exponential, jittered backoff, and every
 * connect starts with a RESYNC, so whatever changed while nobody listened is pulled.
 */
import type { CollectionName } from '../../shared/model/index.ts';
import { parseStreamEvent } from '../../shared/wire/replication.ts';
import type { StreamEvent } from '../../shared/wire/replication.ts';
import { readSseData } from '../../shared/wire/sse.ts';
import { ServerError, unreachable } from './server-client.ts';
import type { ServerClient } from './server-client.ts';

export type StreamTimings = {
  /** Backoff before reconnecting: first wait and cap. */
  backoffMs: number;
  maxBackoffMs: number;
  /** Reconnect a stream that has been silent this long. */
  idleMs: number;
  /** Jitter, so desktops dropped together do not reconnect together. */
  random: () => number;
};

export type StreamListener = {
  /** Connected: the server accepted the stream. */
  up(): void;
  event(e: StreamEvent): void;
  /** Lost or refused; `err.needsUser` when retrying cannot help. A reconnect follows. */
  down(err: ServerError): void;
};

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

/** Follows `collection`'s live stream until `signal` aborts (see the file comment). */
export async function followStream(client: ServerClient, collection: CollectionName, signal: AbortSignal, timings: StreamTimings, on: StreamListener): Promise<void> {
  let attempt = 0;
  while (!signal.aborted) {
    const idle = new AbortController();
    let timer: ReturnType<typeof setTimeout> | null = null;
    const touch = () => {
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => idle.abort(), timings.idleMs);
    };
    try {
      touch();
      const body = await client.eventStream(`/replication/${collection}/stream`, { collection, signal: AbortSignal.any([signal, idle.signal]) });
      attempt = 0;
      on.up();
      // Whatever changed while we were not listening is pulled again from the checkpoint.
      on.event('RESYNC');
      for await (const data of readSseData(body, touch)) on.event(parseStreamEvent(data));
      if (!signal.aborted) throw unreachable(client.serverUrl, 'it closed the live stream');
    } catch (e) {
      if (signal.aborted) return;
      const err = idle.signal.aborted
        ? unreachable(client.serverUrl, 'the live stream went silent')
        : e instanceof ServerError
          ? e
          : new ServerError('INTERNAL', `The live stream of ${collection} failed: ${e instanceof Error ? e.message : String(e)}`, 0);
      on.down(err);
      const wait = Math.min(timings.maxBackoffMs, timings.backoffMs * 2 ** attempt) * (0.5 + timings.random() / 2);
      attempt++;
      await sleep(wait, signal);
    } finally {
      if (timer) clearTimeout(timer);
    }
  }
}
