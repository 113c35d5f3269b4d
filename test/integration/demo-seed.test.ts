/** The demo workspace: realistic, deterministic, and valid for the schemas and the rules. */
import { describe, expect, it } from 'vitest';
import { DEMO_CUSTOM_COLUMNS, demoSeedWrites } from '../../shared/demo-seed.ts';
import { MemoryDatabase } from '../../shared/memory-store.ts';
import type { Activity, Campaign, Enrollment, Lead, LeadGroup, Sender, Stage, Tag } from '../../shared/model/index.ts';
import { schemaProblem } from '../../shared/model/validate.ts';
import { parseMergeFields } from '../../shared/merge-fields.ts';
import { validateWrites } from '../../shared/rules/index.ts';
import { Tx } from '../../shared/tx.ts';
import { workspaceCreation } from '../../shared/workspace-setup.ts';
import { seededRandom, sequentialIds } from '../support/harness.ts';

const NOW = '2026-11-16T10:00:00.000Z';

function build(seed = 5) {
  const ids = sequentialIds(3);
  const ws = workspaceCreation(ids, NOW, { name: 'Demo', owner: { name: 'Olive Owner', email: 'olive@demo.test' }, subscriptionStatus: 'trialing' });
  const stages = ws.writes.flatMap((w) => (w.collection === 'stages' && w.after ? [w.after as Stage] : []));
  const seed1 = demoSeedWrites({ workspaceId: ws.workspaceId, ownerId: ws.ownerId, leadGroupId: ws.leadGroupId, ids, now: NOW, random: seededRandom(seed), stages });
  return { ws, stages, ...seed1 };
}

const docs = <T>(writes: ReturnType<typeof build>['writes'], c: string): T[] => writes.flatMap((w) => (w.collection === c && w.after ? [w.after as T] : []));

describe('demoSeedWrites', () => {
  it('is deterministic for the same ids and random source, and different for another seed', () => {
    expect(JSON.stringify(build(5).writes)).toBe(JSON.stringify(build(5).writes));
    expect(JSON.stringify(build(6).writes)).not.toBe(JSON.stringify(build(5).writes));
  });

  it('creates only new documents, every one valid for its schema', () => {
    const { writes, ws } = build();
    expect(writes.every((w) => w.before === null && w.after !== null)).toBe(true);
    expect(new Set(writes.map((w) => `${w.collection}/${w.id}`)).size).toBe(writes.length);
    for (const w of writes) {
      expect(schemaProblem(w.collection, w.after), `${w.collection}/${w.id}`).toBeNull();
      expect((w.after as { workspaceId: string }).workspaceId).toBe(ws.workspaceId);
    }
  });

  it('passes every rule when committed with the workspace, like seed-demo does', async () => {
    const { ws, writes } = build();
    const db = new MemoryDatabase();
    const store = db.forWorkspace(ws.workspaceId);
    await store.commit(ws.writes);
    const tx = new Tx(store);
    for (const w of writes) if (w.after) await tx.put(w.collection, w.after as never);
    const staged = tx.writes();
    expect(staged).toHaveLength(writes.length);
    await validateWrites(staged, { actor: { workspaceId: ws.workspaceId, memberId: ws.ownerId, role: 'owner', isSystem: true }, read: tx, now: new Date(NOW) });
    // The owner themself could have written the notes and tasks.
    const notes = staged.filter((w) => w.collection === 'activities');
    await validateWrites(notes, { actor: { workspaceId: ws.workspaceId, memberId: ws.ownerId, role: 'owner' }, read: tx, now: new Date(NOW) });
    await store.commit(staged);
    expect(await store.count('leads')).toBe(500);
  });

  it('builds a realistic CRM: tags, columns, 500 people at companies, stages, follow-ups, variables', () => {
    const { writes, counts, ws, stages } = build();
    const tags = docs<Tag>(writes, 'tags');
    expect(tags.map((t) => t.name).sort()).toEqual(['Cold', 'Hot', 'Partner', 'Warm']);
    const [group] = docs<LeadGroup>(writes, 'leadGroups');
    expect(group?.columns.map((c) => c.name)).toEqual(expect.arrayContaining([...DEMO_CUSTOM_COLUMNS, 'First name', 'Company']));

    const leads = docs<Lead>(writes, 'leads');
    expect(leads).toHaveLength(500);
    expect(counts.leads).toBe(500);
    expect(leads.every((l) => l.groupIds.includes(ws.leadGroupId) && l.leadGroupId === group?.id)).toBe(true);
    expect(leads.every((l) => /^https:\/\/social\.example\/in\/[a-z0-9-]+$/.test(l.socialUrl))).toBe(true);
    expect(new Set(leads.map((l) => l.socialUrl)).size).toBe(500);
    expect(leads.every((l) => l.firstName && l.lastName && l.company && l.jobTitle && l.location && l.seniority)).toBe(true);
    const emails = leads.filter((l) => l.email).map((l) => l.email);
    expect(emails.length).toBeGreaterThan(350);
    expect(emails.every((e) => /^[a-z]+\.[a-z]+@[a-z]+\.example$/.test(e))).toBe(true);

    const perCompany = new Map<string, number>();
    for (const l of leads) perCompany.set(l.company, (perCompany.get(l.company) ?? 0) + 1);
    expect(counts.companies).toBe(perCompany.size);
    expect(Math.max(...perCompany.values())).toBeGreaterThanOrEqual(4);
    expect(new Set(leads.map((l) => l.seniority)).size).toBeGreaterThanOrEqual(5);
    expect(new Set(leads.map((l) => l.leadFitScore)).size).toBeGreaterThan(20);

    const byCategory = new Map(stages.map((s) => [s.id, s.category]));
    const staged = leads.filter((l) => l.pipelineStageId !== null);
    expect(staged.length).toBeGreaterThan(100);
    expect(new Set(staged.map((l) => byCategory.get(l.pipelineStageId ?? '')))).toEqual(new Set(['CONTACTED', 'ENGAGED', 'MEETING_BOOKED', 'ON_HOLD', 'WON', 'LOST']));
    expect(leads.filter((l) => l.tagId !== null).length).toBeGreaterThan(100);
    expect(leads.filter((l) => l.followUpAt !== null).length).toBeGreaterThan(40);
    const painCol = group?.columns.find((c) => c.name === 'Pain point')?.id ?? '';
    expect(leads.filter((l) => l.variables[painCol]).length).toBeGreaterThan(300);
  });

  it('adds three sandbox senders and two campaigns with sequences, senders and ~150 enrollments', () => {
    const { writes, counts, ws } = build();
    const senders = docs<Sender>(writes, 'senders');
    expect(senders).toHaveLength(3);
    expect(senders.every((s) => s.channel === 'sandbox' && s.ownerMemberId === ws.ownerId)).toBe(true);
    expect(new Set(senders.map((s) => s.timeZone)).size).toBe(3);
    expect(senders.filter((s) => s.premium)).toHaveLength(1);

    const campaigns = docs<Campaign>(writes, 'campaigns');
    expect(campaigns).toHaveLength(2);
    expect(campaigns.every((c) => c.senders.length > 0 && !c.running)).toBe(true);
    const rich = campaigns.find((c) => c.steps.some((s) => s.type === 'CONDITION'));
    const condition = rich?.steps.find((s) => s.type === 'CONDITION');
    expect(condition?.sendCondition).toBe('CONNECTED');
    expect(rich?.steps.some((s) => s.type === 'CONNECTION_REQUEST')).toBe(true);
    expect(rich?.steps.some((s) => s.type === 'WAIT')).toBe(true);
    expect(rich?.steps.filter((s) => s.parentStepId === condition?.id && s.branch === 'yes').length).toBeGreaterThan(0);
    expect(rich?.steps.filter((s) => s.parentStepId === condition?.id && s.branch === 'no').length).toBeGreaterThan(0);
    expect(rich?.steps.some((s) => s.variants.length === 2)).toBe(true);
    for (const c of campaigns) {
      for (const s of c.steps) expect(() => parseMergeFields(s.content)).not.toThrow();
    }

    const enrollments = docs<Enrollment>(writes, 'enrollments');
    expect(enrollments.length).toBe(counts.enrollments);
    expect(enrollments.length).toBeGreaterThanOrEqual(140);
    const running = enrollments.filter((e) => e.status === 'IN_PROGRESS').map((e) => e.leadId);
    expect(new Set(running).size).toBe(running.length);
    for (const e of enrollments) {
      const c = campaigns.find((x) => x.id === e.campaignId);
      expect(c?.senders.some((s) => s.sdrProfileId === e.sdrProfileId)).toBe(true);
    }
    expect(enrollments.some((e) => e.doneSteps.length > 0)).toBe(true);
  });

  it('adds notes and tasks written by the owner', () => {
    const { writes, counts, ws } = build();
    const acts = docs<Activity>(writes, 'activities');
    expect(acts.filter((a) => a.type === 'NOTE')).toHaveLength(counts.notes);
    expect(acts.filter((a) => a.type === 'TASK')).toHaveLength(counts.tasks);
    expect(counts.notes).toBeGreaterThan(10);
    expect(counts.tasks).toBeGreaterThan(10);
    expect(acts.every((a) => a.userId === ws.ownerId)).toBe(true);
    expect(acts.filter((a) => a.type === 'TASK').every((a) => a.metadata.taskStatus === 'open' && a.dueAt !== null)).toBe(true);
  });

  it('works without stages (every lead unstaged) and for a smaller count', () => {
    const ids = sequentialIds(4);
    const out = demoSeedWrites({ workspaceId: 'w', ownerId: 'o', leadGroupId: 'g', ids, now: NOW, random: seededRandom(1), leadCount: 30 });
    const leads = docs<Lead>(out.writes, 'leads');
    expect(leads).toHaveLength(30);
    expect(leads.every((l) => l.pipelineStageId === null)).toBe(true);
  });
});
