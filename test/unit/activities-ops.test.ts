import { describe, expect, it } from 'vitest';
import { newActivity, newLead } from '../../shared/model/factories.ts';
import { validateChange } from '../../shared/rules/index.ts';
import { makeHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const DAY = 24 * 3600 * 1000;

async function withLead() {
  const h = await makeHarness();
  const lead = await h.addLead({ firstName: 'Lena', lastName: 'Lead', company: 'Initech' });
  return { h, lead };
}

async function openTask(h: Harness, leadId: string, content = 'Call back') {
  return h.call('leadActivities.taskCreate', { leadId, content }, h.owner);
}

describe('notes', () => {
  it('adds a note on a lead, authored by the caller', async () => {
    const { h, lead } = await withLead();
    const note = await h.call('leadActivities.create', { leadId: lead.id, content: '  Met at the fair  ' }, h.member);
    expect(note).toMatchObject({ leadId: lead.id, workspaceId: h.main.workspaceId, userId: h.member.memberId, type: 'NOTE', content: 'Met at the fair' });
    expect(note.createdAt).toBe(h.now());
    expect(await h.store.get('activities', note.id)).toMatchObject({ content: 'Met at the fair' });
  });

  it('refuses an empty note and a note on an unknown or foreign lead', async () => {
    const { h, lead } = await withLead();
    await h.expectRefused(h.call('leadActivities.create', { leadId: lead.id, content: '   ' }), 'INVALID_INPUT');
    await h.expectRefused(h.call('leadActivities.create', { leadId: lead.id, content: 'x' }, h.foreignOwner), 'NOT_FOUND');
  });

  it('lets the author edit a note and refuses anyone else (NOT_AUTHOR)', async () => {
    const { h, lead } = await withLead();
    const note = await h.call('leadActivities.create', { leadId: lead.id, content: 'first' }, h.member);
    h.clock.advance(60_000);
    const edited = await h.call('leadActivities.update', { activityId: note.id, content: 'second' }, h.member);
    expect(edited.content).toBe('second');
    expect(edited.updatedAt).toBe(h.now());
    expect(edited.createdAt).toBe(note.createdAt);
    await h.expectRefused(h.call('leadActivities.update', { activityId: note.id, content: 'hijack' }, h.owner), 'NOT_AUTHOR');
    await h.expectRefused(h.call('leadActivities.update', { activityId: note.id, content: 'hijack' }, h.admin), 'NOT_AUTHOR');
    await h.expectRefused(h.call('leadActivities.update', { activityId: note.id, content: 'x' }, h.foreignOwner), 'NOT_FOUND');
    expect((await h.store.get('activities', note.id))?.content).toBe('second');
  });

  it('lets the author delete a note and refuses anyone else', async () => {
    const { h, lead } = await withLead();
    const note = await h.call('leadActivities.create', { leadId: lead.id, content: 'bye' }, h.member);
    await h.expectRefused(h.call('leadActivities.delete', { activityId: note.id }, h.owner), 'NOT_AUTHOR');
    await h.expectRefused(h.call('leadActivities.delete', { activityId: note.id }, h.foreignOwner), 'NOT_FOUND');
    expect(await h.call('leadActivities.delete', { activityId: note.id }, h.member)).toEqual({ activityId: note.id, deleted: true });
    expect(await h.store.get('activities', note.id)).toBeNull();
    await h.expectRefused(h.call('leadActivities.delete', { activityId: note.id }, h.member), 'NOT_FOUND');
  });

  it('refuses note operations on a task id and task operations on a note id', async () => {
    const { h, lead } = await withLead();
    const task = await openTask(h, lead.id);
    const note = await h.call('leadActivities.create', { leadId: lead.id, content: 'n' });
    await h.expectRefused(h.call('leadActivities.update', { activityId: task.id, content: 'x' }), 'INVALID_INPUT');
    await h.expectRefused(h.call('leadActivities.delete', { activityId: task.id }), 'INVALID_INPUT');
    await h.expectRefused(h.call('leadActivities.taskSetStatus', { activityId: note.id, status: 'completed' }), 'INVALID_INPUT');
    await h.expectRefused(h.call('leadActivities.taskDelete', { activityId: note.id }), 'INVALID_INPUT');
  });
});

describe('task transitions', () => {
  it('creates an open task assigned to the caller by default, or to another member', async () => {
    const { h, lead } = await withLead();
    const mine = await h.call('leadActivities.taskCreate', { leadId: lead.id, content: 'Send deck', dueAt: '2026-11-20T09:00:00+01:00' }, h.member);
    expect(mine).toMatchObject({ type: 'TASK', userId: h.member.memberId, metadata: { taskStatus: 'open', assigneeId: h.member.memberId } });
    expect(mine.dueAt).toBe('2026-11-20T08:00:00.000Z');
    const theirs = await h.call('leadActivities.taskCreate', { leadId: lead.id, content: 'Review', assigneeId: h.admin.memberId }, h.member);
    expect(theirs.metadata.assigneeId).toBe(h.admin.memberId);
    expect(theirs.dueAt).toBeNull();
  });

  it('refuses an assignee who is not a member of the workspace, and a foreign lead', async () => {
    const { h, lead } = await withLead();
    await h.expectRefused(h.call('leadActivities.taskCreate', { leadId: lead.id, content: 'x', assigneeId: h.foreignOwner.memberId }), 'NOT_FOUND');
    await h.expectRefused(h.call('leadActivities.taskCreate', { leadId: lead.id, content: 'x' }, h.foreignOwner), 'NOT_FOUND');
  });

  it('open -> completed by any member, records who and when', async () => {
    const { h, lead } = await withLead();
    const task = await openTask(h, lead.id);
    h.clock.advance(3600_000);
    const done = await h.call('leadActivities.taskSetStatus', { activityId: task.id, status: 'completed' }, h.member);
    expect(done.metadata).toMatchObject({ taskStatus: 'completed', completedBy: h.member.memberId, completedAt: h.now() });
  });

  it('open -> cancelled by the creator only', async () => {
    const { h, lead } = await withLead();
    const task = await openTask(h, lead.id);
    await h.expectRefused(h.call('leadActivities.taskSetStatus', { activityId: task.id, status: 'cancelled' }, h.member), 'NOT_CREATOR');
    await h.expectRefused(h.call('leadActivities.taskSetStatus', { activityId: task.id, status: 'cancelled' }, h.foreignOwner), 'NOT_FOUND');
    await h.expectRefused(h.call('leadActivities.taskSetStatus', { activityId: task.id, status: 'completed' }, h.foreignOwner), 'NOT_FOUND');
    const cancelled = await h.call('leadActivities.taskSetStatus', { activityId: task.id, status: 'cancelled' }, h.owner);
    expect(cancelled.metadata.taskStatus).toBe('cancelled');
    expect(cancelled.metadata.completedAt).toBeNull();
  });

  it('completed -> open and cancelled -> open by the creator only', async () => {
    const { h, lead } = await withLead();
    const a = await openTask(h, lead.id, 'a');
    const b = await openTask(h, lead.id, 'b');
    await h.call('leadActivities.taskSetStatus', { activityId: a.id, status: 'completed' }, h.member);
    await h.call('leadActivities.taskSetStatus', { activityId: b.id, status: 'cancelled' }, h.owner);
    await h.expectRefused(h.call('leadActivities.taskSetStatus', { activityId: a.id, status: 'open' }, h.member), 'NOT_CREATOR');
    await h.expectRefused(h.call('leadActivities.taskSetStatus', { activityId: b.id, status: 'open' }, h.admin), 'NOT_CREATOR');
    const reopenedA = await h.call('leadActivities.taskSetStatus', { activityId: a.id, status: 'open' }, h.owner);
    const reopenedB = await h.call('leadActivities.taskSetStatus', { activityId: b.id, status: 'open' }, h.owner);
    expect(reopenedA.metadata).toMatchObject({ taskStatus: 'open', completedAt: null, completedBy: null });
    expect(reopenedB.metadata.taskStatus).toBe('open');
  });

  it('refuses completing or cancelling a task that is not open (TASK_NOT_OPEN)', async () => {
    const { h, lead } = await withLead();
    const a = await openTask(h, lead.id, 'a');
    const b = await openTask(h, lead.id, 'b');
    await h.call('leadActivities.taskSetStatus', { activityId: a.id, status: 'completed' });
    await h.call('leadActivities.taskSetStatus', { activityId: b.id, status: 'cancelled' });
    await h.expectRefused(h.call('leadActivities.taskSetStatus', { activityId: a.id, status: 'completed' }, h.member), 'TASK_NOT_OPEN');
    await h.expectRefused(h.call('leadActivities.taskSetStatus', { activityId: a.id, status: 'cancelled' }), 'TASK_NOT_OPEN');
    await h.expectRefused(h.call('leadActivities.taskSetStatus', { activityId: b.id, status: 'completed' }, h.member), 'TASK_NOT_OPEN');
    await h.expectRefused(h.call('leadActivities.taskSetStatus', { activityId: b.id, status: 'cancelled' }), 'TASK_NOT_OPEN');
  });

  it('refuses reopening a task that is open (TASK_ALREADY_OPEN); a non-creator gets NOT_CREATOR first', async () => {
    const { h, lead } = await withLead();
    const task = await openTask(h, lead.id);
    await h.expectRefused(h.call('leadActivities.taskSetStatus', { activityId: task.id, status: 'open' }), 'TASK_ALREADY_OPEN');
    await h.expectRefused(h.call('leadActivities.taskSetStatus', { activityId: task.id, status: 'open' }, h.member), 'NOT_CREATOR');
  });

  it('refuses an unknown status value', async () => {
    const { h, lead } = await withLead();
    const task = await openTask(h, lead.id);
    await h.expectRefused(h.call('leadActivities.taskSetStatus', { activityId: task.id, status: 'done' as 'completed' }), 'INVALID_INPUT');
  });

  it('edits an open task (creator): text, due date, clearing the due date, assignee', async () => {
    const { h, lead } = await withLead();
    const task = await h.call('leadActivities.taskCreate', { leadId: lead.id, content: 'v1', dueAt: '2026-11-20T09:00:00Z' }, h.member);
    const v2 = await h.call('leadActivities.taskUpdate', { activityId: task.id, content: 'v2' }, h.member);
    expect(v2).toMatchObject({ content: 'v2', dueAt: '2026-11-20T09:00:00.000Z' });
    const moved = await h.call('leadActivities.taskUpdate', { activityId: task.id, dueAt: '2026-11-21T09:00:00Z', assigneeId: h.admin.memberId }, h.member);
    expect(moved).toMatchObject({ dueAt: '2026-11-21T09:00:00.000Z', metadata: { assigneeId: h.admin.memberId, taskStatus: 'open' } });
    const cleared = await h.call('leadActivities.taskUpdate', { activityId: task.id, dueAt: null }, h.member);
    expect(cleared.dueAt).toBeNull();
    expect((await h.store.get('activities', task.id))?.dueAt).toBeNull();
  });

  it('refuses a task update by a non-creator (NOT_CREATOR) and on a task that is not open (TASK_NOT_OPEN)', async () => {
    const { h, lead } = await withLead();
    const task = await openTask(h, lead.id);
    await h.expectRefused(h.call('leadActivities.taskUpdate', { activityId: task.id, content: 'mine now' }, h.member), 'NOT_CREATOR');
    await h.expectRefused(h.call('leadActivities.taskUpdate', { activityId: task.id, content: 'x' }, h.foreignOwner), 'NOT_FOUND');
    await h.call('leadActivities.taskSetStatus', { activityId: task.id, status: 'completed' }, h.member);
    await h.expectRefused(h.call('leadActivities.taskUpdate', { activityId: task.id, content: 'too late' }), 'TASK_NOT_OPEN');
  });

  it('refuses a task update with no field, or only fields equal to the current values (NO_FIELDS_TO_UPDATE)', async () => {
    const { h, lead } = await withLead();
    const task = await h.call('leadActivities.taskCreate', { leadId: lead.id, content: 'same', dueAt: '2026-11-20T09:00:00Z' });
    await h.expectRefused(h.call('leadActivities.taskUpdate', { activityId: task.id }), 'NO_FIELDS_TO_UPDATE');
    await h.expectRefused(
      h.call('leadActivities.taskUpdate', { activityId: task.id, content: 'same', dueAt: '2026-11-20T10:00:00+01:00', assigneeId: h.owner.memberId }),
      'NO_FIELDS_TO_UPDATE',
    );
    await h.expectRefused(h.call('leadActivities.taskUpdate', { activityId: task.id, assigneeId: h.foreignOwner.memberId }), 'NOT_FOUND');
  });

  it('deletes a task (creator only)', async () => {
    const { h, lead } = await withLead();
    const task = await openTask(h, lead.id);
    await h.expectRefused(h.call('leadActivities.taskDelete', { activityId: task.id }, h.member), 'NOT_CREATOR');
    await h.expectRefused(h.call('leadActivities.taskDelete', { activityId: task.id }, h.foreignOwner), 'NOT_FOUND');
    await h.call('leadActivities.taskDelete', { activityId: task.id });
    expect(await h.store.get('activities', task.id)).toBeNull();
  });
});

describe('timeline and task queue', () => {
  it("lists a lead's notes, tasks and events newest first, paged without gaps", async () => {
    const { h, lead } = await withLead();
    const made: string[] = [];
    for (let i = 0; i < 7; i++) {
      h.clock.advance(1000);
      const a = i % 2 === 0
        ? await h.call('leadActivities.create', { leadId: lead.id, content: `note ${i}` })
        : await h.call('leadActivities.taskCreate', { leadId: lead.id, content: `task ${i}` });
      made.push(a.id);
    }
    const event = newActivity(h.stamp(), lead.id, h.owner.memberId, 'EVENT', 'Stage changed', { metadata: { eventKind: 'stage_changed' } });
    event.createdAt = new Date(h.clock.now().getTime() + 1000).toISOString();
    await h.seed([{ collection: 'activities', id: event.id, before: null, after: event }]);
    made.push(event.id);
    const other = await h.addLead({ firstName: 'Other' });
    await h.call('leadActivities.create', { leadId: other.id, content: 'elsewhere' });

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { activities: { id: string }[]; nextCursor: string | null } = await h.call('leadActivities.list', { leadId: lead.id, limit: 3, cursor });
      expect(page.activities.length).toBeLessThanOrEqual(3);
      seen.push(...page.activities.map((a) => a.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual([...made].reverse());
    const types = (await h.call('leadActivities.list', { leadId: lead.id })).activities.map((a) => a.type);
    expect(new Set(types)).toEqual(new Set(['NOTE', 'TASK', 'EVENT']));
    await h.expectRefused(h.call('leadActivities.list', { leadId: lead.id }, h.foreignOwner), 'NOT_FOUND');
  });

  it("lists a member's tasks due soonest first, undated last, by status and due date, paged", async () => {
    const { h, lead } = await withLead();
    const base = h.clock.now().getTime();
    const due = (d: number) => new Date(base + d * DAY).toISOString();
    const t3 = await h.call('leadActivities.taskCreate', { leadId: lead.id, content: 'in 3 days', dueAt: due(3) }, h.member);
    const undated1 = await h.call('leadActivities.taskCreate', { leadId: lead.id, content: 'someday' }, h.member);
    const t1 = await h.call('leadActivities.taskCreate', { leadId: lead.id, content: 'tomorrow', dueAt: due(1) }, h.member);
    h.clock.advance(1000);
    const undated2 = await h.call('leadActivities.taskCreate', { leadId: lead.id, content: 'someday 2' }, h.member);
    const t2 = await h.call('leadActivities.taskCreate', { leadId: lead.id, content: 'in 2 days', dueAt: due(2) }, h.member);
    const done = await h.call('leadActivities.taskCreate', { leadId: lead.id, content: 'done', dueAt: due(0.5) }, h.member);
    await h.call('leadActivities.taskSetStatus', { activityId: done.id, status: 'completed' }, h.member);
    await h.call('leadActivities.taskCreate', { leadId: lead.id, content: 'for the owner', dueAt: due(1) }, h.owner);

    const all = await h.call('leadActivities.myTasks', {}, h.member);
    expect(all.tasks.map((t) => t.id)).toEqual([t1.id, t2.id, t3.id, undated1.id, undated2.id]);
    expect(all.tasks[0]?.lead).toEqual({ id: lead.id, fullName: 'Lena Lead', company: 'Initech' });
    expect(all.nextCursor).toBeNull();

    for (const limit of [1, 2, 3]) {
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { tasks: { id: string }[]; nextCursor: string | null } = await h.call('leadActivities.myTasks', { limit, cursor }, h.member);
        ids.push(...page.tasks.map((t) => t.id));
        cursor = page.nextCursor;
      } while (cursor);
      expect(ids).toEqual([t1.id, t2.id, t3.id, undated1.id, undated2.id]);
    }

    expect((await h.call('leadActivities.myTasks', { dueBefore: due(2.5) }, h.member)).tasks.map((t) => t.id)).toEqual([t1.id, t2.id]);
    expect((await h.call('leadActivities.myTasks', { status: 'completed' }, h.member)).tasks.map((t) => t.id)).toEqual([done.id]);
    expect((await h.call('leadActivities.myTasks', { status: 'all' }, h.member)).tasks).toHaveLength(6);
    // Another member's queue, asked by id; a foreign member id is not found.
    expect((await h.call('leadActivities.myTasks', { assigneeId: h.owner.memberId }, h.member)).tasks.map((t) => t.content)).toEqual(['for the owner']);
    await h.expectRefused(h.call('leadActivities.myTasks', { assigneeId: h.foreignOwner.memberId }), 'NOT_FOUND');
    expect((await h.call('leadActivities.myTasks', {}, h.foreignOwner)).tasks).toEqual([]);
    await h.expectRefused(h.call('leadActivities.myTasks', { cursor: 'garbage' }, h.member), 'INVALID_INPUT');
  });

  it("leaves a deleted lead's tasks out of the queue", async () => {
    const { h, lead } = await withLead();
    await h.call('leadActivities.taskCreate', { leadId: lead.id, content: 'x' });
    await h.call('campaigns.leads.delete', { leadIds: [lead.id] });
    expect((await h.call('leadActivities.myTasks', {})).tasks).toEqual([]);
  });
});

describe('activity rules on their own (replication pushes)', () => {
  it('refuse a task assigned to a non-member and an activity on a missing lead', async () => {
    const { h, lead } = await withLead();
    const rctx = { actor: h.owner, read: h.store, now: h.clock.now() };
    const task = newActivity(h.stamp(), lead.id, h.owner.memberId, 'TASK', 't', { metadata: { taskStatus: 'open', assigneeId: h.foreignOwner.memberId } });
    await expect(validateChange({ collection: 'activities', before: null, after: task }, rctx)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const ghost = newLead(h.stamp(), h.main.leadGroupId);
    const note = newActivity(h.stamp(), ghost.id, h.owner.memberId, 'NOTE', 'n');
    await expect(validateChange({ collection: 'activities', before: null, after: note }, rctx)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const ok = { ...task, metadata: { taskStatus: 'open' as const, assigneeId: h.member.memberId } };
    await expect(validateChange({ collection: 'activities', before: null, after: ok }, rctx)).resolves.toBeUndefined();
  });

  it('refuse a task created in another member\'s name or not open, and note edits by a non-author', async () => {
    const { h, lead } = await withLead();
    const rctx = { actor: h.member, read: h.store, now: h.clock.now() };
    const forged = newActivity(h.stamp(), lead.id, h.owner.memberId, 'TASK', 't', { metadata: { taskStatus: 'open', assigneeId: h.member.memberId } });
    await expect(validateChange({ collection: 'activities', before: null, after: forged }, rctx)).rejects.toMatchObject({ code: 'RULE_VIOLATION' });
    const closed = newActivity(h.stamp(), lead.id, h.member.memberId, 'TASK', 't', { metadata: { taskStatus: 'completed', assigneeId: h.member.memberId } });
    await expect(validateChange({ collection: 'activities', before: null, after: closed }, rctx)).rejects.toMatchObject({ code: 'RULE_VIOLATION' });
    const note = newActivity(h.stamp(), lead.id, h.owner.memberId, 'NOTE', 'n');
    await expect(validateChange({ collection: 'activities', before: note, after: { ...note, content: 'changed' } }, rctx)).rejects.toMatchObject({ code: 'NOT_AUTHOR' });
    await expect(validateChange({ collection: 'activities', before: note, after: null }, rctx)).rejects.toMatchObject({ code: 'NOT_AUTHOR' });
    await expect(validateChange({ collection: 'activities', before: note, after: { ...note, userId: h.member.memberId } }, rctx)).rejects.toMatchObject({ code: 'RULE_VIOLATION' });
  });
});
