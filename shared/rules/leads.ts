/** Lead pipeline rules: lost stages need a close reason, on-hold stages a wake date. */
import { DomainError } from '../errors.ts';
import type { Lead } from '../model/index.ts';
import type { StoreReader } from '../store.ts';
import type { Rule } from './types.ts';

/** A lead's stage exists, and its category's requirements are met. */
async function stageAllows(before: Lead | null, after: Lead, pipelineStageId: string, read: StoreReader): Promise<void> {
  const stageChanged = before?.pipelineStageId !== pipelineStageId;
  const stage = await read.get('stages', pipelineStageId);
  if (!stage) throw new DomainError('NOT_FOUND', 'That pipeline stage was not found in this workspace (it may have been removed); choose another stage.', { what: 'pipeline stage', id: pipelineStageId });
  if (stage.category === 'LOST' && after.closeReason === null) {
    throw new DomainError('CLOSE_REASON_REQUIRED', `Moving a lead to "${stage.name}" needs a close reason.`, { pipelineStageId: stage.id });
  }
  if (stageChanged && stage.category === 'ON_HOLD' && after.followUpAt === null) {
    throw new DomainError('WAKE_DATE_REQUIRED', `Moving a lead to "${stage.name}" needs a wake date.`, { pipelineStageId: stage.id });
  }
}

export const leadRules: readonly Rule<'leads'>[] = [
  function stageCategories({ before, after }, { read }) {
    if (!after || after.pipelineStageId === null) return;
    return stageAllows(before, after, after.pipelineStageId, read);
  },

  function groupMembership({ after }) {
    if (after && !after.groupIds.includes(after.leadGroupId)) {
      throw new DomainError('RULE_VIOLATION', 'A lead stays linked to the group it was created in.', { leadId: after.id });
    }
  },
];
