/**
 * Gives the leads written before migration 017 their identity key columns (profile_key, email_key,
 * name_company_key), computed by shared/intake/identity.ts, the one rule: PostgreSQL has no faithful
 * copy of it (percent-decoding, Unicode folding), so the keys are computed here, in JavaScript, as
 * PgStore.commit computes them for every write since.
 *
 * In batches along the primary key, each its own statement (so its own transaction): a writer waits
 * at most for one batch's row locks, never for the whole table. A row is updated only if its seq is
 * still the one read (a commit in between wrote its keys itself), and only if a key differs, so a
 * second run (a crash in the middle, two servers starting) does no harm. Done once: recorded in
 * schema_migrations as BACKFILL_NAME. The seq is not touched, so no replica pulls the rows again.
 */
import { storedKeys } from '../shared/intake/identity.ts';
import type { SqlDatabase } from './db.ts';

export const BACKFILL_NAME = '017_identity_keys.backfill';

/** Leads per batch: ~50-100 ms a batch at 2.5 KB a lead (PGlite and PostgreSQL, this machine). */
export const BACKFILL_BATCH = 2000;

type Row = { id: string; seq: string | number; s: string | null; e: string | null; n: string | null; c: string | null; pk: string | null; ek: string | null; nk: string | null };

export type BackfillProgress = { done: number; updated: number };

/** Runs the backfill unless it is recorded as done; returns the number of leads whose keys it wrote
 * (null when it had already run). */
export async function backfillIdentityKeys(db: SqlDatabase, opts: { batch?: number; onProgress?: (p: BackfillProgress) => void } = {}): Promise<number | null> {
  const recorded = await db.query('SELECT 1 FROM schema_migrations WHERE name = $1', [BACKFILL_NAME]);
  if (recorded.length > 0) return null;
  const batch = opts.batch ?? BACKFILL_BATCH;
  let after = '';
  let done = 0;
  let updated = 0;
  for (;;) {
    const rows = await db.query<Row>(
      `SELECT id, seq, doc->>'socialUrl' AS s, doc->>'email' AS e, doc->>'fullName' AS n, doc->>'company' AS c,
              profile_key AS pk, email_key AS ek, name_company_key AS nk
         FROM documents WHERE collection = 'leads' AND id > $1 ORDER BY id LIMIT $2`,
      [after, batch],
    );
    const last = rows[rows.length - 1];
    if (!last) break;
    after = last.id;
    done += rows.length;
    const ids: string[] = [];
    const seqs: string[] = [];
    const pks: (string | null)[] = [];
    const eks: (string | null)[] = [];
    const nks: (string | null)[] = [];
    for (const r of rows) {
      const k = storedKeys({ socialUrl: r.s ?? '', email: r.e ?? '', fullName: r.n ?? '', company: r.c ?? '' });
      if (k.profile === r.pk && k.email === r.ek && k.nameCompany === r.nk) continue;
      ids.push(r.id);
      seqs.push(String(r.seq));
      pks.push(k.profile);
      eks.push(k.email);
      nks.push(k.nameCompany);
    }
    if (ids.length > 0) {
      const res = await db.query<{ n: number }>(
        `WITH u AS (
           UPDATE documents d SET profile_key = u.pk, email_key = u.ek, name_company_key = u.nk
             FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[]) AS u(id, seq, pk, ek, nk)
            WHERE d.collection = 'leads' AND d.id = u.id AND d.seq = u.seq
           RETURNING 1)
         SELECT count(*)::int AS n FROM u`,
        [ids, seqs, pks, eks, nks],
      );
      updated += res[0]?.n ?? 0;
    }
    opts.onProgress?.({ done, updated });
  }
  await db.query('INSERT INTO schema_migrations (name) VALUES ($1) ON CONFLICT (name) DO NOTHING', [BACKFILL_NAME]);
  return updated;
}
