/**
 * Gives the leads written before migration 017 their identity key columns (profile_key, email_key,
 * name_company_key), computed by shared/intake/identity.ts, the one rule: PostgreSQL has no faithful
 * copy of it (percent-decoding, Unicode folding), so the keys are computed here, in JavaScript, as
 * PgStore.commit computes them for every write since.
 *
 * In the background while the server serves (an upgrade of a 1M-lead database took minutes before
 * the server answered anything). Migration 020 lists the workspaces to do (identity_key_backfill);
 * each batch is one transaction that:
 * - takes the next workspace's row FOR UPDATE SKIP LOCKED (the workspace a request waits for first,
 *   then the smallest, so most workspaces are done within seconds): another server process takes
 *   another workspace, never the same batch;
 * - takes that workspace's writer lock, as every writer does (PgStore.commit), so a writer waits at
 *   most for one batch and nothing changes under it (no deadlock with a writer's row locks);
 * - reads the next leads in seq order up to the workspace's upto_seq (rewritten leads moved past it
 *   and have their keys), writes the keys that differ, never the document or its seq (no replica
 *   pulls anything again), and moves the row's after_seq with them: a restart or a SIGKILL goes on
 *   from the last batch committed, and no batch is done twice.
 *
 * Until a workspace is done, a look-up by identity key there would miss the leads not visited yet
 * and make a second lead for a person already in the CRM; so those look-ups (and only those: every
 * other read and write, replication included, goes on) are refused with 503 UNAVAILABLE and
 * Retry-After (IdentityKeysGate), after the HTTP route has waited a few seconds for the workspace,
 * which the backfill then does next (`waitFor`). A fallback that computed keys of unvisited leads at
 * each look-up would be the backfill itself, once per look-up.
 */
import { DomainError, isDomainError } from '../shared/errors.ts';
import { storedKeys } from '../shared/intake/identity.ts';
import type { Cond } from '../shared/store.ts';
import { prepared } from './db.ts';
import type { SqlDatabase, SqlExecutor } from './db.ts';
import { WRITER_LOCK_CLASS } from './pg-store.ts';

/** Recorded in schema_migrations once every workspace is done (and by the version that ran the
 * backfill before serving: migration 020 then lists nothing). */
export const BACKFILL_NAME = '017_identity_keys.backfill';

/** Leads per batch: each batch rewrites its rows and their index entries (the text index too), ~0.3 s
 * on PostgreSQL under load here, which is the longest a writer of that workspace waits. */
export const BACKFILL_BATCH = 500;

/** `details.reason` of the refusal of a look-up by key in a workspace not done yet. */
export const KEYS_PENDING = 'identity_keys_backfill';

type Row = { id: string; seq: string | number; deleted: boolean; s: string | null; e: string | null; n: string | null; c: string | null; pk: string | null; ek: string | null; nk: string | null };
type Claim = { workspace_id: string; upto_seq: string; after_seq: string; total: string; visited: string };

/** One batch done: its workspace, the seq range it visited, how many leads it read and wrote. */
export type BatchDone = { workspaceId: string; fromSeq: number; toSeq: number; visited: number; updated: number; finished: boolean };

/** Progress of the whole backfill (every server process's share). */
export type BackfillStatus = {
  state: 'done' | 'running';
  workspaces: number;
  workspacesLeft: number;
  /** Leads to visit at the upgrade, and those visited (a finished workspace counts whole). */
  leadsTotal: number;
  leadsDone: number;
  keysWritten: number;
};

/**
 * One batch of the workspace to do next: null when no workspace is left, 'busy' when those left are
 * in another process's batch right now.
 */
export async function backfillBatch(db: SqlDatabase, batch = BACKFILL_BATCH): Promise<BatchDone | 'busy' | null> {
  return db.transaction(async (tx) => {
    const [claim] = await tx.query<Claim>(
      `SELECT workspace_id, upto_seq::text, after_seq::text, total::text, visited::text FROM identity_key_backfill
        WHERE finished_at IS NULL
        ORDER BY wanted_at NULLS LAST, total - visited, workspace_id
        LIMIT 1 FOR UPDATE SKIP LOCKED`,
    );
    if (!claim) {
      const [left] = await tx.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM identity_key_backfill WHERE finished_at IS NULL) AS any');
      return left?.any ? 'busy' : null;
    }
    const ws = claim.workspace_id;
    await tx.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))', [WRITER_LOCK_CLASS, ws]);
    const rows = await tx.query<Row>(
      `SELECT id, seq, deleted, doc->>'socialUrl' AS s, doc->>'email' AS e, doc->>'fullName' AS n, doc->>'company' AS c,
              profile_key AS pk, email_key AS ek, name_company_key AS nk
         FROM documents WHERE collection = 'leads' AND workspace_id = $1 AND seq > $2::bigint AND seq <= $3::bigint
        ORDER BY seq LIMIT $4::int`,
      [ws, claim.after_seq, claim.upto_seq, batch],
    );
    const ids: string[] = [];
    const pks: (string | null)[] = [];
    const eks: (string | null)[] = [];
    const nks: (string | null)[] = [];
    for (const r of rows) {
      // A deleted lead is in no look-up; were it revived, its write computes its keys.
      if (r.deleted) continue;
      const k = storedKeys({ socialUrl: r.s ?? '', email: r.e ?? '', fullName: r.n ?? '', company: r.c ?? '' });
      if (k.profile === r.pk && k.email === r.ek && k.nameCompany === r.nk) continue;
      ids.push(r.id);
      pks.push(k.profile);
      eks.push(k.email);
      nks.push(k.nameCompany);
    }
    let updated = 0;
    if (ids.length > 0) {
      const res = await tx.query<{ n: number }>(
        `WITH u AS (
           UPDATE documents d SET profile_key = u.pk, email_key = u.ek, name_company_key = u.nk
             FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(id, pk, ek, nk)
            WHERE d.collection = 'leads' AND d.id = u.id
           RETURNING 1)
         SELECT count(*)::int AS n FROM u`,
        [ids, pks, eks, nks],
      );
      updated = res[0]?.n ?? 0;
    }
    const last = rows[rows.length - 1];
    const finished = rows.length < batch;
    const toSeq = finished ? Number(claim.upto_seq) : Number(last?.seq ?? claim.upto_seq);
    await tx.query(
      `UPDATE identity_key_backfill
          SET after_seq = $2::bigint, visited = visited + $3::bigint, updated = updated + $4::bigint,
              started_at = coalesce(started_at, now()), finished_at = CASE WHEN $5::boolean THEN now() END
        WHERE workspace_id = $1`,
      [ws, String(toSeq), rows.length, updated, finished],
    );
    return { workspaceId: ws, fromSeq: Number(claim.after_seq), toSeq, visited: rows.length, updated, finished };
  });
}

const STATUS_SQL = `
SELECT count(*)::int AS workspaces,
       count(*) FILTER (WHERE finished_at IS NULL)::int AS left,
       coalesce(sum(total), 0)::float8 AS total,
       coalesce(sum(CASE WHEN finished_at IS NULL THEN least(visited, total) ELSE total END), 0)::float8 AS done,
       coalesce(sum(updated), 0)::float8 AS written
  FROM identity_key_backfill`;

export async function backfillStatus(sql: SqlExecutor): Promise<BackfillStatus> {
  const [r] = await sql.query<{ workspaces: number; left: number; total: number; done: number; written: number }>(STATUS_SQL);
  const left = r?.left ?? 0;
  return { state: left > 0 ? 'running' : 'done', workspaces: r?.workspaces ?? 0, workspacesLeft: left, leadsTotal: r?.total ?? 0, leadsDone: r?.done ?? 0, keysWritten: r?.written ?? 0 };
}

/** Whether a condition reads an identity key (shared/intake/identity.ts, KEY_FIELDS: `key:...`). */
export function readsKeys(cond: Cond | undefined): boolean {
  if (!cond) return false;
  switch (cond.op) {
    case 'and':
    case 'or':
      return cond.conds.some(readsKeys);
    case 'not':
      return readsKeys(cond.cond);
    case 'contains':
      return cond.fields.some((f) => f.startsWith('key:'));
    default:
      return cond.field.startsWith('key:');
  }
}

/** The workspace's leads may lack keys: a look-up by key would miss them. Retryable (503). */
export function keysPending(workspaceId: string, done: number, total: number): DomainError {
  const left = Math.max(0, total - done);
  // ~1,000 leads/s is the backfill's pace on a busy 2-core machine (README, "Upgrading").
  const retryAfterSeconds = Math.min(60, Math.max(2, Math.ceil(left / 1_000)));
  return new DomainError(
    'UNAVAILABLE',
    `This workspace's leads are getting their identity keys after the server's upgrade (${done.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} done), and finding a person by profile URL, email or name needs them; nothing was changed. Retry in about ${retryAfterSeconds} s.`,
    { reason: KEYS_PENDING, workspaceId, leadsDone: done, leadsTotal: total, retryAfterSeconds },
  );
}

export const isKeysPending = (e: unknown): e is DomainError => isDomainError(e) && e.code === 'UNAVAILABLE' && e.details.reason === KEYS_PENDING;

/**
 * Which workspaces' keys every look-up can trust: all of them once no workspace is left (then a
 * look-up costs nothing), else those found finished (done is never undone). One per open database.
 */
export class IdentityKeysGate {
  private allDone = false;
  private readonly done = new Set<string>();

  /** Refuses (keysPending) a query whose condition reads a key, in a workspace not finished. */
  async checkCond(sql: SqlExecutor, workspaceId: string, cond: Cond | undefined): Promise<void> {
    if (this.allDone || !readsKeys(cond)) return;
    await this.check(sql, workspaceId);
  }

  /** Refuses (keysPending) a look-up by key in a workspace whose backfill is not finished. */
  async check(sql: SqlExecutor, workspaceId: string): Promise<void> {
    if (this.allDone || this.done.has(workspaceId)) return;
    const [r] = await sql.query<{ any: boolean; total: string | null; visited: string | null }>(
      prepared(`SELECT EXISTS (SELECT 1 FROM identity_key_backfill WHERE finished_at IS NULL) AS any, b.total::text, b.visited::text
                  FROM (SELECT 1) one LEFT JOIN identity_key_backfill b ON b.workspace_id = $1 AND b.finished_at IS NULL`),
      [workspaceId],
    );
    if (!r?.any) {
      this.allDone = true;
      return;
    }
    if (r.total === null) {
      this.done.add(workspaceId);
      return;
    }
    throw keysPending(workspaceId, Math.min(Number(r.visited), Number(r.total)), Number(r.total));
  }

  /** Whether every workspace is known done (no look-up is refused any more). */
  get finished(): boolean {
    return this.allDone;
  }

  /** Asks the backfill to do `workspaceId` next and waits up to `ms` for it; true when it is done. */
  async waitFor(sql: SqlDatabase, workspaceId: string, ms: number): Promise<boolean> {
    const until = Date.now() + ms;
    await sql.query('UPDATE identity_key_backfill SET wanted_at = now() WHERE workspace_id = $1 AND wanted_at IS NULL AND finished_at IS NULL', [workspaceId]);
    for (;;) {
      const [r] = await sql.query<{ open: boolean }>('SELECT EXISTS (SELECT 1 FROM identity_key_backfill WHERE workspace_id = $1 AND finished_at IS NULL) AS open', [workspaceId]);
      if (!r?.open) {
        this.done.add(workspaceId);
        return true;
      }
      if (Date.now() >= until) return false;
      await sleep(Math.min(100, Math.max(0, until - Date.now())));
    }
  }
}

const gates = new WeakMap<object, IdentityKeysGate>();

/** The gate of an open database, shared by every PgDatabase over it (the server's, the runner's). */
export function identityKeysGate(sql: object): IdentityKeysGate {
  let g = gates.get(sql);
  if (!g) {
    g = new IdentityKeysGate();
    gates.set(sql, g);
  }
  return g;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export type BackfillLog = {
  info(fields: Record<string, unknown>, msg: string): void;
  warn(fields: Record<string, unknown>, msg: string): void;
};

export type BackfillOptions = {
  /** Leads per batch (default BACKFILL_BATCH; IDENTITY_BACKFILL_BATCH). */
  batch?: number;
  /** Pause after each batch, leaving the database to the requests (default 0; IDENTITY_BACKFILL_PAUSE_MS). */
  pauseMs?: number;
  /** How long to wait before asking again when another process holds every workspace left (default 1 s). */
  idleMs?: number;
  /** A progress line at most this often (default 10 s). */
  logEveryMs?: number;
  log?: BackfillLog;
  /** Each batch this process did (tests). */
  onBatch?: (b: BatchDone) => void;
};

/**
 * The backfill's loop in one server process: batch after batch until no workspace is left, with its
 * progress in the log; stops between batches on `stop()`. Failures (the database restarting) are
 * logged and the loop tries again after a few seconds: what a batch did is committed or not at all.
 */
export class IdentityBackfill {
  private stopping = false;
  private running: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  /** Batches this process did. */
  batches = 0;

  constructor(
    private readonly db: SqlDatabase,
    private readonly opts: BackfillOptions = {},
  ) {}

  /** Starts the loop unless there is nothing to do; resolves once it knows which. */
  async start(): Promise<void> {
    const status = await backfillStatus(this.db);
    if (status.state === 'done') return;
    const log = this.opts.log;
    log?.info(
      { workspacesLeft: status.workspacesLeft, leadsDone: status.leadsDone, leadsTotal: status.leadsTotal },
      status.leadsDone > 0
        ? `identity keys backfill: resuming at ${status.leadsDone} of ${status.leadsTotal} leads (${status.workspacesLeft} of ${status.workspaces} workspaces left); serving meanwhile`
        : `identity keys backfill: ${status.leadsTotal} leads in ${status.workspaces} workspaces; serving meanwhile (look-ups by identity in a workspace not done yet answer 503 with Retry-After)`,
    );
    this.running = this.loop(status.leadsDone);
  }

  /** Runs until every workspace is done (the loop's work without the background: tests, scripts). */
  async runToEnd(): Promise<void> {
    this.running = this.loop(0);
    await this.running;
  }

  private async loop(doneAtStart: number): Promise<void> {
    const { batch = BACKFILL_BATCH, pauseMs = 0, idleMs = 1_000, logEveryMs = 10_000, log } = this.opts;
    const started = Date.now();
    let lastLog = started;
    let failures = 0;
    while (!this.stopping) {
      let b: BatchDone | 'busy' | null;
      try {
        b = await backfillBatch(this.db, batch);
        failures = 0;
      } catch (e) {
        if (this.stopping) break;
        failures++;
        log?.warn({ err: e, failures }, 'identity keys backfill: a batch failed (nothing of it was kept); trying again');
        await this.pause(Math.min(30_000, 1_000 * 2 ** Math.min(failures, 5)));
        continue;
      }
      if (b === null) {
        await this.db.query('INSERT INTO schema_migrations (name) VALUES ($1) ON CONFLICT (name) DO NOTHING', [BACKFILL_NAME]);
        const s = await backfillStatus(this.db);
        log?.info({ leadsTotal: s.leadsTotal, keysWritten: s.keysWritten, seconds: Math.round((Date.now() - started) / 1000) }, `identity keys backfill: done, ${s.leadsTotal} leads (${s.leadsTotal - doneAtStart} by this run), keys written for ${s.keysWritten}`);
        break;
      }
      if (b === 'busy') {
        await this.pause(idleMs);
        continue;
      }
      this.batches++;
      this.opts.onBatch?.(b);
      if (b.finished || Date.now() - lastLog >= logEveryMs) {
        lastLog = Date.now();
        const s = await backfillStatus(this.db).catch(() => null);
        if (s) {
          const pct = s.leadsTotal > 0 ? Math.floor((100 * s.leadsDone) / s.leadsTotal) : 100;
          log?.info({ leadsDone: s.leadsDone, leadsTotal: s.leadsTotal, workspacesLeft: s.workspacesLeft, ...(b.finished ? { finishedWorkspace: b.workspaceId } : {}) }, `identity keys backfill: ${s.leadsDone} of ${s.leadsTotal} leads (${pct}%), ${s.workspacesLeft} of ${s.workspaces} workspaces left`);
        }
      }
      if (pauseMs > 0) await this.pause(pauseMs);
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.wake = null;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(t);
        this.wake = null;
        resolve();
      };
    });
  }

  /** Stops after the batch in progress (its transaction commits or rolls back whole). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.running?.catch(() => undefined);
  }
}
