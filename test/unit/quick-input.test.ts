/** An operation's quick input check (OpDef.quickInput) may only vouch for inputs its schema accepts
 * exactly as they are: execute then skips the schema's parse. Generated inputs, valid and not,
 * near the schema's limits, hold each check to its schema; the import's usual input takes the
 * quick path (else it would be slow for nothing). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { execute } from '../../shared/ops/execute.ts';
import { operations } from '../../shared/ops/index.ts';
import type { OpDef } from '../../shared/ops/define.ts';
import { makeHarness, testSecrets } from '../support/harness.ts';

const withQuickCheck = Object.values(operations as Record<string, OpDef>).filter((op) => op.quickInput !== undefined);

const UUID = 'b0000000-0000-4000-8000-000000000001';

/** Values near and past what the import's schema accepts, and of every JSON type. */
const text = (max: number) => fc.oneof(fc.string({ maxLength: 8 }), fc.constant('x'.repeat(max)), fc.constant('x'.repeat(max + 1)));
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.integer(),
  fc.double(),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -0, 2 ** 60, 0.5, -1, 0, 1),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.constant([]),
  fc.constant({}),
  fc.constant(new Date(0)),
);
const cellValue = fc.oneof(
  { weight: 5, arbitrary: fc.oneof(text(100_000), fc.integer(), fc.boolean(), fc.constant(null)) },
  { weight: 1, arbitrary: fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0, 0.5, 2 ** 60) },
  { weight: 1, arbitrary: anyValue },
);
const row = fc.oneof(
  { weight: 8, arbitrary: fc.dictionary(fc.oneof(fc.string({ maxLength: 5 }), fc.constant('h'.repeat(500)), fc.constant('h'.repeat(501))), cellValue, { maxKeys: 4, noNullPrototype: true }) },
  { weight: 1, arbitrary: anyValue },
  // A key of its own named __proto__, as JSON.parse makes it.
  { weight: 1, arbitrary: fc.constant(JSON.parse('{"__proto__": "x", "Email": "a@b.c"}') as unknown) },
);
const sparse = (): unknown[] => {
  const a: unknown[] = [];
  a[2] = { Email: 'a@b.c' };
  return a;
};
/** Mostly a value the schema takes, sometimes anything. */
const mostly = (good: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> => fc.oneof({ weight: 12, arbitrary: good }, { weight: 1, arbitrary: anyValue });
const fieldValue: Record<string, fc.Arbitrary<unknown>> = {
  leadGroupId: mostly(fc.oneof({ weight: 9, arbitrary: fc.constant(UUID) }, { weight: 1, arbitrary: fc.constant('not-a-uuid') })),
  campaignId: mostly(fc.constant(UUID)),
  rows: fc.oneof({ weight: 12, arbitrary: fc.array(row, { maxLength: 4 }) }, { weight: 1, arbitrary: fc.constant(sparse()) }, { weight: 1, arbitrary: anyValue }),
  rowNumbers: mostly(fc.array(mostly(fc.integer({ min: 1, max: 10 })), { maxLength: 4 })),
  mapping: mostly(fc.dictionary(fc.string({ maxLength: 5 }), mostly(text(200)), { maxKeys: 3, noNullPrototype: true })),
  onExisting: mostly(fc.constantFrom('skip', 'fill_empty', 'update', 'merge')),
  onPossibleDuplicate: mostly(fc.constantFrom('report', 'create', 'merge', 'skip')),
  dryRun: mostly(fc.boolean()),
};
/** Fields the quick check leaves to the schema, now and then. */
const others = fc.record({ csv: fc.string({ maxLength: 20 }), encoding: fc.constantFrom('auto', 'utf-8', 'latin9'), unknownField: anyValue }, { requiredKeys: [] });
const input = fc.tuple(fc.record(fieldValue, { requiredKeys: [] }), fc.oneof({ weight: 6, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: others })).map(([a, b]) => ({ ...a, ...b }));

describe('quick input checks', () => {
  it('exist for the import', () => {
    expect(withQuickCheck.map((op) => op.name)).toEqual(['campaigns.leads.import']);
  });

  for (const op of withQuickCheck) {
    it(`${op.name}: whatever it vouches for, its schema accepts unchanged`, () => {
      let vouched = 0;
      fc.assert(
        fc.property(input, (raw) => {
          const plain = Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined));
          if (!op.quickInput?.(plain)) return;
          vouched++;
          const parsed = op.input.safeParse(plain);
          expect(parsed.success).toBe(true);
          expect(parsed.data).toStrictEqual(plain);
        }),
        { numRuns: 3000, seed: 26 },
      );
      // The generator reaches the quick path often enough to mean something.
      expect(vouched).toBeGreaterThan(100);
    });
  }

  it('the import dialog\'s input takes the quick path, and a bad cell still gets the schema\'s issue', async () => {
    const op = (operations as Record<string, OpDef>)['campaigns.leads.import'];
    const rows = Array.from({ length: 50 }, (_, i) => ({ 'First Name': `Ann${i}`, Email: `ann${i}@example.com`, 'Person Linkedin Url': `https://www.linkedin.com/in/ann-${i}` }));
    const usual = { leadGroupId: UUID, rows, rowNumbers: rows.map((_, i) => i + 2), mapping: { Email: 'email' }, onExisting: 'fill_empty', onPossibleDuplicate: 'report', dryRun: false };
    expect(op?.quickInput?.(usual)).toBe(true);
    const h = await makeHarness();
    const call = (raw: unknown) => execute('campaigns.leads.import', raw, { actor: h.owner, store: h.store, clock: h.clock, ids: h.ids, random: h.random, secrets: testSecrets });
    const bad = { ...usual, leadGroupId: h.main.leadGroupId, rows: [...rows.slice(0, 3), { Email: { nested: true } }] };
    expect(op?.quickInput?.(bad)).toBe(false);
    const e = await h.expectRefused(call(bad), 'INVALID_INPUT');
    expect((e.details.issues as { path: string }[])[0]?.path).toBe('rows.3.Email');
    const ok = (await call({ ...usual, leadGroupId: h.main.leadGroupId, dryRun: true })) as { totals: { created: number } };
    expect(ok.totals.created).toBe(50);
  });
});
