/**
 * Company relay: when a person finished a campaign's sequence without answering, the next colleague
 * at the same company (from the campaign's lead group, never contacted, matching the seniorities)
 * is enrolled, up to maxPersonsPerCompany people of that company in the campaign.
 */
import { newEnrollment } from '../model/factories.ts';
import type { Campaign, Enrollment, Lead, Stage } from '../model/index.ts';
import { firstStep } from '../sequence.ts';
import type { Tx } from '../tx.ts';
import { and, norm } from './runner-core.ts';
import type { RunnerCore, TickState } from './runner-core.ts';
import { categoryOf, eventActivity } from './timeline.ts';

/** The colleague relay enrolls next, or null: `colleagues` are the group's leads at `lead`'s
 * company and `theirs` every enrollment they have (in any campaign). Highest ranking first, then
 * fit, then the oldest lead. */
export function nextColleague(c: Campaign, colleagues: readonly Lead[], theirs: readonly Enrollment[], stages: ReadonlyMap<string, Stage>): Lead | null {
  const r = c.settings.companyRelay;
  const inCampaign = new Set(theirs.filter((x) => x.campaignId === c.id).map((x) => x.leadId));
  if (inCampaign.size >= r.maxPersonsPerCompany) return null;
  const touched = new Set(theirs.filter((x) => x.status === 'IN_PROGRESS' || x.doneSteps.length > 0).map((x) => x.leadId));
  const seniorities = r.seniorities.map((s) => s.trim().toLowerCase()).filter(Boolean);
  const pool = colleagues
    .filter((l) => !inCampaign.has(l.id) && !touched.has(l.id) && !l.doNotContact && !l.blocklisted && categoryOf(l, stages) !== 'LOST')
    .filter((l) => seniorities.length === 0 || seniorities.includes(l.seniority.trim().toLowerCase()))
    .sort((a, b) => b.rankingScore - a.rankingScore || b.leadFitScore - a.leadFitScore || a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  return pool[0] ?? null;
}

/** Enrolls the next colleague of `lead`, whose enrollment `done` just finished, when relay is on. */
export async function relay(core: RunnerCore, st: TickState, tx: Tx, c: Campaign, done: Enrollment, lead: Lead): Promise<void> {
  const company = norm(lead.company);
  if (!c.settings.companyRelay.enabled || company === '') return;
  const { docs: sameName } = await tx.query('leads', { where: and({ op: 'has', field: 'groupIds', value: c.leadGroupId }, { op: 'contains', fields: ['company'], value: lead.company.trim() }) });
  const colleagues = sameName.filter((l) => norm(l.company) === company);
  const { docs: theirs } = await tx.query('enrollments', { where: { op: 'in', field: 'leadId', values: colleagues.map((l) => l.id) } });
  const next = nextColleague(c, colleagues, theirs, st.stages);
  if (!next) return;
  const keep = c.senders.find((x) => x.sdrProfileId === done.sdrProfileId && !x.paused);
  const enrollment = newEnrollment({ id: core.ids.uuid(), workspaceId: core.store.workspaceId, now: st.nowIso }, next.id, c.id, {
    sdrProfileId: keep ? keep.sdrProfileId : null, currentStepId: firstStep(c.steps)?.id ?? null, nextActionAt: st.nowIso,
  });
  await tx.put('enrollments', enrollment);
  await tx.put('activities', eventActivity(core.ids, next, core.userOf(st.senders.get(done.sdrProfileId ?? '')), st.nowIso, 'enrolled',
    `Enrolled in "${c.name}" by company relay: ${lead.fullName || 'a colleague'} at ${lead.company} did not answer.`, { campaignId: c.id, sdrProfileId: enrollment.sdrProfileId }));
  st.report.relayed++;
}
