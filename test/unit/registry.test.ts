import { describe, expect, it } from 'vitest';
import { OPERATION_NAMES, operations } from '../../shared/ops/index.ts';
import type { OpDef } from '../../shared/ops/define.ts';

/** Every operation of the specification (named or "known by name and purpose only") and of
 * API-CONTRACT.md's additions. */
const SPEC = [
  'leadActivities.update', 'leadActivities.taskCreate', 'leadActivities.taskUpdate', 'leadActivities.taskSetStatus',
  'campaigns.leads.search', 'campaigns.leads.updateLeadStage', 'campaigns.leads.updateTag', 'campaigns.leads.setLeadFollowUp',
  'campaigns.leads.bulkEnrollInCampaign', 'campaigns.leads.bulkChangeSender',
  'campaigns.getBasic', 'campaigns.updateSchedule', 'campaigns.updateSenders', 'campaigns.updateSettings',
  'campaigns.editSequenceStep', 'campaigns.updateSequenceMessage',
  'sdrProfiles.setDailyLimits',
  'social.getAccountLimits', 'social.getPostEngagement', 'social.getPostLeads',
  // known by name and purpose only
  'campaigns.getActiveIds', 'campaigns.getMetrics', 'campaigns.renameColumn', 'campaigns.setSendersPaused',
  'campaigns.addSequenceStep', 'campaigns.removeSequenceStep', 'leadActivities.delete', 'leadActivities.taskDelete',
  'campaigns.start', 'campaigns.pause', 'campaigns.getMergeFields', 'campaigns.leads.sendMessage', 'campaigns.listSenders',
  'campaigns.getSequence', 'sdrProfiles.pauseOutreach', 'tags.getAll', 'pipelineStages.getAll',
  'apiKeys.create', 'apiKeys.list', 'apiKeys.revoke',
];

const CONTRACT_ADDITIONS = [
  'leadActivities.create', 'leadActivities.list', 'leadActivities.myTasks',
  'campaigns.leads.create', 'campaigns.leads.delete', 'campaigns.leads.setDoNotContact',
  'campaigns.create', 'campaigns.get', 'sdrProfiles.list', 'sdrProfiles.create', 'tags.create', 'members.list', 'members.create',
  // "Custom columns"
  'campaigns.addColumn', 'campaigns.removeColumn', 'campaigns.leads.update',
];

const GETS = [
  'campaigns.leads.search', 'campaigns.getBasic', 'social.getAccountLimits', 'campaigns.getActiveIds', 'campaigns.getMetrics',
  'campaigns.getSequence', 'campaigns.getMergeFields', 'campaigns.listSenders', 'campaigns.get', 'tags.getAll', 'pipelineStages.getAll',
  'leadActivities.list', 'leadActivities.myTasks', 'sdrProfiles.list', 'members.list', 'apiKeys.list',
  // Campaign results (shared/ops/campaigns.getStepMetrics.ts, campaigns.previewMessage.ts)
  'campaigns.getStepMetrics', 'campaigns.previewMessage',
];

describe('the operation registry', () => {
  const byName = operations as Record<string, OpDef>;

  it('registers every operation of the specification and of the API contract', () => {
    const missing = [...SPEC, ...CONTRACT_ADDITIONS].filter((n) => !OPERATION_NAMES.includes(n as never));
    expect(missing).toEqual([]);
  });

  it('serves reads as GET and everything else as POST', () => {
    for (const name of GETS) expect(byName[name]?.method, name).toBe('GET');
    for (const name of OPERATION_NAMES) {
      const op = byName[name] as OpDef;
      expect(op.name).toBe(name);
      if (op.method === 'GET') expect(op.mutates, `${name} is a GET and must not write`).toBe(false);
    }
  });

  it('lets every operation the specification marks with dryRun preview', () => {
    for (const name of ['campaigns.leads.bulkEnrollInCampaign', 'campaigns.updateSchedule', 'campaigns.updateSenders', 'campaigns.updateSettings',
      'sdrProfiles.setDailyLimits', 'campaigns.setSendersPaused']) {
      expect(byName[name]?.dryRun, name).toBe(true);
    }
  });

  it('names operations with dotted identifiers and documents each one', () => {
    for (const name of OPERATION_NAMES) {
      expect(name).toMatch(/^[a-z][A-Za-z]*(\.[a-z][A-Za-z]*)+$/);
      expect((byName[name] as OpDef).summary.length).toBeGreaterThan(10);
    }
  });
});
