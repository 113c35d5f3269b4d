/** Every refusal of the specification, over HTTP: the status and code of API-CONTRACT.md, a message,
 * and nothing stored. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Campaign, LeadGroup, Stage } from '../../shared/model/index.ts';
import { setSubscription } from '../../sync-server/admin.ts';
import { BACKENDS } from './support/db.ts';
import { seedFixtures } from './support/fixtures.ts';
import type { Fixtures } from './support/fixtures.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

type ErrorBody = { error: { code: string; message: string; details: Record<string, unknown> } };

describe.each(BACKENDS)('refusals over HTTP (%s)', (backend) => {
  let s: TestServer;
  let fx: Fixtures;
  let stages: Stage[];
  beforeAll(async () => {
    s = await startTestServer(backend);
    stages = (await s.db.forWorkspace(s.ours.workspaceId).query('stages')).docs;
  });
  afterAll(async () => {
    await s?.close();
  });
  const stageOf = (c: Stage['category']): string => stages.find((x) => x.category === c)?.id ?? '';

  /** Fresh fixtures per case, so cases never depend on each other. */
  async function fresh(): Promise<Fixtures> {
    fx = await seedFixtures(s.db, s.ours, s.clock.now().toISOString(), 'Acme');
    return fx;
  }

  async function expectRefused(key: string, name: string, input: Record<string, unknown>, status: number, errorCode: string): Promise<ErrorBody> {
    const before = await s.snapshot(s.ours.workspaceId);
    const res = await s.call<ErrorBody>(key, name, input);
    expect(res.status, `${name}: ${JSON.stringify(res.body)}`).toBe(status);
    expect(res.body.error.code).toBe(errorCode);
    expect(res.body.error.message.length).toBeGreaterThan(10);
    expect(await s.snapshot(s.ours.workspaceId)).toEqual(before);
    return res.body;
  }

  async function setCampaign(campaignId: string, change: (c: Campaign) => Campaign): Promise<void> {
    const store = s.db.forWorkspace(s.ours.workspaceId);
    const c = await store.get('campaigns', campaignId);
    if (!c) throw new Error('no campaign');
    await store.commit([{ collection: 'campaigns', id: c.id, before: c, after: change(c) }]);
  }

  async function setTask(taskId: string, status: 'completed' | 'cancelled'): Promise<void> {
    const store = s.db.forWorkspace(s.ours.workspaceId);
    const t = await store.get('activities', taskId);
    if (!t) throw new Error('no task');
    await store.commit([{ collection: 'activities', id: t.id, before: t, after: { ...t, metadata: { ...t.metadata, taskStatus: status } } }]);
  }

  it('notes: only the author edits or deletes (403 NOT_AUTHOR)', async () => {
    const f = await fresh();
    await expectRefused(s.ours.memberKey, 'leadActivities.update', { activityId: f.noteId, content: 'Rewritten' }, 403, 'NOT_AUTHOR');
    await expectRefused(s.ours.memberKey, 'leadActivities.delete', { activityId: f.noteId }, 403, 'NOT_AUTHOR');
    expect((await s.call(s.ours.ownerKey, 'leadActivities.update', { activityId: f.noteId, content: 'Mine to edit' })).status).toBe(200);
  });

  it('tasks: only the creator edits, cancels, reopens or deletes (403 NOT_CREATOR); anyone completes', async () => {
    const f = await fresh();
    await expectRefused(s.ours.memberKey, 'leadActivities.taskUpdate', { activityId: f.taskId, content: 'Hijacked' }, 403, 'NOT_CREATOR');
    await expectRefused(s.ours.memberKey, 'leadActivities.taskSetStatus', { activityId: f.taskId, status: 'cancelled' }, 403, 'NOT_CREATOR');
    await expectRefused(s.ours.memberKey, 'leadActivities.taskDelete', { activityId: f.taskId }, 403, 'NOT_CREATOR');
    const done = await s.call<{ metadata: { taskStatus: string } }>(s.ours.memberKey, 'leadActivities.taskSetStatus', { activityId: f.taskId, status: 'completed' });
    expect(done.status).toBe(200);
    expect(done.body.metadata.taskStatus).toBe('completed');
    await expectRefused(s.ours.memberKey, 'leadActivities.taskSetStatus', { activityId: f.taskId, status: 'open' }, 403, 'NOT_CREATOR');
  });

  it('tasks: state rules (409 TASK_NOT_OPEN / TASK_ALREADY_OPEN) and an empty update (422 NO_FIELDS_TO_UPDATE)', async () => {
    const f = await fresh();
    await expectRefused(s.ours.ownerKey, 'leadActivities.taskUpdate', { activityId: f.taskId }, 422, 'NO_FIELDS_TO_UPDATE');
    await expectRefused(s.ours.ownerKey, 'leadActivities.taskSetStatus', { activityId: f.taskId, status: 'open' }, 409, 'TASK_ALREADY_OPEN');
    await setTask(f.taskId, 'completed');
    await expectRefused(s.ours.ownerKey, 'leadActivities.taskUpdate', { activityId: f.taskId, content: 'Too late' }, 409, 'TASK_NOT_OPEN');
    await expectRefused(s.ours.ownerKey, 'leadActivities.taskSetStatus', { activityId: f.taskId, status: 'completed' }, 409, 'TASK_NOT_OPEN');
    await expectRefused(s.ours.ownerKey, 'leadActivities.taskSetStatus', { activityId: f.taskId, status: 'cancelled' }, 409, 'TASK_NOT_OPEN');
    expect((await s.call(s.ours.ownerKey, 'leadActivities.taskSetStatus', { activityId: f.taskId, status: 'open' })).status).toBe(200);
  });

  it('pipeline: lost needs a close reason, on hold a wake date (422)', async () => {
    const f = await fresh();
    await expectRefused(s.ours.memberKey, 'campaigns.leads.updateLeadStage', { leadId: f.leadId, pipelineStageId: stageOf('LOST') }, 422, 'CLOSE_REASON_REQUIRED');
    await expectRefused(s.ours.memberKey, 'campaigns.leads.updateLeadStage', { leadId: f.leadId, pipelineStageId: stageOf('ON_HOLD') }, 422, 'WAKE_DATE_REQUIRED');
    const ok = await s.call(s.ours.memberKey, 'campaigns.leads.updateLeadStage', { leadId: f.leadId, pipelineStageId: stageOf('LOST'), closeReason: 'NOT_ICP' });
    expect(ok.status).toBe(200);
  });

  it('sequence edits need a paused campaign (409 CAMPAIGN_NOT_PAUSED)', async () => {
    const f = await fresh();
    await setCampaign(f.campaignId, (c) => ({ ...c, running: true, startedAt: s.clock.now().toISOString() }));
    await expectRefused(s.ours.ownerKey, 'campaigns.editSequenceStep', { campaignId: f.campaignId, stepId: f.stepId, content: 'New text' }, 409, 'CAMPAIGN_NOT_PAUSED');
    await expectRefused(s.ours.ownerKey, 'campaigns.updateSequenceMessage', { campaignId: f.campaignId, stepId: f.stepId, text: 'New text' }, 409, 'CAMPAIGN_NOT_PAUSED');
    await expectRefused(s.ours.ownerKey, 'campaigns.addSequenceStep', { campaignId: f.campaignId, afterStepId: f.stepId, step: { type: 'WAIT', waitTimeSeconds: 3600 } }, 409, 'CAMPAIGN_NOT_PAUSED');
    await expectRefused(s.ours.ownerKey, 'campaigns.removeSequenceStep', { campaignId: f.campaignId, stepId: f.stepId }, 409, 'CAMPAIGN_NOT_PAUSED');
    // Allowed while running: the schedule.
    expect((await s.call(s.ours.ownerKey, 'campaigns.updateSchedule', { campaignId: f.campaignId, timeZone: 'Europe/Paris' })).status).toBe(200);
  });

  it('merge fields outside the campaign columns, and steps that fail validation (422)', async () => {
    const f = await fresh();
    await expectRefused(s.ours.ownerKey, 'campaigns.updateSequenceMessage', { campaignId: f.campaignId, stepId: f.stepId, text: 'Hi {{Favourite colour|friend}}' }, 422, 'UNKNOWN_MERGE_FIELD');
    // The campaign has a non-Premium sender, so an InMail step cannot be sent by every sender.
    await expectRefused(s.ours.ownerKey, 'campaigns.addSequenceStep', { campaignId: f.campaignId, afterStepId: f.stepId, step: { type: 'INMAIL', subject: 'Hi', content: 'Hello' } }, 422, 'STEP_INVALID');
    await expectRefused(s.ours.ownerKey, 'campaigns.addSequenceStep', { campaignId: f.campaignId, afterStepId: f.stepId, step: { type: 'CONNECTION_REQUEST', content: 'x'.repeat(400) } }, 422, 'STEP_INVALID');
  });

  it('a column used as a merge field cannot be renamed (422 COLUMN_IN_USE)', async () => {
    const f = await fresh();
    const group = (await s.db.forWorkspace(s.ours.workspaceId).get('leadGroups', f.leadGroupId)) as LeadGroup;
    const firstName = group.columns.find((c) => c.name === 'First name')?.id;
    await expectRefused(s.ours.ownerKey, 'campaigns.renameColumn', { campaignId: f.campaignId, variableTypeId: firstName, name: 'Given name' }, 422, 'COLUMN_IN_USE');
  });

  it('schedules keep a valid window and one enabled day (422 INVALID_SCHEDULE)', async () => {
    const f = await fresh();
    await expectRefused(s.ours.ownerKey, 'campaigns.updateSchedule', { campaignId: f.campaignId, days: { monday: { start: '17:00', end: '09:00' } } }, 422, 'INVALID_SCHEDULE');
    const off = Object.fromEntries(['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'].map((d) => [d, { enabled: false }]));
    await expectRefused(s.ours.ownerKey, 'campaigns.updateSchedule', { campaignId: f.campaignId, days: off }, 422, 'INVALID_SCHEDULE');
  });

  it('a campaign keeps its last sender (422 LAST_SENDER) and a branch its last step (422 LAST_STEP_OF_BRANCH)', async () => {
    const f = await fresh();
    await expectRefused(s.ours.ownerKey, 'campaigns.updateSenders', { campaignId: f.campaignId, remove: [f.senderId, f.otherSenderId] }, 422, 'LAST_SENDER');
    const c = (await s.db.forWorkspace(s.ours.workspaceId).get('campaigns', f.campaignId)) as Campaign;
    const yesStep = c.steps.find((x) => x.parentStepId === f.conditionStepId && x.branch === 'yes');
    await expectRefused(s.ours.ownerKey, 'campaigns.removeSequenceStep', { campaignId: f.campaignId, stepId: yesStep?.id }, 422, 'LAST_STEP_OF_BRANCH');
  });

  it('starting needs owner or admin, an active subscription and a ready campaign', async () => {
    const f = await fresh();
    await expectRefused(s.ours.memberKey, 'campaigns.start', { campaignId: f.campaignId }, 403, 'PERMISSION_DENIED');
    await setSubscription(s.db, { workspaceId: s.ours.workspaceId, status: 'canceled' }, s.deps);
    try {
      await expectRefused(s.ours.ownerKey, 'campaigns.start', { campaignId: f.campaignId }, 403, 'SUBSCRIPTION_INACTIVE');
    } finally {
      await setSubscription(s.db, { workspaceId: s.ours.workspaceId, status: 'active' }, s.deps);
    }
    const empty = await s.call<{ id: string }>(s.ours.ownerKey, 'campaigns.create', { name: 'Not ready' });
    await expectRefused(s.ours.ownerKey, 'campaigns.start', { campaignId: empty.body.id }, 422, 'READINESS_FAILED');
    const started = await s.call<{ running: boolean }>(s.ours.adminKey, 'campaigns.start', { campaignId: f.campaignId });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(started.body.running).toBe(true);
  });

  it('raising a daily limit needs the launch permission', async () => {
    const f = await fresh();
    await expectRefused(s.ours.memberKey, 'sdrProfiles.setDailyLimits', { sdrProfileId: f.senderId, limits: { messages: 140 } }, 403, 'PERMISSION_DENIED');
    const lowered = await s.call(s.ours.memberKey, 'sdrProfiles.setDailyLimits', { sdrProfileId: f.senderId, limits: { messages: 10 } });
    expect(lowered.status).toBe(200);
  });
});
