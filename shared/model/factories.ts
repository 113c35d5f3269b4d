/** Constructors for new documents with every required field at its default, so ops, the runner,
 * the seed and tests build documents the same way. */
import type { Activity, Campaign, Enrollment, Lead, LeadGroup, Message, Sender, Stage, Step, Usage } from './index.ts';
import type { LimitSet, StageCategory } from './common.ts';
import { CONNECTION_NOTE_MAX_LENGTH } from './common.ts';
import type { Schedule, LeadPicking } from './outreach.ts';

export type Stamp = { id: string; workspaceId: string; now: string };

export const DEFAULT_STAGES: readonly { name: string; category: StageCategory; colorHex: string }[] = [
  { name: 'New', category: 'NEW', colorHex: '#94a3b8' },
  { name: 'Contacted', category: 'CONTACTED', colorHex: '#60a5fa' },
  { name: 'Engaged', category: 'ENGAGED', colorHex: '#a78bfa' },
  { name: 'Meeting booked', category: 'MEETING_BOOKED', colorHex: '#34d399' },
  { name: 'On hold', category: 'ON_HOLD', colorHex: '#fbbf24' },
  { name: 'Won', category: 'WON', colorHex: '#10b981' },
  { name: 'Lost', category: 'LOST', colorHex: '#f87171' },
];

/** Order of stage categories along the pipeline (a reply moves a lead to ENGAGED unless further). */
export const CATEGORY_ORDER: Record<StageCategory, number> = {
  NEW: 0, CONTACTED: 1, ENGAGED: 2, MEETING_BOOKED: 3, ON_HOLD: 2, WON: 4, LOST: 4,
};

/** Built-in lead fields offered as merge fields and lead-group columns, by display name. */
export const BUILT_IN_FIELDS: readonly { name: string; field: keyof Lead & string }[] = [
  { name: 'First name', field: 'firstName' },
  { name: 'Last name', field: 'lastName' },
  { name: 'Full name', field: 'fullName' },
  { name: 'Company', field: 'company' },
  { name: 'Job title', field: 'jobTitle' },
  { name: 'Location', field: 'location' },
  { name: 'Email', field: 'email' },
  { name: 'Phone', field: 'phone' },
];

export const newStage = (s: Stamp, name: string, category: StageCategory, colorHex: string, position: number): Stage => ({
  id: s.id, workspaceId: s.workspaceId, createdAt: s.now, updatedAt: s.now, name, category, colorHex, position,
});

export const newLeadGroup = (s: Stamp, name: string, columnIds: () => string, custom: readonly string[] = []): LeadGroup => ({
  id: s.id, workspaceId: s.workspaceId, createdAt: s.now, updatedAt: s.now, name,
  columns: [
    ...BUILT_IN_FIELDS.map((f) => ({ id: columnIds(), name: f.name, builtInType: f.field })),
    ...custom.map((name) => ({ id: columnIds(), name, builtInType: null })),
  ],
});

export const newLead = (s: Stamp, leadGroupId: string, fields: Partial<Lead> = {}): Lead => {
  const firstName = fields.firstName ?? '';
  const lastName = fields.lastName ?? '';
  return {
    leadIdentifier: fields.socialUrl || fields.email || s.id,
    firstName, lastName,
    fullName: [firstName, lastName].filter(Boolean).join(' '),
    email: '', company: '', jobTitle: '', location: '', phone: '', seniority: '',
    leadFitScore: 0, rankingScore: 0,
    socialUrl: '', personalSocialUrl: '', companySocialUrl: '', websiteUrl: '', profilePictureUrl: '',
    tagId: null, pipelineStageId: null, closeReason: null, closedFromCategory: null, stageSetManuallyAt: null,
    followUpAt: null, lastActivityAt: null, meetingBookedAt: null, meetingBookedSource: null,
    cycle: 0, doNotContact: false, blocklisted: false, variables: {},
    ...fields,
    id: s.id, workspaceId: s.workspaceId, createdAt: s.now, updatedAt: s.now,
    leadGroupId, groupIds: fields.groupIds ?? [leadGroupId],
  };
};

const window = (enabled: boolean) => ({ enabled, start: '09:00', end: '17:00' });
export const defaultSchedule = (timeZone = 'UTC'): Schedule => ({
  timeZone,
  days: {
    monday: window(true), tuesday: window(true), wednesday: window(true), thursday: window(true),
    friday: window(true), saturday: window(false), sunday: window(false),
  },
});

export const defaultLeadPicking = (): LeadPicking => ({
  preferNewLeads: false,
  companyRelay: { enabled: false, maxPersonsPerCompany: 3, seniorities: [] },
});

export const newCampaign = (s: Stamp, name: string, leadGroupId: string, sequenceId: string, timeZone = 'UTC'): Campaign => ({
  id: s.id, workspaceId: s.workspaceId, createdAt: s.now, updatedAt: s.now,
  name, leadGroupId, sequenceId, running: false, startedAt: null, config: null,
  webcamVideoName: '', backgroundVideoName: '',
  schedule: defaultSchedule(timeZone), settings: defaultLeadPicking(), senders: [], steps: [],
});

export const newStep = (id: string, type: Step['type'], fields: Partial<Step> = {}): Step => ({
  parentStepId: null, branch: null, content: '', subject: '', waitTimeSeconds: 0, sendCondition: '',
  stopIfSkipped: false, emailThreading: 'same_thread', voiceNote: { mode: 'none', recordingId: null },
  variants: [], variantAssignment: { mode: 'default', defaultVariantId: null },
  ...fields, id, type,
});

export const DEFAULT_PLAN_MAX: LimitSet = {
  messages: 150, inmails: 50, connectionRequests: 100, connectionRequestsWithNote: 50, comments: 50, reactions: 100, profileVisits: 200,
};
export const DEFAULT_LIMITS: LimitSet = {
  messages: 50, inmails: 10, connectionRequests: 25, connectionRequestsWithNote: 15, comments: 10, reactions: 30, profileVisits: 60,
};
export const DEFAULT_SEARCH_LIMIT = 100;

export const newSender = (s: Stamp, fields: Pick<Sender, 'name' | 'ownerMemberId' | 'channel'> & Partial<Sender>): Sender => {
  const [firstName = '', ...rest] = fields.name.split(' ');
  return {
    firstName, lastName: rest.join(' '), channelConfig: {}, status: 'available', outreachPaused: false, backoffUntil: null,
    statusReason: null, premium: false,
    capabilities: fields.channel === 'email' ? ['email'] : ['message', 'connection_request', 'profile_visit', 'reaction', 'post_reading', 'inmail', 'voice_note'],
    timeZone: 'UTC', limits: { ...DEFAULT_LIMITS }, planMax: { ...DEFAULT_PLAN_MAX }, searchLimit: DEFAULT_SEARCH_LIMIT,
    connectionNoteMaxLength: CONNECTION_NOTE_MAX_LENGTH,
    ...fields,
    id: s.id, workspaceId: s.workspaceId, createdAt: s.now, updatedAt: s.now,
  };
};

export const newEnrollment = (s: Stamp, leadId: string, campaignId: string, fields: Partial<Enrollment> = {}): Enrollment => ({
  status: 'IN_PROGRESS', sdrProfileId: null, currentStepId: null, nextActionAt: s.now, inConversationAt: null, completedAt: null,
  stoppedReason: null, doneSteps: [], variants: {}, attempts: 0,
  ...fields,
  id: s.id, workspaceId: s.workspaceId, createdAt: s.now, updatedAt: s.now, leadId, campaignId,
});

export const emptyUsage = (workspaceId: string, sdrProfileId: string, day: string, now: string): Usage => ({
  id: `${sdrProfileId}:${day}`, workspaceId, createdAt: now, updatedAt: now, sdrProfileId, day,
  counts: { messages: 0, inmails: 0, connectionRequests: 0, connectionRequestsWithNote: 0, comments: 0, reactions: 0, profileVisits: 0, emails: 0, searches: 0 },
});

export const newActivity = (s: Stamp, leadId: string, userId: string, type: Activity['type'], content: string, fields: Partial<Activity> = {}): Activity => ({
  metadata: {}, dueAt: null, remindAt: null, scheduledFor: null,
  ...fields,
  id: s.id, workspaceId: s.workspaceId, createdAt: s.now, updatedAt: s.now, leadId, userId, type, content,
});

export const newMessage = (s: Stamp, fields: Pick<Message, 'leadId' | 'sdrProfileId' | 'chatId' | 'direction' | 'kind' | 'text'> & Partial<Message>): Message => ({
  campaignId: null, stepId: null, subject: '', status: 'queued', sentAt: null, openedAt: null, externalId: null, error: null,
  ...fields,
  id: s.id, workspaceId: s.workspaceId, createdAt: s.now, updatedAt: s.now,
});
