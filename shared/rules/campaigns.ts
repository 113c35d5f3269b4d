/**
 * Campaign rules. They judge a document change on its own (before, after, actor, reads), so they
 * protect operations and replication pushes alike:
 * - the sequence changes only while the campaign is paused (pausing and editing in one write is fine);
 * - the schedule stays valid, the campaign keeps a sender, its senders exist;
 * - the sequence keeps its shape (conditions last on their path, both paths non-empty);
 * - a changed step is valid, names only merge fields of the lead group, and every sender can perform it;
 * - starting needs owner/admin, an active subscription and a ready campaign.
 * Only steps that changed are validated, so an unrelated write is not refused by an old problem;
 * readiness catches the rest at start. Senders that are added are checked for existence only: the
 * operation reports the steps they cannot perform (warnings.cannotSend) and readiness refuses the start.
 */
import { DomainError } from '../errors.ts';
import { sameJson } from '../json-equal.ts';
import type { Campaign, Step } from '../model/index.ts';
import { describeStep, structureProblems } from '../sequence.ts';
import { loadReadiness, scheduleProblems, senderStepProblems, stepProblems, unknownStepMergeFields } from './readiness.ts';
import type { Rule } from './types.ts';

/** Steps that are new or differ from the stored state (all of them for a creation). */
export function changedSteps(before: Campaign | null, after: Campaign): Step[] {
  const old = new Map((before?.steps ?? []).map((s) => [s.id, s]));
  return after.steps.filter((s) => {
    const prev = old.get(s.id);
    return !prev || !sameJson(prev, s);
  });
}

const cap = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

export const campaignRules: readonly Rule<'campaigns'>[] = [
  function sequenceChangesOnlyWhilePaused({ before, after }) {
    if (!after || !after.running) return;
    if (!sameJson(before?.steps ?? [], after.steps)) {
      throw new DomainError('CAMPAIGN_NOT_PAUSED', `Campaign "${after.name}" is running: pause it before changing its sequence.`, { campaignId: after.id });
    }
  },

  function scheduleIsValid({ before, after }) {
    if (!after || (before && sameJson(before.schedule, after.schedule))) return;
    const problems = scheduleProblems(after.schedule);
    const first = problems[0];
    if (first) {
      throw new DomainError('INVALID_SCHEDULE', `The sending schedule is not valid: ${first.message}.`, {
        campaignId: after.id,
        day: first.day,
        problems: problems.map((p) => ({ day: p.day, message: p.message })),
      });
    }
  },

  async function sendersAreKept({ before, after }, { read }) {
    if (!after) return;
    if (before && before.senders.length > 0 && after.senders.length === 0) {
      throw new DomainError('LAST_SENDER', `Campaign "${after.name}" must keep at least one sender.`, { campaignId: after.id });
    }
    const ids = after.senders.map((s) => s.sdrProfileId);
    if (new Set(ids).size !== ids.length) {
      throw new DomainError('RULE_VIOLATION', 'A sender is listed twice on the campaign.', { campaignId: after.id });
    }
    const known = new Set((before?.senders ?? []).map((s) => s.sdrProfileId));
    const added = ids.filter((id) => !known.has(id));
    if (added.length === 0) return;
    const found = new Set((await read.getMany('senders', added)).map((s) => s.id));
    const missing = added.filter((id) => !found.has(id));
    if (missing.length > 0) {
      throw new DomainError('NOT_FOUND', `Sender ${missing.join(', ')} was not found in this workspace.`, { what: 'sender', ids: missing });
    }
  },

  async function leadGroupExists({ before, after }, { read }) {
    if (!after || (before && before.leadGroupId === after.leadGroupId)) return;
    if (!(await read.get('leadGroups', after.leadGroupId))) {
      throw new DomainError('NOT_FOUND', "The campaign's lead list was not found in this workspace (it may have been removed).", { what: 'lead group', id: after.leadGroupId });
    }
  },

  function sequenceKeepsItsShape({ before, after }) {
    if (!after || (before && sameJson(before.steps, after.steps))) return;
    const problems = structureProblems(after.steps);
    // Broken steps first (an orphan also empties the path it left). Emptying a path that had steps
    // is the specification's own refusal; a condition that never had a step on a path is broken.
    const emptied = problems.find((p) => {
      if (p.code !== 'LAST_STEP_OF_BRANCH' || !before || p.stepId === null) return false;
      return before.steps.some((s) => s.parentStepId === p.stepId);
    });
    const first = problems.find((p) => p.code === 'STEP_INVALID') ?? emptied ?? problems[0];
    if (first) {
      throw new DomainError(first === emptied ? 'LAST_STEP_OF_BRANCH' : 'STEP_INVALID', first.message, { campaignId: after.id, stepId: first.stepId });
    }
  },

  async function changedStepsAreValid({ before, after }, { read }) {
    if (!after) return;
    const leadGroupChanged = !before || before.leadGroupId !== after.leadGroupId;
    const changed = leadGroupChanged ? after.steps : changedSteps(before, after);
    if (changed.length === 0) return;
    const label = (s: Step): string => describeStep(after.steps, s);

    for (const step of changed) {
      const problems = stepProblems(step);
      if (problems.length > 0) {
        throw new DomainError('STEP_INVALID', `${cap(label(step))} is not valid: ${problems.join('; ')}.`, { campaignId: after.id, stepId: step.id, problems });
      }
    }

    const group = await read.get('leadGroups', after.leadGroupId);
    if (group) {
      for (const step of changed) {
        const unknown = unknownStepMergeFields(step, group);
        if (unknown.length > 0) {
          throw new DomainError(
            'UNKNOWN_MERGE_FIELD',
            `${cap(label(step))} uses ${unknown.map((n) => `{{${n}}}`).join(', ')}, which ${unknown.length === 1 ? 'is not a column' : 'are not columns'} of the campaign's lead group "${group.name}". Merge fields name a column exactly: ${group.columns.map((c) => c.name).join(', ')}.`,
            { campaignId: after.id, stepId: step.id, unknown },
          );
        }
      }
    }

    const senders = await read.getMany('senders', after.senders.map((s) => s.sdrProfileId));
    for (const step of changed) {
      for (const sender of senders) {
        const problems = senderStepProblems(step, sender);
        if (problems.length > 0) {
          throw new DomainError('STEP_INVALID', `${sender.name} cannot perform ${label(step)}: ${problems.join('; ')}.`, {
            campaignId: after.id,
            stepId: step.id,
            sdrProfileId: sender.id,
            problems,
          });
        }
      }
    }
  },

  async function startNeedsLaunchRightsSubscriptionAndReadiness({ before, after }, { actor, read }) {
    if (!after || !after.running || before?.running === true) return;
    if (!actor.isSystem && actor.role !== 'owner' && actor.role !== 'admin') {
      throw new DomainError('PERMISSION_DENIED', 'Only an owner or admin may start a campaign.', { campaignId: after.id, permission: 'campaigns.launch' });
    }
    const workspace = await read.get('workspaces', after.workspaceId);
    const status = workspace?.subscriptionStatus ?? 'canceled';
    if (status !== 'active' && status !== 'trialing') {
      throw new DomainError('SUBSCRIPTION_INACTIVE', `The workspace subscription is ${status.replace('_', ' ')}; starting a campaign needs an active subscription.`, {
        campaignId: after.id,
        subscriptionStatus: status,
      });
    }
    const result = await loadReadiness(read, after);
    if (!result.ready) {
      const errors = result.problems.filter((p) => p.severity === 'error');
      throw new DomainError('READINESS_FAILED', `Campaign "${after.name}" is not ready to start: ${errors.map((p) => p.message).join(' ')}`, {
        campaignId: after.id,
        problems: errors,
      });
    }
  },
];
