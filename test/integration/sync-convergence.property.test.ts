/**
 * Property: two desktops editing the same leads, online and offline, converge through the sync
 * server whatever the order of their pushes, pulls and conflicts; nothing one side alone changed is
 * lost, and a change the server's rules refuse never sticks anywhere.
 *
 * fast-check generates scripts of steps: a desktop edits a field of a lead (a scalar, a boolean, or
 * one key of the `variables` object, which merges key by key), deletes a lead, makes a change the
 * server's rules refuse (a lead out of its own group), goes offline or online; a third member edits
 * through the server meanwhile; pauses let replication run between steps. Every request of each
 * desktop is delayed by a seeded random few milliseconds, so pushes, pulls and stream events of the
 * two desktops arrive at the server in orders the script does not fix. After the script both
 * desktops go online, and the server's state and both local copies must be equal, with nothing
 * pending.
 *
 * The setup: the real sync server (in-process, PGlite, the shared rules on every push), and two real
 * desktops in this process, each an RxDB database on the desktop's storage with the real startSync
 * (RxDB's replication protocol, the client, the stream, the conflict handler, pending tracking),
 * replicating only the leads collection: RxDB allows 13 open collections per JavaScript context, and
 * two full desktops (12 each) do not fit, nor would a child process per run stay within the time.
 * The desktops live across runs; each run works on leads of its own.
 *
 * What it cannot prove: orders are sampled, not enumerated, and timing decides part of each run, so
 * a seed replays the script but not always the same interleaving; the other collections, the order
 * in which lanes push (PUSH_AFTER), crashes and restarts, and more than one server process are
 * covered by sync-client.test.ts, sync-two-desktops.test.ts and sync-fanout.test.ts instead.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { createRxDatabase } from 'rxdb';
import type { RxCollection, RxDatabase, RxDocument, RxJsonSchema } from 'rxdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationStrategies } from '../../electron/backend/local-db.ts';
import { mergeConflictHandler } from '../../electron/backend/replication-merge.ts';
import { startSync } from '../../electron/backend/replication.ts';
import type { Sync } from '../../electron/backend/replication.ts';
import { getRxStorageSqlite } from '../../electron/backend/storage/sqlite/storage.ts';
import { sameJson } from '../../shared/json-equal.ts';
import { newLead } from '../../shared/model/factories.ts';
import { COLLECTIONS } from '../../shared/model/index.ts';
import { seededRandom } from '../support/deterministic.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';
import { until } from '../support/until.ts';

/** Bounded so the property runs in npm test in a few seconds; the seed makes the scripts repeatable. */
const RUNS = 40;
const SEED = 1919;

type Json = Record<string, unknown>;
type DesktopName = 'A' | 'B';
/** The desktops, and S: another member editing through the server. */
type Party = DesktopName | 'S';
const FIELDS = ['company', 'jobTitle', 'phone', 'doNotContact', 'variables.x', 'variables.y'] as const;
type Field = (typeof FIELDS)[number];

type Step =
  | { kind: 'edit'; who: Party; lead: number; field: Field; n: number }
  | { kind: 'delete'; who: DesktopName; lead: number }
  | { kind: 'refused'; who: DesktopName; lead: number }
  | { kind: 'network'; who: DesktopName; online: boolean }
  | { kind: 'wait'; ms: number };

type Desktop = { name: DesktopName; rx: RxDatabase; leads: RxCollection<Json>; sync: Sync };

const desktop = fc.constantFrom<DesktopName>('A', 'B');
const stepArb = (leads: number): fc.Arbitrary<Step> =>
  fc.oneof(
    { weight: 8, arbitrary: fc.record({ kind: fc.constant('edit' as const), who: fc.constantFrom<Party>('A', 'B', 'S'), lead: fc.nat(leads - 1), field: fc.constantFrom(...FIELDS), n: fc.nat(3) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), who: desktop, lead: fc.nat(leads - 1) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('refused' as const), who: desktop, lead: fc.nat(leads - 1) }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('network' as const), who: desktop, online: fc.boolean() }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 40 }) }) },
  );
const scriptArb = fc.integer({ min: 1, max: 3 }).chain((leads) => fc.record({ leads: fc.constant(leads), steps: fc.array(stepArb(leads), { minLength: 3, maxLength: 24 }), delaySeed: fc.nat() }));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LOCAL_FIELDS = new Set(['_rev', '_meta', '_attachments']);
const withoutLocalFields = (d: Json): Json => Object.fromEntries(Object.entries(d).filter(([k]) => !LOCAL_FIELDS.has(k)));

/** Two copies of a lead agree: equal, or both deleted. A deleted lead's fields are not compared:
 * nothing reads them (soft deletes), and the server keeps the content it last stored, so a desktop
 * that deleted a lead with unpushed edits, or merged edits into a deletion, keeps other fields. */
const agree = (a: Json | undefined, b: Json | undefined): boolean => sameJson(a, b) || (a?._deleted === true && b?._deleted === true);

function valueOf(doc: Json, field: Field): unknown {
  if (field.startsWith('variables.')) return (doc.variables as Json | undefined)?.[field.slice('variables.'.length)];
  return doc[field];
}

/** The patch that sets `field` of `doc` to the party's n-th value. */
function patchFor(doc: Json, field: Field, value: unknown): Json {
  if (field.startsWith('variables.')) return { variables: { ...(doc.variables as Json), [field.slice('variables.'.length)]: value } };
  return { [field]: value };
}

const valueFor = (who: Party, field: Field, n: number): unknown => (field === 'doNotContact' ? n % 2 === 1 : `${who}${n}`);

let s: TestServer;
let root = '';
let leadGroupId = '';
const desktops = new Map<DesktopName, Desktop>();
/** Each request of the desktops waits this long first (set per run from its seed). */
let requestDelay: () => number = () => 0;
let clockTick = 0;
const nextTime = (): string => new Date(Date.UTC(2026, 10, 16, 10) + ++clockTick * 1000).toISOString();

async function openDesktop(name: DesktopName, apiKey: string): Promise<Desktop> {
  const rx = await createRxDatabase({ name: `desktop-${name.toLowerCase()}`, storage: getRxStorageSqlite({ directory: join(root, name) }), multiInstance: false });
  await rx.addCollections({
    leads: {
      schema: COLLECTIONS.leads.schema as unknown as RxJsonSchema<Json>,
      migrationStrategies: migrationStrategies(COLLECTIONS.leads.schema.version),
      conflictHandler: mergeConflictHandler,
    },
  });
  const delayed: typeof fetch = async (input, init) => {
    await sleep(requestDelay());
    return fetch(input, init);
  };
  const sync = await startSync({ db: { rx }, serverUrl: s.url, apiKey, collections: ['leads'], fetch: delayed, retryMs: 50, backoffMs: 20, maxBackoffMs: 200, pushBatchSize: 10 });
  const leads = rx.collections.leads as RxCollection<Json> | undefined;
  if (!leads) throw new Error('no leads collection');
  return { name, rx, leads, sync };
}

/** Every copy of the leads `ids`, deleted ones included, without RxDB's local fields. */
async function localCopies(d: Desktop, ids: string[]): Promise<Map<string, Json>> {
  const docs = await d.leads.storageInstance.findDocumentsById(ids, true);
  return new Map(docs.map((doc) => [String(doc.id), withoutLocalFields(doc as unknown as Json)]));
}
async function serverCopies(ids: string[]): Promise<Map<string, Json>> {
  const rows = await s.sql.query<{ id: string; deleted: boolean; doc: Json }>("SELECT id, deleted, doc FROM documents WHERE collection = 'leads' AND id = ANY($1::text[])", [ids]);
  return new Map(rows.map((r) => [r.id, { ...r.doc, _deleted: r.deleted }]));
}

/** Another member edits through the server (a push assuming the stored state); false if it lost a race. */
async function serverEdit(id: string, field: Field, value: unknown): Promise<boolean> {
  const current = (await serverCopies([id])).get(id);
  if (!current || current._deleted) return false;
  const next = { ...current, ...patchFor(current, field, value), updatedAt: nextTime() };
  const res = await fetch(`${s.url}/replication/leads/push`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.ours.ownerKey}`, 'content-type': 'application/json', 'x-schema-version': String(COLLECTIONS.leads.schema.version) },
    body: JSON.stringify([{ assumedMasterState: current, newDocumentState: next }]),
  });
  if (res.status !== 200) throw new Error(`the server refused a well-formed push: ${res.status} ${await res.text()}`);
  return ((await res.json()) as unknown[]).length === 0;
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'sync-property-'));
  s = await startTestServer('pglite');
  const groups = await s.db.forWorkspace(s.ours.workspaceId).query('leadGroups');
  leadGroupId = String((groups.docs[0] as { id: string } | undefined)?.id);
  desktops.set('A', await openDesktop('A', s.ours.memberKey));
  desktops.set('B', await openDesktop('B', s.ours.adminKey));
}, 60_000);

afterAll(async () => {
  for (const d of desktops.values()) {
    await d.sync.stop();
    await d.rx.close();
  }
  await s?.close();
  if (root) rmSync(root, { recursive: true, force: true });
}, 60_000);

describe('two desktops and a sync server (property)', () => {
  it('converge whatever the order of pushes, pulls and conflicts, losing no change only one side made', async () => {
    const started = Date.now();
    /** Runs in which both desktops changed one lead: the property is not vacuous. */
    let bothEditedOneLead = 0;
    await fc.assert(
      fc.asyncProperty(scriptArb, async ({ leads: count, steps, delaySeed }) => {
        const desk = (n: DesktopName): Desktop => {
          const d = desktops.get(n);
          if (!d) throw new Error(`no desktop ${n}`);
          return d;
        };
        const all = [desk('A'), desk('B')];
        const random = seededRandom(delaySeed);
        requestDelay = () => Math.floor(random() * 12);

        // Fresh leads on the server, pulled by both desktops.
        const initial = Array.from({ length: count }, (_, i) => newLead({ id: randomUUID(), workspaceId: s.ours.workspaceId, now: nextTime() }, leadGroupId, { firstName: `Run lead ${i}`, company: 'Initial Co', variables: { x: 'x0', y: 'y0' } }));
        const ids = initial.map((l) => l.id);
        await s.db.withStore(s.ours.workspaceId, (store) => store.commit(initial.map((l) => ({ collection: 'leads' as const, id: l.id, before: null, after: l }))));
        for (const d of all) await until(`${d.name} has the run's leads`, async () => (await d.leads.storageInstance.findDocumentsById(ids, false)).length === count, 10_000);

        /** What each party wrote (in order), and who made a change the rules refuse, per lead. */
        const wrote = ids.map(() => new Map<Field, { who: Party; value: unknown }[]>());
        const refusedBy = ids.map(() => new Set<Party>());
        const record = (lead: number, field: Field, who: Party, value: unknown) => {
          const list = wrote[lead]?.get(field) ?? [];
          list.push({ who, value });
          wrote[lead]?.set(field, list);
        };

        /** A desktop's local change to a lead it still has (one it saw deleted cannot be edited there). */
        const locally = async (who: DesktopName, lead: number, change: (doc: RxDocument<Json>) => Promise<void>): Promise<void> => {
          const doc = await desk(who).leads.findOne(ids[lead] ?? '').exec();
          if (doc) await change(doc);
        };
        for (const step of steps) {
          switch (step.kind) {
            case 'wait':
              await sleep(step.ms);
              break;
            case 'network':
              await (step.online ? desk(step.who).sync.resume() : desk(step.who).sync.pause());
              break;
            case 'delete':
              await locally(step.who, step.lead, async (doc) => void (await doc.remove()));
              break;
            case 'refused':
              // A lead out of the group it was created in: the server's rules refuse it.
              await locally(step.who, step.lead, async (doc) => {
                await doc.incrementalPatch({ groupIds: [], updatedAt: nextTime() });
                refusedBy[step.lead]?.add(step.who);
              });
              break;
            case 'edit': {
              const { who, lead, field } = step;
              const value = valueFor(who, field, step.n);
              if (who === 'S') {
                if (await serverEdit(ids[lead] ?? '', field, value)) record(lead, field, who, value);
                break;
              }
              await locally(who, lead, async (doc) => {
                await doc.incrementalPatch({ ...patchFor(doc.toMutableJSON() as Json, field, value), updatedAt: nextTime() });
                record(lead, field, who, value);
              });
              break;
            }
          }
        }

        // Back online, both; then every copy must settle on the server's.
        for (const d of all) await d.sync.resume();
        let server = new Map<string, Json>();
        let copies: Map<string, Json>[] = [];
        const settled = async (): Promise<boolean> => {
          server = await serverCopies(ids);
          copies = await Promise.all(all.map((d) => localCopies(d, ids)));
          return all.every((d) => d.sync.status().pending === 0) && copies.every((c) => ids.every((id) => agree(c.get(id), server.get(id))));
        };
        await until('convergence', settled, 20_000).catch(() => undefined);
        const problems: string[] = [];
        for (const [i, d] of all.entries()) {
          if (d.sync.status().pending !== 0) problems.push(`${d.name} still has ${d.sync.status().pending} pending change(s)`);
          for (const id of ids) if (!agree(copies[i]?.get(id), server.get(id))) problems.push(`${d.name}'s copy of ${id} is ${JSON.stringify(copies[i]?.get(id))}, the server's ${JSON.stringify(server.get(id))}`);
        }
        if (wrote.some((fields) => [...fields.values()].flat().some((w) => w.who === 'A') && [...fields.values()].flat().some((w) => w.who === 'B'))) bothEditedOneLead++;
        ids.forEach((id, lead) => {
          const doc = server.get(id);
          if (!doc) return void problems.push(`the server lost lead ${lead}`);
          // A refused change never sticks.
          if (!(doc.groupIds as string[]).includes(leadGroupId)) problems.push(`lead ${lead} ended out of its group: ${JSON.stringify(doc.groupIds)}`);
          if (doc._deleted === true) return;
          for (const [field, writes] of wrote[lead] ?? []) {
            const final = valueOf(doc, field);
            const writers = new Set(writes.map((w) => w.who));
            const only = [...writers][0];
            if (writers.size === 1 && only && !refusedBy[lead]?.has(only)) {
              // Changed by one side only: that side's last value, whatever happened around it.
              const last = writes[writes.length - 1]?.value;
              if (!sameJson(final, last)) problems.push(`lead ${lead} ${field}: only ${only} changed it, last to ${JSON.stringify(last)}, but it ended ${JSON.stringify(final)}`);
            } else if (![...writes.map((w) => w.value), valueOf(initial[lead] as unknown as Json, field)].some((v) => sameJson(v, final))) {
              problems.push(`lead ${lead} ${field} ended ${JSON.stringify(final)}, which nobody wrote`);
            }
          }
        });
        expect(problems, JSON.stringify(steps)).toEqual([]);
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    );
    // The bound the file comment promises, and scripts that did reach conflicts and refusals.
    expect(Date.now() - started).toBeLessThan(45_000);
    expect(bothEditedOneLead).toBeGreaterThan(RUNS / 4);
    const refused = await s.sql.query<{ n: string | number }>("SELECT count(*) AS n FROM refusals WHERE workspace_id = $1 AND code = 'RULE_VIOLATION'", [s.ours.workspaceId]);
    expect(Number(refused[0]?.n)).toBeGreaterThan(0);
  }, 120_000);
});
