/**
 * The webhook outbox, written by PgStore.commit in the transaction of every commit, whatever wrote
 * it (an operation, the runner, a desktop's replication push): the events the writes raise
 * (shared/webhooks/events.ts) and one delivery per endpoint that chose each, in one statement after
 * the commit's own. An event therefore exists exactly when its change committed: none is lost, and
 * none is raised for a change that rolled back.
 *
 * A commit in a workspace without endpoints (nearly all of them) costs a map lookup: each process
 * remembers which workspaces have endpoints, and forgets a workspace when any process creates or
 * deletes one there (NOTIFY on WEBHOOKS_CHANNEL). While this process does not hear that channel (no
 * webhook service started, or its LISTEN connection down) it asks the database instead of trusting
 * what it remembers.
 */
import type { AnyWrite, StoreReader } from '../../shared/store.ts';
import { timeOrderedIds } from '../../shared/ids.ts';
import { eventBody, eventsOf, mayRaiseEvents, newEventId, referencesOf } from '../../shared/webhooks/events.ts';
import type { EventReferences } from '../../shared/webhooks/events.ts';
import { prepared } from '../db.ts';
import type { SqlExecutor } from '../db.ts';

/** NOTIFY channel: `deliver` (deliveries are due: wake the workers) and `endpoints:<workspaceId>`
 * (endpoints were created or deleted there). */
export const WEBHOOKS_CHANNEL = 'crm_webhooks';
export const DELIVER = 'deliver';
export const endpointsChanged = (workspaceId: string): string => `endpoints:${workspaceId}`;

const NO_REFERENCES: EventReferences = { leads: new Map(), stages: new Map() };

/** Events and their deliveries to every enabled endpoint of the workspace that chose the type, in
 * event order (the deliveries' seq is an endpoint's sending order); an event no endpoint wants is
 * not stored. NOTIFY wakes the workers when the transaction commits. */
const INSERT_SQL = `
WITH ev AS (
  SELECT * FROM jsonb_to_recordset($2::jsonb) AS e(ord int, id text, type text, body text)
), targets AS (
  SELECT ev.ord, ev.id AS event_id, ep.id AS endpoint_id
    FROM ev JOIN webhook_endpoints ep ON ep.workspace_id = $1::text AND ep.enabled AND ev.type = ANY (ep.events)
), events AS (
  INSERT INTO webhook_events (id, workspace_id, type, body)
  SELECT ev.id, $1::text, ev.type, ev.body FROM ev WHERE ev.ord IN (SELECT ord FROM targets)
  RETURNING id
), deliveries AS (
  INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_id)
  SELECT gen_random_uuid()::text, $1::text, t.endpoint_id, t.event_id FROM targets t ORDER BY t.ord, t.endpoint_id
  RETURNING id
)
SELECT (SELECT count(*) FROM deliveries)::int AS n,
       CASE WHEN EXISTS (SELECT 1 FROM deliveries) THEN pg_notify($3::text, '${DELIVER}') END AS notified`;

export class Outbox {
  /** Workspace -> whether it has endpoints, as last read. */
  private readonly known = new Map<string, boolean>();
  /** Bumped on every invalidation, so a read that raced one is not remembered. */
  private generation = 0;
  private listening = false;

  /** Whether this process hears WEBHOOKS_CHANNEL (so what it remembers is kept current). */
  setListening(on: boolean): void {
    this.listening = on;
    this.known.clear();
    this.generation++;
  }

  /** Endpoints were created or deleted in the workspace (here or in another process). */
  invalidate(workspaceId: string): void {
    this.known.delete(workspaceId);
    this.generation++;
  }

  /** An endpoint is being created in this transaction: this process writes events for the
   * workspace from now on (if the creation rolls back, a commit merely asks for no endpoint). */
  expect(workspaceId: string): void {
    this.known.set(workspaceId, true);
    this.generation++;
  }

  /** The commit's events and deliveries, in its transaction `tx`; `read` sees the commit's writes. */
  async afterCommit(read: StoreReader, tx: SqlExecutor, workspaceId: string, writes: readonly AnyWrite[]): Promise<void> {
    if (this.listening && this.known.get(workspaceId) === false) return;
    // The events without their references first: most commits raise none.
    if (!mayRaiseEvents(writes) || eventsOf(writes, NO_REFERENCES).length === 0) return;
    if (!(await this.hasEndpoints(tx, workspaceId))) return;
    const refs = referencesOf(writes);
    const [leads, stages] = await Promise.all([read.getMany('leads', refs.leadIds), read.getMany('stages', refs.stageIds)]);
    const events = eventsOf(writes, { leads: new Map(leads.map((l) => [l.id, l])), stages: new Map(stages.map((s) => [s.id, s])) });
    const rows = events.map((e, ord) => ({ ord, id: newEventId(timeOrderedIds), type: e.type, body: eventBody(e) }));
    await tx.query(prepared(INSERT_SQL), [workspaceId, JSON.stringify(rows), WEBHOOKS_CHANNEL]);
  }

  private async hasEndpoints(tx: SqlExecutor, workspaceId: string): Promise<boolean> {
    const remembered = this.listening ? this.known.get(workspaceId) : undefined;
    if (remembered !== undefined) return remembered;
    const generation = this.generation;
    const [row] = await tx.query<{ has: boolean }>(prepared('SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE workspace_id = $1) AS has'), [workspaceId]);
    const has = row?.has === true;
    if (this.listening && generation === this.generation) this.known.set(workspaceId, has);
    return has;
  }
}

/** One outbox per open database (like the document cache), so every PgDatabase over it (the
 * server's, the runner's) shares what it remembers. */
const outboxes = new WeakMap<object, Outbox>();

export function outboxFor(sql: object): Outbox {
  let o = outboxes.get(sql);
  if (!o) {
    o = new Outbox();
    outboxes.set(sql, o);
  }
  return o;
}
