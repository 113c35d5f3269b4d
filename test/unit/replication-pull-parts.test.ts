/**
 * A pulled page handed to RxDB in parts (electron/backend/replication-pull.ts `split`, `nextPart`,
 * `forget`; PULL_PART in replication.ts): which parts a page makes, the checkpoint each carries, and
 * when the parts left are dropped so that RxDB asks for the page again instead of skipping a part.
 */
import { describe, expect, it } from 'vitest';
import { PullPages } from '../../electron/backend/replication-pull.ts';
import type { ServerClient } from '../../electron/backend/server-client.ts';
import type { PullPage } from '../../shared/wire/replication.ts';

/** Parts are cut from pages already fetched: no request is made. */
const noServer = {} as ServerClient;
const page = (n: number, seq: number): PullPage => ({ documents: Array.from({ length: n }, (_, i) => ({ id: `l${i}`, _deleted: false })), checkpoint: { seq } });
const ids = (p: PullPage | null): string[] => (p?.documents ?? []).map((d) => d.id);

describe('pull pages in parts', () => {
  it('cuts a page of twice the part or more into parts: all but the last carry the checkpoint it was asked from, the last the page’s', () => {
    const pages = new PullPages(noServer, 'leads');
    const asked = { seq: 100 };
    const first = pages.split(page(2_500, 2_600), asked, 1_000);
    expect(first.documents).toHaveLength(1_000);
    expect(first.checkpoint).toEqual(asked);
    const last = pages.nextPart(asked);
    expect(ids(last)).toEqual(Array.from({ length: 1_500 }, (_, i) => `l${1_000 + i}`));
    expect(last?.checkpoint).toEqual({ seq: 2_600 });
    // Nothing left: the next ask from the page's checkpoint is a fetch.
    expect(pages.nextPart({ seq: 2_600 })).toBeNull();
  });

  it('keeps whole a page under twice the part, and a page asked for from no checkpoint (nothing stored to come back to)', () => {
    const pages = new PullPages(noServer, 'leads');
    expect(pages.split(page(1_999, 2_099), { seq: 100 }, 1_000).documents).toHaveLength(1_999);
    expect(pages.nextPart({ seq: 100 })).toBeNull();
    expect(pages.split(page(2_000, 2_000), null, 1_000).documents).toHaveLength(2_000);
    expect(pages.nextPart(null)).toBeNull();
  });

  it('drops the parts left when RxDB asks from another checkpoint, or when forgotten (a pause): the page is then fetched again, no part skipped', () => {
    const pages = new PullPages(noServer, 'leads');
    pages.split(page(3_000, 3_100), { seq: 100 }, 1_000);
    expect(pages.nextPart({ seq: 99 })).toBeNull();
    // Dropped: asked again from the right checkpoint, nothing is handed out from memory either.
    expect(pages.nextPart({ seq: 100 })).toBeNull();

    pages.split(page(3_000, 3_100), { seq: 100 }, 1_000);
    pages.forget();
    expect(pages.nextPart({ seq: 100 })).toBeNull();
  });
});
