/** Notes and tasks on a lead's timeline (spec: Notes and tasks, Task status). Ownership and the task
 * state machine are enforced by shared/rules/activities.ts on every write; the handlers add the
 * refusals that are about what the caller asked for (nothing to change, already open, not found). */
import { z } from 'zod';
import { nowIso } from '../context.ts';
import type { Ctx } from '../context.ts';
import { DomainError, notFound } from '../errors.ts';
import { newActivity } from '../model/factories.ts';
import { TASK_STATUSES } from '../model/index.ts';
import type { Activity } from '../model/index.ts';
import type { Cond } from '../store.ts';
import { liveLead, stamp } from './campaigns.leads.ts';
import { mutation, opsByName, query } from './define.ts';
import { cursor, DEFAULT_PAGE_SIZE, isoDateTime, pageLimit, uuid } from './params.ts';

const content = z.string().trim().min(1, 'must not be empty').max(20000);
/** Stored in one canonical form so due dates compare and sort correctly as strings. */
const instant = isoDateTime.transform((s) => new Date(s).toISOString());

export const activityOut = z.object({
  id: z.string(),
  leadId: z.string(),
  workspaceId: z.string(),
  userId: z.string(),
  type: z.enum(['NOTE', 'TASK', 'EVENT']),
  content: z.string(),
  metadata: z.object({
    taskStatus: z.enum(TASK_STATUSES).optional(),
    assigneeId: z.string().optional(),
    completedAt: z.string().nullable().optional(),
    completedBy: z.string().nullable().optional(),
    eventKind: z.string().optional(),
    campaignId: z.string().optional(),
    messageId: z.string().optional(),
    sdrProfileId: z.string().optional(),
  }),
  dueAt: z.string().nullable(),
  remindAt: z.string().nullable(),
  scheduledFor: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type ActivityOut = z.output<typeof activityOut>;

export const toActivityOut = (a: Activity): ActivityOut => ({
  id: a.id,
  leadId: a.leadId,
  workspaceId: a.workspaceId,
  userId: a.userId,
  type: a.type,
  content: a.content,
  metadata: { ...a.metadata },
  dueAt: a.dueAt,
  remindAt: a.remindAt,
  scheduledFor: a.scheduledFor,
  createdAt: a.createdAt,
  updatedAt: a.updatedAt,
});

/** The activity of the expected kind; another kind's id is a request for the wrong operation. */
async function activityOfType(ctx: Ctx, id: string, type: 'NOTE' | 'TASK'): Promise<Activity> {
  const a = await ctx.db.get('activities', id);
  const what = type === 'NOTE' ? 'Note' : 'Task';
  if (!a) throw notFound(what, id);
  if (a.type !== type) {
    const hint = a.type === 'NOTE' ? 'use the note operations' : a.type === 'TASK' ? 'use the task operations' : 'timeline events cannot be changed';
    throw new DomainError('INVALID_INPUT', `Activity ${id} is a ${a.type.toLowerCase()}, not a ${what.toLowerCase()}; ${hint}.`, { field: 'activityId', type: a.type });
  }
  return a;
}

async function ensureMember(ctx: Ctx, memberId: string): Promise<void> {
  const m = await ctx.db.get('members', memberId);
  if (!m) throw notFound('Member', memberId);
}

/** Cursor of myTasks: tasks with a due date come first (soonest first), then undated ones (oldest
 * first); the store puts nulls first, so the two parts are paged separately. */
type TaskPart = 'due' | 'undated';
function splitTaskCursor(c: string | null | undefined): { part: TaskPart; inner: string | null } {
  if (!c) return { part: 'due', inner: null };
  const m = /^(due|undated)\.(.*)$/.exec(c);
  if (!m) throw new DomainError('INVALID_INPUT', 'The cursor is not valid for this query; start again without a cursor.', { field: 'cursor' });
  return { part: m[1] === 'undated' ? 'undated' : 'due', inner: m[2] ? m[2] : null };
}

const leadRef = z.object({ id: z.string(), fullName: z.string(), company: z.string() });

const create = mutation({
  name: 'leadActivities.create',
  summary: "Adds a note to a lead's timeline.",
  input: z.object({ leadId: uuid, content }),
  output: activityOut,
  async handler(input, ctx) {
    const lead = await liveLead(ctx, input.leadId);
    const note = newActivity(stamp(ctx), lead.id, ctx.actor.memberId, 'NOTE', input.content);
    await ctx.db.put('activities', note);
    return toActivityOut(note);
  },
});

const update = mutation({
  name: 'leadActivities.update',
  summary: "Edits a note's text; only its author may.",
  input: z.object({ activityId: uuid, content }),
  output: activityOut,
  async handler(input, ctx) {
    const note = await activityOfType(ctx, input.activityId, 'NOTE');
    const next: Activity = { ...note, content: input.content, updatedAt: nowIso(ctx) };
    await ctx.db.put('activities', next);
    return toActivityOut(next);
  },
});

const deleteOp = mutation({
  name: 'leadActivities.delete',
  summary: 'Deletes a note; only its author may. Irreversible.',
  input: z.object({ activityId: uuid }),
  output: z.object({ activityId: z.string(), deleted: z.boolean() }),
  async handler(input, ctx) {
    const note = await activityOfType(ctx, input.activityId, 'NOTE');
    await ctx.db.remove('activities', note.id);
    return { activityId: note.id, deleted: true };
  },
});

const taskCreate = mutation({
  name: 'leadActivities.taskCreate',
  summary: "Creates an open task on a lead, assigned to a member (default: the caller).",
  input: z.object({ leadId: uuid, content, dueAt: instant.nullish(), assigneeId: uuid.optional() }),
  output: activityOut,
  async handler(input, ctx) {
    const lead = await liveLead(ctx, input.leadId);
    const assigneeId = input.assigneeId ?? ctx.actor.memberId;
    await ensureMember(ctx, assigneeId);
    const task = newActivity(stamp(ctx), lead.id, ctx.actor.memberId, 'TASK', input.content, {
      metadata: { taskStatus: 'open', assigneeId, completedAt: null, completedBy: null },
      dueAt: input.dueAt ?? null,
    });
    await ctx.db.put('activities', task);
    return toActivityOut(task);
  },
});

const taskUpdate = mutation({
  name: 'leadActivities.taskUpdate',
  summary: "Edits an open task's text, due date (null clears) or assignee; only its creator may. Send only changed fields.",
  input: z.object({ activityId: uuid, content: content.optional(), dueAt: instant.nullish(), assigneeId: uuid.optional() }),
  output: activityOut,
  async handler(input, ctx) {
    const task = await activityOfType(ctx, input.activityId, 'TASK');
    const next: Activity = { ...task, metadata: { ...task.metadata } };
    const changed: string[] = [];
    if (input.content !== undefined && input.content !== task.content) {
      next.content = input.content;
      changed.push('content');
    }
    if (input.dueAt !== undefined && input.dueAt !== task.dueAt) {
      next.dueAt = input.dueAt;
      changed.push('dueAt');
    }
    if (input.assigneeId !== undefined && input.assigneeId !== task.metadata.assigneeId) {
      await ensureMember(ctx, input.assigneeId);
      next.metadata.assigneeId = input.assigneeId;
      changed.push('assigneeId');
    }
    if (changed.length === 0) {
      throw new DomainError('NO_FIELDS_TO_UPDATE', 'Nothing to change: give at least one of content, dueAt or assigneeId with a new value.', {
        fields: ['content', 'dueAt', 'assigneeId'],
      });
    }
    next.updatedAt = nowIso(ctx);
    await ctx.db.put('activities', next);
    return toActivityOut(next);
  },
});

const taskSetStatus = mutation({
  name: 'leadActivities.taskSetStatus',
  summary: 'Completes (any member), cancels (creator) or reopens (creator, status open) a task.',
  input: z.object({ activityId: uuid, status: z.enum(TASK_STATUSES) }),
  output: activityOut,
  async handler(input, ctx) {
    const task = await activityOfType(ctx, input.activityId, 'TASK');
    const from = task.metadata.taskStatus ?? 'open';
    const to = input.status;
    if (from === to) {
      // Same precedence as the rules: who may ask first, then whether the state allows it.
      if (to !== 'completed' && task.userId !== ctx.actor.memberId) {
        throw new DomainError('NOT_CREATOR', `Only the creator of a task may ${to === 'open' ? 'reopen' : 'cancel'} it.`, { activityId: task.id });
      }
      if (to === 'open') throw new DomainError('TASK_ALREADY_OPEN', 'The task is already open; only a completed or cancelled task can be reopened.', { activityId: task.id, status: from });
      throw new DomainError('TASK_NOT_OPEN', `The task is already ${from}; only an open task can be ${to}.`, { activityId: task.id, status: from });
    }
    const now = nowIso(ctx);
    const next: Activity = {
      ...task,
      metadata: {
        ...task.metadata,
        taskStatus: to,
        completedAt: to === 'completed' ? now : null,
        completedBy: to === 'completed' ? ctx.actor.memberId : null,
      },
      updatedAt: now,
    };
    await ctx.db.put('activities', next);
    return toActivityOut(next);
  },
});

const taskDelete = mutation({
  name: 'leadActivities.taskDelete',
  summary: 'Deletes a task entirely; only its creator may.',
  input: z.object({ activityId: uuid }),
  output: z.object({ activityId: z.string(), deleted: z.boolean() }),
  async handler(input, ctx) {
    const task = await activityOfType(ctx, input.activityId, 'TASK');
    await ctx.db.remove('activities', task.id);
    return { activityId: task.id, deleted: true };
  },
});

const list = query({
  name: 'leadActivities.list',
  summary: "A lead's timeline (notes, tasks and events), newest first.",
  input: z.object({ leadId: uuid, cursor, limit: pageLimit }),
  output: z.object({ activities: z.array(activityOut), nextCursor: z.string().nullable() }),
  async handler(input, ctx) {
    const lead = await liveLead(ctx, input.leadId);
    const page = await ctx.db.query('activities', {
      where: { op: 'eq', field: 'leadId', value: lead.id },
      orderBy: [{ field: 'createdAt', dir: 'desc' }],
      limit: input.limit ?? DEFAULT_PAGE_SIZE,
      cursor: input.cursor ?? null,
    });
    return { activities: page.docs.map(toActivityOut), nextCursor: page.nextCursor };
  },
});

const myTasks = query({
  name: 'leadActivities.myTasks',
  summary: "A member's task queue (default: the caller's open tasks), due soonest first, undated last.",
  input: z.object({
    status: z.enum([...TASK_STATUSES, 'all']).optional(),
    dueBefore: instant.optional(),
    assigneeId: uuid.optional(),
    cursor,
    limit: pageLimit,
  }),
  output: z.object({ tasks: z.array(activityOut.extend({ lead: leadRef })), nextCursor: z.string().nullable() }),
  async handler(input, ctx) {
    const assigneeId = input.assigneeId ?? ctx.actor.memberId;
    await ensureMember(ctx, assigneeId);
    const status = input.status ?? 'open';
    const base: Cond[] = [
      { op: 'eq', field: 'type', value: 'TASK' },
      { op: 'eq', field: 'metadata.assigneeId', value: assigneeId },
    ];
    if (status !== 'all') base.push({ op: 'eq', field: 'metadata.taskStatus', value: status });
    const limit = input.limit ?? DEFAULT_PAGE_SIZE;
    const { part, inner } = splitTaskCursor(input.cursor);

    const dueWhere: Cond = {
      op: 'and',
      conds: [...base, input.dueBefore ? { op: 'lt', field: 'dueAt', value: input.dueBefore } : { op: 'neq', field: 'dueAt', value: null }],
    };
    const undatedWhere: Cond = { op: 'and', conds: [...base, { op: 'eq', field: 'dueAt', value: null }] };
    const undatedOrder = [{ field: 'createdAt', dir: 'asc' as const }];

    const tasks: Activity[] = [];
    let nextCursor: string | null = null;
    if (part === 'due') {
      const page = await ctx.db.query('activities', { where: dueWhere, orderBy: [{ field: 'dueAt', dir: 'asc' }], limit, cursor: inner });
      tasks.push(...page.docs);
      if (page.nextCursor) nextCursor = `due.${page.nextCursor}`;
    }
    // Undated tasks follow the dated ones, unless the caller asked only for tasks due before a date.
    if (!input.dueBefore && nextCursor === null) {
      const room = limit - tasks.length;
      const startCursor = part === 'undated' ? inner : null;
      if (room > 0) {
        const page = await ctx.db.query('activities', { where: undatedWhere, orderBy: undatedOrder, limit: room, cursor: startCursor });
        tasks.push(...page.docs);
        if (page.nextCursor) nextCursor = `undated.${page.nextCursor}`;
      } else if ((await ctx.db.count('activities', undatedWhere)) > 0) {
        nextCursor = 'undated.';
      }
    }

    // A deleted lead's tasks are not shown; they come back if the lead does.
    const leads = new Map((await ctx.db.getMany('leads', [...new Set(tasks.map((t) => t.leadId))])).map((l) => [l.id, l]));
    const out = tasks.flatMap((t) => {
      const lead = leads.get(t.leadId);
      return lead ? [{ ...toActivityOut(t), lead: { id: lead.id, fullName: lead.fullName, company: lead.company } }] : [];
    });
    return { tasks: out, nextCursor };
  },
});

export const ops = opsByName(create, update, deleteOp, taskCreate, taskUpdate, taskSetStatus, taskDelete, list, myTasks);
