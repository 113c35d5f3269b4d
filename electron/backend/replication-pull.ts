/**
 * One collection's pull pages (GET /replication/<collection>/pull), with at most one page fetched
 * ahead. The checkpoint of a page is known only once the page before it arrived, so the page after
 * a full page is requested as soon as that page arrives, and handed out when RxDB asks for the same
 * checkpoint and size; anything else is fetched then. A page fetched ahead holds the server's
 * changes since that checkpoint when it was read, so later changes still follow it in seq order.
 */
import type { CollectionName } from '../../shared/model/index.ts';
import { pullPageSchema } from '../../shared/wire/replication.ts';
import type { Checkpoint, PullPage } from '../../shared/wire/replication.ts';
import type { ServerClient } from './server-client.ts';

export class PullPages {
  private ahead: { key: string; page: Promise<PullPage> } | null = null;

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

  private async fetch(checkpoint: Checkpoint | null, batchSize: number, count = false): Promise<PullPage> {
    const q = new URLSearchParams({ limit: String(batchSize) });
    if (checkpoint) q.set('checkpoint', JSON.stringify(checkpoint));
    if (count) q.set('count', 'true');
    const page = await this.client.checked(pullPageSchema, `/replication/${this.collection}/pull?${q.toString()}`, { collection: this.collection });
    return { documents: page.documents, checkpoint: page.checkpoint ?? checkpoint, ...(page.remaining === undefined ? {} : { remaining: page.remaining }) };
  }

  private static key(checkpoint: Checkpoint | null, batchSize: number): string {
    return `${batchSize} ${JSON.stringify(checkpoint)}`;
  }
}
