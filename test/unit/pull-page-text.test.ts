/**
 * A pull page's text, one document a line (shared/wire/replication.ts pullPageText), and the
 * desktop's reading of it a document at a time (readPullPageText, and readPage over turns of the
 * event loop in electron/backend/replication-pull.ts): always what JSON.parse gives for the same
 * text, whatever the documents hold, and JSON.parse's own answer (or error) for any text not in
 * that layout.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PARSE_TUNING, PullPages, readPage } from '../../electron/backend/replication-pull.ts';
import { ServerClient } from '../../electron/backend/server-client.ts';
import { pullPageText, readPullPageText } from '../../shared/wire/replication.ts';

/** Runs the reader to its end; returns its value and how many times it yielded. */
function read(text: string): { value: unknown; steps: number } {
  const steps = readPullPageText(text);
  for (let n = 0; ; n++) {
    const step = steps.next();
    if (step.done) return { value: step.value, steps: n };
  }
}

/** What JSON.parse answers: the value, or the error's class. */
function parsed(text: string): { value: unknown } | { error: string } {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch (e) {
    return { error: (e as Error).constructor.name };
  }
}

function readOrError(text: string): { value: unknown } | { error: string } {
  try {
    return { value: read(text).value };
  } catch (e) {
    return { error: (e as Error).constructor.name };
  }
}

/** Text that the layout must survive: line breaks, commas, brackets and quotes inside strings, the
 * envelope's own key names, characters beyond the BMP. */
const tricky = fc.oneof(fc.string(), fc.constantFrom('\n', ',\n', '\n]', '"documents":0', '},{', '\\', '\u2028', '😀', ''));
const doc = fc.record({ id: tricky, _deleted: fc.boolean(), extra: fc.jsonValue({ maxDepth: 3 }), note: tricky });
const page = fc.record({
  documents: fc.array(doc, { maxLength: 12 }),
  checkpoint: fc.option(fc.record({ seq: fc.nat() }), { nil: null }),
  remaining: fc.option(fc.nat(), { nil: undefined }),
});

describe('pull page text', () => {
  it('is JSON whose value is the page, one document a line', () => {
    fc.assert(
      fc.property(page, (p) => {
        const text = pullPageText(p);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(p)));
        if (p.documents.length > 0) expect(text.split('\n')).toHaveLength(p.documents.length + 2);
      }),
      { numRuns: 300 },
    );
  });

  it('is read a document a step into what JSON.parse gives', () => {
    fc.assert(
      fc.property(page, (p) => {
        const text = pullPageText(p);
        const { value, steps } = read(text);
        expect(value).toEqual(JSON.parse(text));
        expect(steps).toBe(p.documents.length);
      }),
      { numRuns: 300 },
    );
  });

  /** Ways a text can leave the layout, at a place `i` (a server of another version, a proxy, bad bytes). */
  const changes: Record<string, (text: string, i: number, p: unknown) => string> = {
    drop: (t, i) => t.slice(0, i) + t.slice(i + 1),
    'insert a break': (t, i) => `${t.slice(0, i)}\n${t.slice(i)}`,
    'insert a comma': (t, i) => `${t.slice(0, i)},${t.slice(i)}`,
    cut: (t, i) => t.slice(0, i),
    'a space for a comma': (t) => t.replace(',\n', ' \n'),
    'a second documents key': (t) => t.replace(/}$/, ',"documents":0}'),
    compact: (_t, _i, p) => JSON.stringify(p),
  };

  it('reads any other text as JSON.parse does, and throws where it throws', () => {
    fc.assert(
      fc.property(page, fc.nat(), fc.constantFrom(...Object.keys(changes)), (p, at, how) => {
        const text = pullPageText(p);
        const changed = (changes[how] as (t: string, i: number, p: unknown) => string)(text, at % (text.length + 1), p);
        expect(readOrError(changed)).toEqual(parsed(changed));
      }),
      { numRuns: 2000 },
    );
  });

  it('answers an empty page, and a page without checkpoint or count, in plain JSON', () => {
    expect(pullPageText({ documents: [], checkpoint: { seq: 3 } })).toBe('{"documents":[],"checkpoint":{"seq":3}}');
    const text = pullPageText({ documents: [{ id: 'a', _deleted: false }], checkpoint: null, remaining: 1 });
    expect(text).toBe('{"documents":[\n{"id":"a","_deleted":false}\n],"checkpoint":null,"remaining":1}');
    expect(read(text).value).toEqual({ documents: [{ id: 'a', _deleted: false }], checkpoint: null, remaining: 1 });
  });

  /** Turns of the event loop other work got while `work` ran, reading a document a turn. */
  async function turnsDuring<T>(work: () => Promise<T>): Promise<{ value: T; turns: number }> {
    const before = PARSE_TUNING.ms;
    PARSE_TUNING.ms = 0;
    let turns = 0;
    let counting = true;
    const count = (): void => {
      if (!counting) return;
      turns++;
      setImmediate(count);
    };
    setImmediate(count);
    try {
      return { value: await work(), turns };
    } finally {
      counting = false;
      PARSE_TUNING.ms = before;
    }
  }

  const fivePage = { documents: Array.from({ length: 5 }, (_, i) => ({ id: `l${i}`, _deleted: false })), checkpoint: { seq: 5 } };

  it('is read over turns of the event loop: other work runs between its documents', async () => {
    const text = pullPageText(fivePage);
    const { value, turns } = await turnsDuring(() => readPage(text));
    expect(value).toEqual(JSON.parse(text));
    // A turn for each document but the first (read in the call's own turn), and the end.
    expect(turns).toBeGreaterThanOrEqual(5);
  });

  it("is how the desktop's pull reads the server's page: over turns, into the same page", async () => {
    let asked = '';
    const answer: typeof fetch = (url) => {
      asked = String(url);
      return Promise.resolve(new Response(pullPageText(fivePage), { headers: { 'content-type': 'application/json; charset=utf-8' } }));
    };
    const pages = new PullPages(new ServerClient('http://127.0.0.1:1', `live_${'Zz9'.repeat(14)}`, answer), 'leads');
    const { value, turns } = await turnsDuring(() => pages.take(null, 2_000));
    expect(asked).toContain('/replication/leads/pull?limit=2000');
    expect(value).toEqual(fivePage);
    expect(turns).toBeGreaterThanOrEqual(5);
  });
});
