/** One of everything an operation can name by id, in a workspace, written straight to the store. */
import { randomUUID } from 'node:crypto';
import { emptyUsage, newActivity, newCampaign, newEnrollment, newLead, newMessage, newSender, newStep } from '../../../shared/model/factories.ts';
import type { ApiKey, LeadGroup, Stage } from '../../../shared/model/index.ts';
import type { AnyWrite } from '../../../shared/store.ts';
import type { PgDatabase } from '../../../sync-server/pg-database.ts';
import type { Team } from './server.ts';

export type Fixtures = {
  leadId: string;
  otherLeadId: string;
  tagId: string;
  senderId: string;
  otherSenderId: string;
  campaignId: string;
  stepId: string;
  conditionStepId: string;
  enrollmentId: string;
  noteId: string;
  taskId: string;
  leadGroupId: string;
  columnId: string;
  stageId: string;
  memberId: string;
  apiKeyId: string;
  chatId: string;
  messageId: string;
  /** A distinctive text stored in this workspace, to prove it never leaks elsewhere. */
  marker: string;
};

export async function seedFixtures(db: PgDatabase, team: Team, now: string, label: string): Promise<Fixtures> {
  const store = db.forWorkspace(team.workspaceId);
  const ws = team.workspaceId;
  const stamp = () => ({ id: randomUUID(), workspaceId: ws, now });
  const group = (await store.query('leadGroups', { orderBy: [{ field: 'createdAt', dir: 'asc' }], limit: 1 })).docs[0] as LeadGroup;
  const stages = (await store.query('stages', { orderBy: [{ field: 'position', dir: 'asc' }] })).docs as Stage[];
  const marker = `${label}-marker-${randomUUID().slice(0, 8)}`;
  const tag = { id: randomUUID(), workspaceId: ws, createdAt: now, updatedAt: now, name: `${label} tag`, color: '#123456' };
  const lead = newLead(stamp(), group.id, { firstName: marker, lastName: 'Fixture', email: `${label.toLowerCase()}@fixture.test`, tagId: tag.id, socialUrl: `https://social.example/in/${label.toLowerCase()}-fixture` });
  const otherLead = newLead(stamp(), group.id, { firstName: `${label} Second`, lastName: 'Lead' });
  const sender = newSender(stamp(), { name: `${label} Sender`, ownerMemberId: team.ownerId, channel: 'sandbox', premium: true });
  const otherSender = newSender(stamp(), { name: `${label} Other Sender`, ownerMemberId: team.ownerId, channel: 'sandbox' });
  const message = newStep(randomUUID(), 'SEND_MESSAGE', { content: 'Hi {{First name|there}}' });
  const condition = newStep(randomUUID(), 'CONDITION', { sendCondition: 'CONNECTED' });
  const yes = newStep(randomUUID(), 'SEND_MESSAGE', { parentStepId: condition.id, branch: 'yes', content: 'Thanks for connecting' });
  const no = newStep(randomUUID(), 'PROFILE_VISIT', { parentStepId: condition.id, branch: 'no' });
  const campaign = {
    ...newCampaign(stamp(), `${label} campaign`, group.id, randomUUID()),
    senders: [
      { sdrProfileId: sender.id, paused: false },
      { sdrProfileId: otherSender.id, paused: false },
    ],
    steps: [message, condition, yes, no],
  };
  const enrollment = newEnrollment(stamp(), lead.id, campaign.id, { sdrProfileId: sender.id, currentStepId: message.id });
  const note = newActivity(stamp(), lead.id, team.ownerId, 'NOTE', `${marker} note`);
  const task = newActivity(stamp(), lead.id, team.ownerId, 'TASK', `${marker} task`, { metadata: { taskStatus: 'open', assigneeId: team.ownerId } });
  const chatId = `chat-${randomUUID()}`;
  const sent = newMessage(stamp(), { leadId: lead.id, sdrProfileId: sender.id, chatId, direction: 'out', kind: 'message', text: `${marker} hello`, status: 'sent', sentAt: now });
  const usage = emptyUsage(ws, sender.id, now.slice(0, 10), now);
  const key: ApiKey = { id: randomUUID(), workspaceId: ws, createdAt: now, updatedAt: now, memberId: team.ownerId, name: `${label} spare key`, prefix: 'live_spare00', hash: randomUUID(), lastUsedAt: null, revokedAt: null };
  const writes: AnyWrite[] = [
    { collection: 'tags', id: tag.id, before: null, after: tag },
    { collection: 'leads', id: lead.id, before: null, after: lead },
    { collection: 'leads', id: otherLead.id, before: null, after: otherLead },
    { collection: 'senders', id: sender.id, before: null, after: sender },
    { collection: 'senders', id: otherSender.id, before: null, after: otherSender },
    { collection: 'campaigns', id: campaign.id, before: null, after: campaign },
    { collection: 'enrollments', id: enrollment.id, before: null, after: enrollment },
    { collection: 'activities', id: note.id, before: null, after: note },
    { collection: 'activities', id: task.id, before: null, after: task },
    { collection: 'messages', id: sent.id, before: null, after: sent },
    { collection: 'usage', id: usage.id, before: null, after: usage },
    { collection: 'apiKeys', id: key.id, before: null, after: key },
  ];
  await store.commit(writes);
  const custom = group.columns.find((c) => c.builtInType === null) ?? group.columns[group.columns.length - 1];
  return {
    leadId: lead.id,
    otherLeadId: otherLead.id,
    tagId: tag.id,
    senderId: sender.id,
    otherSenderId: otherSender.id,
    campaignId: campaign.id,
    stepId: message.id,
    conditionStepId: condition.id,
    enrollmentId: enrollment.id,
    noteId: note.id,
    taskId: task.id,
    leadGroupId: group.id,
    columnId: custom?.id ?? '',
    stageId: (stages.find((s) => s.category === 'CONTACTED') ?? stages[0])?.id ?? '',
    memberId: team.memberId,
    apiKeyId: key.id,
    chatId,
    messageId: sent.id,
    marker,
  };
}
