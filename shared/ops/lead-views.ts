/** How a lead looks in responses: the search row (spec "Lead (search result row)") and the Lead
 * record (spec "Lead record"), with their zod output schemas. Other op areas import these so a lead
 * has one shape everywhere. */
import { z } from 'zod';
import { chunk } from '../chunk.ts';
import { BUILT_IN_FIELDS } from '../model/factories.ts';
import { CLOSE_REASONS, ENROLLMENT_STATUSES, STAGE_CATEGORIES, UNSUBSCRIBE_SOURCES } from '../model/index.ts';
import type { Campaign, Enrollment, Lead, LeadGroup, LeadGroupColumn, Sender, Stage } from '../model/index.ts';
import type { StoreReader } from '../store.ts';

const ts = z.string();
const nullableTs = z.string().nullable();

const personRef = z.object({ id: z.string(), firstName: z.string(), lastName: z.string() });

export const leadSequenceSchema = z.object({
  /** The enrollment this summarises (IN_PROGRESS one, else the latest). */
  enrollmentId: z.string(),
  campaignId: z.string(),
  status: z.enum(ENROLLMENT_STATUSES),
  sdrProfileId: z.string().nullable(),
  /** Senders are linked to a campaign by their profile id, so the link id is the profile id. */
  sequenceSenderId: z.string().nullable(),
  sdrProfile: personRef.nullable(),
  seqSender: z.object({ id: z.string(), sdrProfileId: z.string(), sdrProfile: personRef }).nullable(),
});

/** A row's enrollment state: not enrolled yet, or the status of its enrollment. */
export const ENROLLMENT_STATES = ['NOT_ENROLLED', ...ENROLLMENT_STATUSES] as const;

export const leadVariableSchema = z.object({
  variableTypeId: z.string(),
  name: z.string(),
  /** The lead field of a built-in column (e.g. firstName); empty for custom columns. */
  builtInType: z.string(),
  value: z.string(),
});

export const leadRowSchema = z.object({
  id: z.string(),
  leadGroupId: z.string(),
  tagId: z.string().nullable(),
  leadIdentifier: z.string(),
  firstName: z.string(),
  lastName: z.string(),
  fullName: z.string(),
  email: z.string(),
  company: z.string(),
  jobTitle: z.string(),
  location: z.string(),
  phone: z.string(),
  leadFitScore: z.number(),
  rankingScore: z.number(),
  sequenceStatus: z.enum(ENROLLMENT_STATUSES).nullable(),
  /** The enrollment shown on the row (in the searched campaign, else the lead's current one), or
   * NOT_ENROLLED; sequenceStatus and leadSequence describe that same enrollment (null when none). */
  enrollmentState: z.enum(ENROLLMENT_STATES),
  socialUrl: z.string(),
  personalSocialUrl: z.string(),
  companySocialUrl: z.string(),
  websiteUrl: z.string(),
  profilePictureUrl: z.string(),
  createdAt: ts,
  updatedAt: ts,
  lastActivityAt: nullableTs,
  meetingBookedAt: nullableTs,
  /** When an email to the lead bounced hard (email steps stop), and the mail server's reason. */
  emailBouncedAt: nullableTs,
  emailBounceReason: z.string().nullable(),
  /** Do Not Contact: no sequence or message reaches the lead (set by a person, an import or an unsubscribe). */
  doNotContact: z.boolean(),
  /** When and how the lead unsubscribed (the one-click link, a mail to the mailto: address, a reply
   * labelled unsubscribe); null when it never did. Kept when doNotContact is cleared later. */
  unsubscribedAt: nullableTs,
  unsubscribeSource: z.enum(UNSUBSCRIBE_SOURCES).nullable(),
  followUpAt: nullableTs,
  closeReason: z.enum(CLOSE_REASONS).nullable(),
  pipelineStageId: z.string().nullable(),
  pipelineStage: z.object({ name: z.string(), colorHex: z.string(), category: z.enum(STAGE_CATEGORIES) }).nullable(),
  leadSequence: leadSequenceSchema.nullable(),
  campaigns: z.array(z.object({ id: z.string(), name: z.string() })),
  builtInValues: z.record(z.string(), z.string()).optional(),
  variables: z.array(leadVariableSchema).optional(),
});
export type LeadRow = z.output<typeof leadRowSchema>;

export const leadRecordSchema = z.object({
  id: z.string(),
  workspaceId: z.string(),
  leadGroupId: z.string(),
  tagId: z.string().nullable(),
  pipelineStageId: z.string().nullable(),
  closeReason: z.enum(CLOSE_REASONS).nullable(),
  closedFromCategory: z.enum(STAGE_CATEGORIES).nullable(),
  stageSetManuallyAt: nullableTs,
  followUpAt: nullableTs,
  lastActivityAt: nullableTs,
  createdAt: ts,
  updatedAt: ts,
  meetingBookedAt: nullableTs,
  cycle: z.number(),
  profilePictureUrl: z.string(),
  meetingBookedSource: z.string().nullable(),
});
export type LeadRecord = z.output<typeof leadRecordSchema>;

/** A lead's name for people (activity rows, enrollment lists): its full name, else its first and last
 * name, email or identifier; a lead no longer found is "Deleted lead". */
export const leadName = (lead: Lead | undefined): string =>
  lead ? lead.fullName || [lead.firstName, lead.lastName].filter(Boolean).join(' ') || lead.email || lead.leadIdentifier || 'Unnamed lead' : 'Deleted lead';

export function toLeadRecord(lead: Lead): LeadRecord {
  return {
    id: lead.id,
    workspaceId: lead.workspaceId,
    leadGroupId: lead.leadGroupId,
    tagId: lead.tagId,
    pipelineStageId: lead.pipelineStageId,
    closeReason: lead.closeReason,
    closedFromCategory: lead.closedFromCategory,
    stageSetManuallyAt: lead.stageSetManuallyAt,
    followUpAt: lead.followUpAt,
    lastActivityAt: lead.lastActivityAt,
    createdAt: lead.createdAt,
    updatedAt: lead.updatedAt,
    meetingBookedAt: lead.meetingBookedAt,
    cycle: lead.cycle,
    profilePictureUrl: lead.profilePictureUrl,
    meetingBookedSource: lead.meetingBookedSource,
  };
}

/** Enrollments oldest first (ties by id), so "latest" and campaign order are stable. */
const byCreated = (a: Enrollment, b: Enrollment): number =>
  a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;

/** The enrollment that describes a lead's sequence: the running one, else the most recent. */
export function currentEnrollment(enrollments: readonly Enrollment[]): Enrollment | null {
  const running = enrollments.find((e) => e.status === 'IN_PROGRESS');
  if (running) return running;
  const sorted = [...enrollments].sort(byCreated);
  return sorted[sorted.length - 1] ?? null;
}

/** Everything the rows of one page refer to, fetched once for the page. */
export type LeadRelations = {
  enrollmentsByLead: Map<string, Enrollment[]>;
  campaigns: Map<string, Campaign>;
  senders: Map<string, Sender>;
  stages: Map<string, Stage>;
  groups: Map<string, LeadGroup>;
};

/** Loads the enrollments, campaigns, senders, stages (and groups, for variables) of these leads
 * only, so a page costs the same whether the workspace holds a hundred leads or a hundred thousand. */
export async function loadLeadRelations(db: StoreReader, leads: readonly Lead[], opts: { groups: boolean }): Promise<LeadRelations> {
  const enrollmentsByLead = new Map<string, Enrollment[]>();
  for (const ids of chunk(leads.map((l) => l.id), 500)) {
    const { docs } = await db.query('enrollments', { where: { op: 'in', field: 'leadId', values: ids } });
    for (const e of docs) {
      const list = enrollmentsByLead.get(e.leadId) ?? [];
      list.push(e);
      enrollmentsByLead.set(e.leadId, list);
    }
  }
  for (const list of enrollmentsByLead.values()) list.sort(byCreated);
  const all = [...enrollmentsByLead.values()].flat();
  const campaignIds = [...new Set(all.map((e) => e.campaignId))];
  const senderIds = [...new Set(all.flatMap((e) => (e.sdrProfileId === null ? [] : [e.sdrProfileId])))];
  const groupIds = opts.groups ? [...new Set(leads.flatMap((l) => [l.leadGroupId, ...l.groupIds]))] : [];
  const [campaigns, senders, stages, groups] = await Promise.all([
    db.getMany('campaigns', campaignIds),
    db.getMany('senders', senderIds),
    db.query('stages', {}),
    db.getMany('leadGroups', groupIds),
  ]);
  return {
    enrollmentsByLead,
    campaigns: new Map(campaigns.map((c) => [c.id, c])),
    senders: new Map(senders.map((s) => [s.id, s])),
    stages: new Map(stages.docs.map((s) => [s.id, s])),
    groups: new Map(groups.map((g) => [g.id, g])),
  };
}

const builtInValue = (lead: Lead, field: string): string => {
  const v = (lead as Record<string, unknown>)[field];
  return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '';
};

/** Every column of the lead's groups (its own group first, then the groups it was linked to), each
 * built-in field once, with the lead's value. */
export function leadVariables(lead: Lead, groups: ReadonlyMap<string, LeadGroup>, firstGroupId?: string): z.output<typeof leadVariableSchema>[] {
  const order = [...new Set([...(firstGroupId && lead.groupIds.includes(firstGroupId) ? [firstGroupId] : []), lead.leadGroupId, ...lead.groupIds])];
  const seenBuiltIn = new Set<string>();
  const seenColumn = new Set<string>();
  const out: z.output<typeof leadVariableSchema>[] = [];
  const push = (c: LeadGroupColumn): void => {
    if (seenColumn.has(c.id)) return;
    seenColumn.add(c.id);
    if (c.builtInType !== null) {
      if (seenBuiltIn.has(c.builtInType)) return;
      seenBuiltIn.add(c.builtInType);
      out.push({ variableTypeId: c.id, name: c.name, builtInType: c.builtInType, value: builtInValue(lead, c.builtInType) });
    } else {
      out.push({ variableTypeId: c.id, name: c.name, builtInType: '', value: lead.variables[c.id] ?? '' });
    }
  };
  for (const gid of order) for (const c of groups.get(gid)?.columns ?? []) push(c);
  return out;
}

/** The built-in fields by lead field name (firstName, company, ...). */
export function builtInValues(lead: Lead): Record<string, string> {
  return Object.fromEntries(BUILT_IN_FIELDS.map((f) => [f.field, builtInValue(lead, f.field)]));
}

function leadSequence(e: Enrollment | null, senders: ReadonlyMap<string, Sender>): LeadRow['leadSequence'] {
  if (!e) return null;
  const sender = e.sdrProfileId === null ? undefined : senders.get(e.sdrProfileId);
  const profile = sender ? { id: sender.id, firstName: sender.firstName, lastName: sender.lastName } : null;
  return {
    enrollmentId: e.id,
    campaignId: e.campaignId,
    status: e.status,
    sdrProfileId: e.sdrProfileId,
    sequenceSenderId: e.sdrProfileId,
    sdrProfile: profile,
    seqSender: profile ? { id: profile.id, sdrProfileId: profile.id, sdrProfile: profile } : null,
  };
}

export type LeadRowOptions = {
  includeVariables: boolean;
  /** Puts that group's columns first (the searched campaign's group). */
  variablesFrom?: string;
  /** The searched campaign: the row shows the lead's enrollment in it (none yet: NOT_ENROLLED). */
  campaignId?: string;
};

/** One search row. */
export function toLeadRow(lead: Lead, rel: LeadRelations, opts: LeadRowOptions): LeadRow {
  const enrollments = rel.enrollmentsByLead.get(lead.id) ?? [];
  const current = currentEnrollment(opts.campaignId === undefined ? enrollments : enrollments.filter((e) => e.campaignId === opts.campaignId));
  const stage = lead.pipelineStageId === null ? undefined : rel.stages.get(lead.pipelineStageId);
  const campaigns: LeadRow['campaigns'] = [];
  const seen = new Set<string>();
  for (const e of enrollments) {
    const c = rel.campaigns.get(e.campaignId);
    if (!c || seen.has(c.id)) continue;
    seen.add(c.id);
    campaigns.push({ id: c.id, name: c.name });
  }
  const row: LeadRow = {
    id: lead.id,
    leadGroupId: lead.leadGroupId,
    tagId: lead.tagId,
    leadIdentifier: lead.leadIdentifier,
    firstName: lead.firstName,
    lastName: lead.lastName,
    fullName: lead.fullName,
    email: lead.email,
    company: lead.company,
    jobTitle: lead.jobTitle,
    location: lead.location,
    phone: lead.phone,
    leadFitScore: lead.leadFitScore,
    rankingScore: lead.rankingScore,
    sequenceStatus: current?.status ?? null,
    enrollmentState: current?.status ?? 'NOT_ENROLLED',
    socialUrl: lead.socialUrl,
    personalSocialUrl: lead.personalSocialUrl,
    companySocialUrl: lead.companySocialUrl,
    websiteUrl: lead.websiteUrl,
    profilePictureUrl: lead.profilePictureUrl,
    createdAt: lead.createdAt,
    updatedAt: lead.updatedAt,
    lastActivityAt: lead.lastActivityAt,
    meetingBookedAt: lead.meetingBookedAt,
    emailBouncedAt: lead.emailBouncedAt ?? null,
    emailBounceReason: lead.emailBounceReason ?? null,
    doNotContact: lead.doNotContact,
    unsubscribedAt: lead.unsubscribedAt ?? null,
    unsubscribeSource: lead.unsubscribeSource ?? null,
    followUpAt: lead.followUpAt,
    closeReason: lead.closeReason,
    pipelineStageId: lead.pipelineStageId,
    pipelineStage: stage ? { name: stage.name, colorHex: stage.colorHex, category: stage.category } : null,
    leadSequence: leadSequence(current, rel.senders),
    campaigns,
  };
  if (opts.includeVariables) {
    row.builtInValues = builtInValues(lead);
    row.variables = leadVariables(lead, rel.groups, opts.variablesFrom);
  }
  return row;
}

/** The rows of a page of leads, resolving their relations in a handful of reads. */
export async function toLeadRows(db: StoreReader, leads: readonly Lead[], opts: LeadRowOptions): Promise<LeadRow[]> {
  const rel = await loadLeadRelations(db, leads, { groups: opts.includeVariables });
  return leads.map((l) => toLeadRow(l, rel, opts));
}

/** The campaigns a lead is enrolled in, oldest enrollment first (the tag change returns them). */
export async function leadCampaigns(db: StoreReader, leadId: string): Promise<{ id: string; name: string }[]> {
  const { docs } = await db.query('enrollments', { where: { op: 'eq', field: 'leadId', value: leadId } });
  docs.sort(byCreated);
  const ids = [...new Set(docs.map((e) => e.campaignId))];
  const byId = new Map((await db.getMany('campaigns', ids)).map((c) => [c.id, c]));
  return ids.flatMap((id) => {
    const c = byId.get(id);
    return c ? [{ id: c.id, name: c.name }] : [];
  });
}
