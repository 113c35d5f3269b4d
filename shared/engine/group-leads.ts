/**
 * A campaign's leads are its lead group's leads: a running campaign starts the leads of its group
 * that have no enrollment in it yet, in lead-picking order (newest first with preferNewLeads, else
 * oldest first), a few at a time so that what starts is what its senders can work soon. It skips
 * leads that are Do Not Contact, blocklisted, in a closed stage (WON, LOST) or running a sequence in
 * another campaign (those start later, once that sequence ends); with company relay, a lead whose
 * colleague is already in the campaign (however they came, bulk enrollment included) waits for the
 * relay. campaigns.getActivity lists the skipped leads with these reasons, from the same rules
 * (`skipReason`).
 *
 * Finding candidates costs one read of the group when the runner first sees the campaign ready;
 * after that only the leads and enrollments changed since the last look are read again.
 */
import { newEnrollment } from '../model/factories.ts';
import type { Campaign, Enrollment, Lead, Stage } from '../model/index.ts';
import { firstStep } from '../sequence.ts';
import { and, eq, errorText, norm, openNow } from './runner-core.ts';
import type { RunnerCore, TickState } from './runner-core.ts';
import { categoryOf, eventActivity } from './timeline.ts';

export type SkipReason = 'do_not_contact' | 'blocklisted' | 'closed_stage' | 'running_elsewhere' | 'company_relay';

export const SKIP_WORDS: Record<SkipReason, string> = {
  do_not_contact: 'Marked Do Not Contact.',
  blocklisted: 'Blocklisted.',
  closed_stage: 'In a closed stage (won or lost).',
  running_elsewhere: 'Running a sequence in another campaign; starts here when that one ends.',
  company_relay: 'A colleague at the same company is already in this campaign; company relay brings the next colleague when one finishes without answering.',
};

/** Why a lead of the group is not started (null: it may start). `enrollments` are all of the
 * lead's enrollments; `companiesInCampaign` the normalised companies already in the campaign. */
export function skipReason(
  c: Campaign,
  lead: Lead,
  stages: ReadonlyMap<string, Stage>,
  enrollments: readonly Enrollment[],
  companiesInCampaign: ReadonlySet<string> | null,
): SkipReason | null {
  if (lead.doNotContact) return 'do_not_contact';
  if (lead.blocklisted) return 'blocklisted';
  const cat = categoryOf(lead, stages);
  if (cat === 'WON' || cat === 'LOST') return 'closed_stage';
  if (enrollments.some((e) => e.status === 'IN_PROGRESS' && e.campaignId !== c.id)) return 'running_elsewhere';
  if (c.settings.companyRelay.enabled && companiesInCampaign && norm(lead.company) !== '' && companiesInCampaign.has(norm(lead.company))) return 'company_relay';
  return null;
}

/** Lead-picking order: newest lead first when the campaign prefers new leads, else oldest first. */
export function pickingOrder(c: Campaign): (a: Pick<Lead, 'id' | 'createdAt'>, b: Pick<Lead, 'id' | 'createdAt'>) => number {
  const dir = c.settings.preferNewLeads ? -1 : 1;
  return (a, b) => (a.createdAt !== b.createdAt ? (a.createdAt < b.createdAt ? -dir : dir) : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** How many not-yet-started enrollments a campaign keeps due at most: starting more than its
 * senders can work soon would only fix the order early. */
const START_BUFFER = 25;
/** The group is read whole again this often (documents replicated with older stamps than the
 * last look are found then); in between only changes are read. */
const FULL_LOOK_MS = 6 * 60 * 60_000;

type Pool = {
  candidates: Map<string, { id: string; createdAt: string }>;
  /** Leads known to have an enrollment in the campaign (their changes need no second look). */
  enrolled: Set<string>;
  lookedAt: string;
  fullAt: number;
};

export function createGroupStarter(core: RunnerCore) {
  const { store, ids, commitWithRetry, userOf } = core;
  const pools = new Map<string, Pool>();

  /** Leads of the group with no enrollment in the campaign (a full read of the group). */
  async function fullLook(c: Campaign, nowIso: string): Promise<Pool> {
    const { docs: mine } = await store.query('enrollments', { where: eq('campaignId', c.id) });
    const enrolled = new Set(mine.map((e) => e.leadId));
    // Only the group's leads not enrolled yet are read (and copied): in a campaign under way that is
    // a small part of its list.
    const { docs: leads } = await store.query('leads', {
      where: and({ op: 'has', field: 'groupIds', value: c.leadGroupId }, { op: 'not', cond: { op: 'in', field: 'id', values: [...enrolled] } }),
    });
    const candidates = new Map<string, { id: string; createdAt: string }>();
    for (const l of leads) candidates.set(l.id, { id: l.id, createdAt: l.createdAt });
    return { candidates, enrolled, lookedAt: nowIso, fullAt: Date.parse(nowIso) };
  }

  /** Adds the group's leads changed since the last look, and the leads whose other sequence ended. */
  async function incrementalLook(c: Campaign, pool: Pool, nowIso: string): Promise<void> {
    const since = pool.lookedAt;
    const [{ docs: leads }, { docs: ended }] = await Promise.all([
      store.query('leads', { where: and({ op: 'gte', field: 'updatedAt', value: since }, { op: 'has', field: 'groupIds', value: c.leadGroupId }) }),
      store.query('enrollments', { where: and({ op: 'gte', field: 'updatedAt', value: since }, { op: 'neq', field: 'status', value: 'IN_PROGRESS' }) }),
    ]);
    for (const l of leads) if (!pool.enrolled.has(l.id)) pool.candidates.set(l.id, { id: l.id, createdAt: l.createdAt });
    const others = ended.filter((e) => e.campaignId !== c.id && !pool.candidates.has(e.leadId) && !pool.enrolled.has(e.leadId));
    if (others.length > 0) {
      for (const l of await store.getMany('leads', [...new Set(others.map((e) => e.leadId))])) {
        if (l.groupIds.includes(c.leadGroupId)) pool.candidates.set(l.id, { id: l.id, createdAt: l.createdAt });
      }
    }
    pool.lookedAt = nowIso;
  }

  /** Companies (normalised) of the campaign's enrolled leads, for company relay. */
  async function companiesIn(c: Campaign, extraLeads: readonly Lead[]): Promise<Set<string>> {
    const companies = new Set<string>();
    const wanted = [...new Set(extraLeads.map((l) => l.company.trim()).filter(Boolean))];
    for (const company of wanted) {
      const { docs: sameName } = await store.query('leads', { where: and({ op: 'has', field: 'groupIds', value: c.leadGroupId }, { op: 'contains', fields: ['company'], value: company }) });
      const colleagues = sameName.filter((l) => norm(l.company) === norm(company)).map((l) => l.id);
      if (colleagues.length === 0) continue;
      const n = await store.count('enrollments', and(eq('campaignId', c.id), { op: 'in', field: 'leadId', values: colleagues }));
      if (n > 0) companies.add(norm(company));
    }
    return companies;
  }

  /**
   * Starts up to the campaign's buffer of its group's leads. `freshDue` counts, per campaign, the
   * enrollments already due that have not started their sequence. Returns the new enrollments.
   */
  async function startGroupLeads(st: TickState, freshDue: ReadonlyMap<string, number>): Promise<Enrollment[]> {
    const started: Enrollment[] = [];
    for (const id of [...pools.keys()]) if (!st.campaigns.has(id)) pools.delete(id);
    for (const c of st.campaigns.values()) {
      // Started only when they can act now: outside the window they would only be parked.
      if (!openNow(st, c)) continue;
      const room = START_BUFFER - (freshDue.get(c.id) ?? 0);
      if (room <= 0) continue;
      try {
        let pool = pools.get(c.id);
        if (!pool || st.nowMs - pool.fullAt >= FULL_LOOK_MS) {
          pool = await fullLook(c, st.nowIso);
          pools.set(c.id, pool);
        } else {
          await incrementalLook(c, pool, st.nowIso);
        }
        if (pool.candidates.size === 0) continue;
        started.push(...(await startSome(st, c, pool, room)));
      } catch (err) {
        st.report.errors.push({ message: `Could not start the lead group's leads of "${c.name}": ${errorText(err)}` });
      }
    }
    return started;
  }

  async function startSome(st: TickState, c: Campaign, pool: Pool, room: number): Promise<Enrollment[]> {
    const order = pickingOrder(c);
    const sorted = [...pool.candidates.values()].sort(order);
    const out: Enrollment[] = [];
    const first = firstStep(c.steps);
    // Candidates are judged in pages, so a group of skipped leads does not stall the ones behind.
    for (let i = 0; i < sorted.length && out.length < room; i += room * 4) {
      const page = sorted.slice(i, i + room * 4).map((x) => x.id);
      const leads = (await store.getMany('leads', page)).sort(order);
      const { docs: theirs } = await store.query('enrollments', { where: { op: 'in', field: 'leadId', values: page } });
      const byLead = new Map<string, Enrollment[]>();
      for (const e of theirs) byLead.set(e.leadId, [...(byLead.get(e.leadId) ?? []), e]);
      const companies = c.settings.companyRelay.enabled ? await companiesIn(c, leads) : null;
      const present = new Set(leads.map((l) => l.id));
      for (const id of page) if (!present.has(id)) pool.candidates.delete(id);
      for (const lead of leads) {
        if (out.length >= room) break;
        const es = byLead.get(lead.id) ?? [];
        // A lead merged into another is a tombstone: its survivor (which joined the group) is started instead.
        if (lead.mergedIntoId) {
          pool.candidates.delete(lead.id);
          continue;
        }
        if (!lead.groupIds.includes(c.leadGroupId) || es.some((e) => e.campaignId === c.id)) {
          pool.candidates.delete(lead.id);
          if (es.some((e) => e.campaignId === c.id)) pool.enrolled.add(lead.id);
          continue;
        }
        // Skipped leads leave the pool; a later change to them (or their other sequence ending)
        // brings them back through the incremental look.
        if (skipReason(c, lead, st.stages, es, companies) !== null) {
          pool.candidates.delete(lead.id);
          continue;
        }
        const e = newEnrollment({ id: ids.uuid(), workspaceId: store.workspaceId, now: st.nowIso }, lead.id, c.id, {
          sdrProfileId: null, currentStepId: first?.id ?? null, nextActionAt: st.nowIso,
        });
        await commitWithRetry(async (tx) => {
          const { docs: again } = await tx.query('enrollments', { where: and(eq('leadId', lead.id), eq('campaignId', c.id)), limit: 1 });
          if (again.length > 0) return;
          await tx.put('enrollments', e);
          await tx.put('activities', eventActivity(ids, lead, userOf(null), st.nowIso, 'enrolled', `Started in "${c.name}" from its lead group.`, { campaignId: c.id }));
        });
        pool.candidates.delete(lead.id);
        pool.enrolled.add(lead.id);
        if (companies && norm(lead.company) !== '') companies.add(norm(lead.company));
        out.push(e);
        st.report.startedFromGroup++;
      }
    }
    return out;
  }

  return { startGroupLeads };
}
