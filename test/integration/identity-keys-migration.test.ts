/**
 * Upgrading to the identity keys (issue 26): a database and a desktop folder written by the
 * previous version, whose leads have no keys stored, get them, so every look-up by key and the
 * duplicates list find the leads written before; the desktop's layout change goes through the
 * opening's progress (not a silent rebuild at the first read), and the server's backfill in batches
 * that never rewrite a lead (its seq, so replication, is untouched), in the background after the
 * migrations (identity-backfill.test.ts has the server serving meanwhile).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRxDatabase } from 'rxdb';
import type { RxCollectionCreator, RxJsonSchema } from 'rxdb';
import { afterEach, describe, expect, it } from 'vitest';
import { localDatabaseName, migrationStrategies, openLocalDatabase } from '../../electron/backend/local-db.ts';
import type { MigrationProgress } from '../../electron/backend/storage/sqlite/migrate.ts';
import type { StoreLayout } from '../../electron/backend/storage/sqlite/store-columns.ts';
import { getRxStorageSqlite } from '../../electron/backend/storage/sqlite/storage.ts';
import { STORE_LAYOUT, TEXT_SEARCH } from '../../electron/backend/store-layout.ts';
import { keyKindOf, KEY_FIELDS } from '../../shared/intake/identity.ts';
import { newLead } from '../../shared/model/factories.ts';
import { COLLECTIONS, REPLICATED_COLLECTIONS } from '../../shared/model/index.ts';
import type { Lead } from '../../shared/model/index.ts';
import { otherHolder } from '../../shared/intake/find.ts';
import type { Store } from '../../shared/store.ts';
import { BACKFILL_NAME, IdentityBackfill, KEYS_PENDING, backfillStatus } from '../../sync-server/identity-backfill.ts';
import type { BatchDone } from '../../sync-server/identity-backfill.ts';
import { loadMigrations, migrate } from '../../sync-server/migrate.ts';
import { PgDatabase } from '../../sync-server/pg-database.ts';
import { BACKENDS, testDatabase } from './support/db.ts';

type Json = Record<string, unknown>;

const WS = 'e0000000-0000-4000-8000-000000000001';
const GROUP = 'e0000000-0000-4000-8000-0000000000b1';
const actor = { workspaceId: WS, memberId: 'e0000000-0000-4000-8000-0000000000aa', role: 'owner' as const };

/** Leads as the previous version stored them: the same people in several spellings. */
function oldLeads(count: number): Lead[] {
  const out: Lead[] = [];
  for (let i = 0; i < count; i++) {
    const at = new Date(Date.parse('2026-01-01T00:00:00Z') + i * 1000).toISOString();
    const id = `e0000000-0000-4000-8000-${String(1000 + i).padStart(12, '0')}`;
    // Every 10th person twice: once as https://www..., once as a country subdomain with a query.
    const person = i % 10 === 1 ? i - 1 : i;
    const url = i % 10 === 1 ? `https://de.linkedin.com/in/Person-${person}/?trk=x` : `https://www.linkedin.com/in/person-${person}`;
    const email = i % 10 === 1 ? `PERSON${person}@Example.COM ` : `person${person}@example.com`;
    out.push(newLead({ id, workspaceId: WS, now: at }, GROUP, { firstName: 'P', lastName: String(person), company: 'Acme', socialUrl: url, email }));
  }
  return out;
}

/** What a look-up by key and the duplicates list must find after the upgrade. */
async function expectKeysFound(store: Store, leads: readonly Lead[]): Promise<void> {
  const twin = leads[1] as Lead;
  const first = leads[0] as Lead;
  const byProfile = await store.query('leads', { where: { op: 'eq', field: KEY_FIELDS.profile, value: 'linkedin.com/in/person-0' } });
  expect(byProfile.docs.map((l) => l.id).sort()).toEqual([first.id, twin.id].sort());
  expect(await store.count('leads', { op: 'eq', field: KEY_FIELDS.email, value: 'person0@example.com' })).toBe(2);
  const pairs = Math.floor((leads.length + 8) / 10);
  let groups = 0;
  let cursor: string | null = null;
  do {
    const page = await store.duplicateGroups('profile', { limit: 7, cursor });
    groups += page.groups.length;
    cursor = page.nextCursor;
  } while (cursor);
  expect(groups).toBe(pairs);
  // The edit check (shared/intake/find.ts) finds the person by a third spelling.
  expect((await otherHolder(store, 'email', ' Person0@EXAMPLE.com', 'nobody'))?.id).toBe(first.id);
  expect((await otherHolder(store, 'socialUrl', 'http://linkedin.com/in/PERSON-0/', first.id))?.id).toBe(twin.id);
}

describe.each(BACKENDS)('a %s database written by the previous version', (backend) => {
  const dbs: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of dbs.splice(0)) await close();
  });

  it('gets its leads identity keys in batches, without changing any lead or its seq, once', async () => {
    const t = testDatabase(backend);
    const sql = await t.open();
    dbs.push(async () => {
      await sql.close();
      await t.cleanup();
    });
    const all = loadMigrations();
    await migrate(sql, all.filter((m) => m.name < '017'));
    const leads = oldLeads(95);
    // The previous version's commit: the documents, no key columns.
    let seq = 0;
    for (const l of leads) {
      await sql.query("INSERT INTO documents (collection, id, workspace_id, seq, deleted, doc) VALUES ('leads', $1, $2, $3, false, $4::jsonb)", [l.id, WS, ++seq, JSON.stringify(l)]);
    }
    const before = await sql.query<{ id: string; seq: string; doc: unknown }>("SELECT id, seq::text AS seq, doc FROM documents WHERE collection = 'leads' ORDER BY id");
    // The migrations list the workspace for the backfill and leave the leads as they were.
    const applied = await migrate(sql, all);
    expect(applied).toContain('017_identity_keys.sql');
    expect(applied).toContain('020_identity_key_backfill.sql');
    expect(await backfillStatus(sql)).toMatchObject({ state: 'running', workspaces: 1, workspacesLeft: 1, leadsTotal: 95, leadsDone: 0 });
    const pg = new PgDatabase(sql);
    // Until it is done, a look-up by key there is refused (retryable); other reads are not.
    await expect(pg.forWorkspace(WS).count('leads', { op: 'eq', field: KEY_FIELDS.email, value: 'person0@example.com' })).rejects.toMatchObject({ code: 'UNAVAILABLE', details: { reason: KEYS_PENDING, leadsDone: 0, leadsTotal: 95 } });
    await expect(pg.forWorkspace(WS).duplicateGroups('email', { limit: 5 })).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(await pg.forWorkspace(WS).count('leads')).toBe(95);

    // In batches of 10 along the seq, every lead's keys written once.
    const batches: BatchDone[] = [];
    await new IdentityBackfill(sql, { batch: 10, onBatch: (b) => batches.push(b) }).runToEnd();
    expect(batches.map((b) => b.visited)).toEqual([10, 10, 10, 10, 10, 10, 10, 10, 10, 5]);
    expect(batches.reduce((n, b) => n + b.updated, 0)).toBe(95);
    expect(await sql.query('SELECT 1 FROM schema_migrations WHERE name = $1', [BACKFILL_NAME])).toHaveLength(1);
    expect(await backfillStatus(sql)).toMatchObject({ state: 'done', workspacesLeft: 0, leadsTotal: 95, leadsDone: 95, keysWritten: 95 });
    const after = await sql.query<{ id: string; seq: string; doc: unknown }>("SELECT id, seq::text AS seq, doc FROM documents WHERE collection = 'leads' ORDER BY id");
    expect(after).toEqual(before);
    const missing = await sql.query<{ n: number }>("SELECT count(*)::int AS n FROM documents WHERE collection = 'leads' AND (profile_key IS NULL OR email_key IS NULL OR name_company_key IS NULL)");
    expect(missing[0]?.n).toBe(0);
    await expectKeysFound(pg.forWorkspace(WS), leads);

    // Run again (a second server starting): nothing to do.
    const again = new IdentityBackfill(sql);
    await again.runToEnd();
    expect(again.batches).toBe(0);
    // Listed again with every key already right: read, nothing written; with the keys wiped, all written back.
    const relist = "UPDATE identity_key_backfill SET after_seq = 0, visited = 0, updated = 0, finished_at = NULL";
    await sql.query(relist);
    const reread: BatchDone[] = [];
    await new IdentityBackfill(sql, { batch: 50, onBatch: (b) => reread.push(b) }).runToEnd();
    expect(reread.map((b) => [b.visited, b.updated])).toEqual([[50, 0], [45, 0]]);
    await sql.query(relist);
    await sql.query("UPDATE documents SET profile_key = NULL, email_key = NULL, name_company_key = NULL WHERE collection = 'leads'");
    await new IdentityBackfill(sql, { batch: 50 }).runToEnd();
    expect(await backfillStatus(sql)).toMatchObject({ keysWritten: 95 });
    await expectKeysFound(pg.forWorkspace(WS), leads);
  }, 90_000);
});

/** The previous version's desktop layout: no identity key columns, look-ups by email and profile
 * URL as written. */
function previousLayout(): Record<string, StoreLayout> {
  const leads = STORE_LAYOUT.leads as StoreLayout;
  return {
    ...(STORE_LAYOUT as Record<string, StoreLayout>),
    leads: {
      ...leads,
      columns: [...leads.columns.filter((c) => keyKindOf(c.field) === null), { field: 'email' }, { field: 'socialUrl' }],
      indexes: [...(leads.indexes ?? []).filter((i) => i.keys.every((k) => keyKindOf(k) === null)), { keys: ['email'], ordered: false, afterLoad: 'pull' }, { keys: ['socialUrl'], ordered: false, afterLoad: 'pull' }],
    },
  };
}

describe('a desktop folder written by the previous version', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('gets its leads identity keys while opening, with progress, and finds them by key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'identity-desktop-'));
    dirs.push(dir);
    const leads = oldLeads(2500);
    const old = await createRxDatabase({ name: localDatabaseName(WS), storage: getRxStorageSqlite({ directory: dir, textSearch: TEXT_SEARCH, storeLayout: previousLayout() }), multiInstance: false });
    const creators: Record<string, RxCollectionCreator> = {};
    for (const c of REPLICATED_COLLECTIONS) creators[c] = { schema: COLLECTIONS[c].schema as unknown as RxJsonSchema<Json>, migrationStrategies: migrationStrategies(COLLECTIONS[c].schema.version) };
    await old.addCollections(creators);
    await old.collections.leads?.bulkInsert(leads as unknown as Json[]);
    await old.close();

    const progress: MigrationProgress[] = [];
    const db = await openLocalDatabase({ dir, workspaceId: WS, actor, onMigration: (p) => progress.push({ ...p }) });
    try {
      const ofLeads = progress.filter((p) => p.instance.startsWith('leads-'));
      // Batch by batch (2,000 rows each), then the indexes, then done.
      expect(ofLeads.map((p) => [p.done, p.indexing === true])).toEqual([[0, false], [2000, false], [2500, false], [2500, true], [2500, false]]);
      expect(ofLeads.every((p) => p.total === 2500)).toBe(true);
      await expectKeysFound(db.store, leads);
    } finally {
      await db.close();
    }
    // Opened again: nothing to upgrade, nothing announced.
    const again: MigrationProgress[] = [];
    const reopened = await openLocalDatabase({ dir, workspaceId: WS, actor, onMigration: (p) => again.push(p) });
    try {
      expect(again).toEqual([]);
      await expectKeysFound(reopened.store, leads);
    } finally {
      await reopened.close();
    }
  });
});
