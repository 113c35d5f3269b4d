/** Notes and tasks: ownership and the task state machine (spec: States and transitions, Task status). */
import { DomainError } from '../errors.ts';
import { sameJson } from '../json-equal.ts';
import type { Activity } from '../model/index.ts';
import { isMergeMove } from './merge.ts';
import type { Rule } from './types.ts';

const statusOf = (a: Activity): string | undefined => a.metadata.taskStatus;

const TASK_EDITABLE: readonly (keyof Activity)[] = ['content', 'dueAt', 'remindAt', 'scheduledFor'];

const assigneeOf = (a: Activity): string | undefined => a.metadata.assigneeId;

export const activityRules: readonly Rule<'activities'>[] = [
  async function identityIsFixed({ before, after }, { read }) {
    if (!before || !after) return;
    if (before.userId !== after.userId || before.type !== after.type) {
      throw new DomainError('RULE_VIOLATION', 'An activity keeps its lead, author and type.', { activityId: after.id });
    }
    if (before.leadId !== after.leadId && !(await isMergeMove(read, before.leadId, after.leadId))) {
      throw new DomainError('RULE_VIOLATION', 'An activity keeps its lead, author and type (it moves only with a merge of its lead).', { activityId: after.id });
    }
  },

  function authorCreatesAsThemselves({ before, after }, { actor }) {
    if (before || !after || actor.isSystem) return;
    if ((after.type === 'NOTE' || after.type === 'TASK') && after.userId !== actor.memberId) {
      throw new DomainError('RULE_VIOLATION', 'Notes and tasks are created in the name of the member who writes them.');
    }
    if (after.type === 'TASK' && statusOf(after) !== 'open') {
      throw new DomainError('RULE_VIOLATION', 'A task starts open.');
    }
  },

  async function leadExists({ before, after }, { read }) {
    // On creation only: a lead deleted later keeps its timeline, and its tasks can still be closed.
    if (before || !after) return;
    if (!(await read.get('leads', after.leadId))) {
      throw new DomainError('NOT_FOUND', `Lead ${after.leadId} was not found in this workspace.`, { what: 'lead', id: after.leadId });
    }
  },

  async function taskAssigneeIsMember({ before, after }, { read }) {
    if (!after || after.type !== 'TASK') return;
    const assignee = assigneeOf(after);
    if (before && assigneeOf(before) === assignee) return;
    if (assignee === undefined) throw new DomainError('RULE_VIOLATION', 'A task is assigned to a member.', { activityId: after.id });
    if (!(await read.get('members', assignee))) {
      throw new DomainError('NOT_FOUND', `Member ${assignee} was not found in this workspace.`, { what: 'member', id: assignee });
    }
  },

  async function noteOwnership({ before, after }, { actor, read }) {
    const note = before ?? after;
    if (!note || note.type !== 'NOTE' || !before) return;
    // A merge moves every note of the merged lead to the survivor, whoever wrote it; nothing else of
    // the note may change in that move.
    if (after && before.leadId !== after.leadId && sameJson({ ...before, leadId: after.leadId, updatedAt: after.updatedAt }, after) && (await isMergeMove(read, before.leadId, after.leadId))) return;
    if (before.userId !== actor.memberId) {
      throw new DomainError('NOT_AUTHOR', after ? 'Only the author of a note may edit it.' : 'Only the author of a note may delete it.', {
        activityId: before.id,
        authorId: before.userId,
      });
    }
  },

  function taskTransitions({ before, after }, { actor }) {
    if (!before || before.type !== 'TASK') return;
    const isCreator = before.userId === actor.memberId;
    if (!after) {
      if (!isCreator) throw new DomainError('NOT_CREATOR', 'Only the creator of a task may delete it.', { activityId: before.id });
      return;
    }
    const from = statusOf(before);
    const to = statusOf(after);
    const edited =
      TASK_EDITABLE.some((f) => !sameJson(before[f], after[f])) || assigneeOf(before) !== assigneeOf(after);

    if (from !== to) {
      if (to === 'completed' || to === 'cancelled') {
        if (to === 'cancelled' && !isCreator) throw new DomainError('NOT_CREATOR', 'Only the creator of a task may cancel it.', { activityId: before.id });
        if (from !== 'open') throw new DomainError('TASK_NOT_OPEN', `The task is ${from}; only an open task can be ${to}.`, { activityId: before.id, status: from });
      } else if (to === 'open') {
        if (!isCreator) throw new DomainError('NOT_CREATOR', 'Only the creator of a task may reopen it.', { activityId: before.id });
      } else {
        throw new DomainError('RULE_VIOLATION', `Unknown task status ${String(to)}.`);
      }
    }
    if (edited) {
      if (!isCreator) throw new DomainError('NOT_CREATOR', 'Only the creator of a task may edit it.', { activityId: before.id });
      if (to !== 'open') throw new DomainError('TASK_NOT_OPEN', 'Only an open task can be edited.', { activityId: before.id, status: to });
    }
  },
];
