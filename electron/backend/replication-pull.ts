/**
 * One collection's pull pages (GET /replication/<collection>/pull), with at most one page fetched
 * ahead. The checkpoint of a page is known only once the page before it arrived, so the page after
 * a full page is requested as soon as that page arrives, and handed out when RxDB asks for the same
 * checkpoint and size; anything else is fetched then. A page fetched ahead holds the server's
 * changes since that checkpoint when it was read, so later changes still follow it in seq order.
 *
 * A page can also be handed out in parts (`split`, `nextPart`): documents carry no `seq`, so the
 * only checkpoint known inside a page is the one it was asked from. Every part but the last carries
 * that one (everything before it is stored), the last one the page's own; RxDB asks again from the
 * checkpoint a part carried, and gets the next part. A part RxDB drops (returned while it is paused)
 * would be skipped by the next one: `forget` drops the parts left, and the page is asked for again
 * from the stored checkpoint (its documents already stored are equal to the pulled ones, and RxDB
 * writes none of them again).
 */
import { setImmediate as turn } from 'node:timers/promises';
import type { CollectionName } from '../../shared/model/index.ts';
import { pullPageSchema, readPullPageText } from '../../shared/wire/replication.ts';
import type { Checkpoint, PullPage } from '../../shared/wire/replication.ts';
import type { ServerClient } from './server-client.ts';

/** @internal Milliseconds of a page's parse a turn of the event loop (readPage); tests make it 0. */
export const PARSE_TUNING = { ms: 8 };

/** A pull page's text read a document at a time (readPullPageText), PARSE_TUNING.ms of it a turn of
 * the event loop: parsed at once, a 2,000-document page held the loop 22-33 ms of CPU (the longest
 * task of an initial sync of 1M leads). */
export async function readPage(text: string): Promise<unknown> {
  const steps = readPullPageText(text);
  for (;;) {
    const end = performance.now() + PARSE_TUNING.ms;
    for (;;) {
      const step = steps.next();
      if (step.done) return step.value;
      if (performance.now() >= end) break;
    }
    await turn();
  }
}

export class PullPages {
  private ahead: { key: string; page: Promise<PullPage> } | null = null;
  /** The parts of a split page not yet handed out, and the checkpoint the page was asked from. */
  private parts: { after: string; rest: PullPage[] } | null = null;

  constructor(
    private readonly client: ServerClient,
    private readonly collection: CollectionName,
  ) {}

  /** The page after `checkpoint` (null: from the start). `count`: a pull starts here, ask the server
   * how many documents remain (the page's `remaining`); a page fetched ahead continues a pull and
   * comes without. */
  take(checkpoint: Checkpoint | null, batchSize: number, count = false): Promise<PullPage> {
    const ahead = this.ahead;
    this.ahead = null;
    if (ahead && ahead.key === PullPages.key(checkpoint, batchSize)) return ahead.page;
    return this.fetch(checkpoint, batchSize, count);
  }

  /** Asks for the page after `checkpoint` now, for a take() that will follow. */
  prefetch(checkpoint: Checkpoint | null, batchSize: number): void {
    const page = this.fetch(checkpoint, batchSize);
    // Awaited when RxDB asks for it, or never: take() reports its failure, or nobody needs to.
    page.catch(() => undefined);
    this.ahead = { key: PullPages.key(checkpoint, batchSize), page };
  }

  /** `page`, asked for from `checkpoint`, in parts of at least `size` documents (a page of fewer
   * than twice `size`, or asked for from no checkpoint, stays whole): returns the first part, and
   * nextPart the others. */
  split(page: PullPage, checkpoint: Checkpoint | null, size: number): PullPage {
    const n = Math.floor(page.documents.length / size);
    this.parts = null;
    if (n < 2 || checkpoint === null) return page;
    const parts: PullPage[] = [];
    for (let i = 0; i < n; i++) {
      const last = i === n - 1;
      parts.push({ documents: page.documents.slice(i * size, last ? undefined : (i + 1) * size), checkpoint: last ? page.checkpoint : checkpoint });
    }
    const [first, ...rest] = parts as [PullPage, ...PullPage[]];
    this.parts = { after: JSON.stringify(checkpoint), rest };
    return first;
  }

  /** The next part of the page split last, when asked for from the checkpoint the part before it
   * carried; otherwise null (and the parts left are dropped). */
  nextPart(checkpoint: Checkpoint | null): PullPage | null {
    const parts = this.parts;
    const part = parts && parts.after === JSON.stringify(checkpoint) ? (parts.rest.shift() ?? null) : null;
    if (!part || parts?.rest.length === 0) this.parts = null;
    return part;
  }

  /** Whether parts of the page split last are still to be handed out. */
  get splitting(): boolean {
    return this.parts !== null;
  }

  /** Drops the parts not handed out yet (see the file comment). */
  forget(): void {
    this.parts = null;
  }

  private async fetch(checkpoint: Checkpoint | null, batchSize: number, count = false): Promise<PullPage> {
    const q = new URLSearchParams({ limit: String(batchSize) });
    if (checkpoint) q.set('checkpoint', JSON.stringify(checkpoint));
    if (count) q.set('count', 'true');
    const page = await this.client.checked(pullPageSchema, `/replication/${this.collection}/pull?${q.toString()}`, { collection: this.collection, read: readPage });
    return { documents: page.documents, checkpoint: page.checkpoint ?? checkpoint, ...(page.remaining === undefined ? {} : { remaining: page.remaining }) };
  }

  private static key(checkpoint: Checkpoint | null, batchSize: number): string {
    return `${batchSize} ${JSON.stringify(checkpoint)}`;
  }
}
