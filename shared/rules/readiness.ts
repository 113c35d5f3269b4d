/**
 * Readiness: whether a campaign can run as it stands. Used to refuse a start (READINESS_FAILED), shown
 * with the sequence, and checked again by the runner before it acts. The per-step and per-schedule
 * checks here are also what the campaign rules use to refuse a bad write.
 */
import { IANAZone } from 'luxon';
import { columnByName, parseMergeFields } from '../merge-fields.ts';
import { CONDITION_TESTS, DAYS } from '../model/index.ts';
import type { Campaign, Day, LeadGroup, LimitKey, Schedule, Sender, SenderCapability, Step, StepType, Workspace } from '../model/index.ts';
import { describeStep, isActingStep, isMessageStep, structureProblems, walk } from '../sequence.ts';
import type { StoreReader } from '../store.ts';

export type ReadinessProblem = { severity: 'error' | 'warning'; message: string; stepId?: string; sdrProfileId?: string };
export type Readiness = { ready: boolean; problems: ReadinessProblem[] };

/** What a sender must be able to do to perform a step; absent for steps that do not act. */
export const STEP_CAPABILITY: Partial<Record<StepType, SenderCapability>> = {
  SEND_MESSAGE: 'message',
  CONNECTION_REQUEST: 'connection_request',
  INMAIL: 'inmail',
  EMAIL: 'email',
  PROFILE_VISIT: 'profile_visit',
  REACT_TO_POST: 'reaction',
};

/** The daily limit a step consumes (emails are counted but have no limit key). */
export function stepLimitKey(step: Pick<Step, 'type' | 'content'>): LimitKey | null {
  switch (step.type) {
    case 'SEND_MESSAGE':
      return 'messages';
    case 'CONNECTION_REQUEST':
      return step.content.trim() === '' ? 'connectionRequests' : 'connectionRequestsWithNote';
    case 'INMAIL':
      return 'inmails';
    case 'PROFILE_VISIT':
      return 'profileVisits';
    case 'REACT_TO_POST':
      return 'reactions';
    default:
      return null;
  }
}

/** Every text of a step that may hold merge fields: content, subject and each variant's. */
export function stepTexts(step: Pick<Step, 'content' | 'subject' | 'variants'>): string[] {
  return [step.content, step.subject, ...step.variants.flatMap((v) => [v.text, v.subject])];
}

/** Merge fields a step uses that are not columns of the group (distinct names, in order). */
export function unknownStepMergeFields(step: Pick<Step, 'content' | 'subject' | 'variants'>, group: LeadGroup): string[] {
  const names = stepTexts(step).flatMap((t) => parseMergeFields(t).map((r) => r.name));
  return [...new Set(names.filter((n) => !columnByName(group, n)))];
}

/** Whether a step uses the column display name `name` as a merge field. */
export function stepUsesMergeField(step: Pick<Step, 'content' | 'subject' | 'variants'>, name: string): boolean {
  return stepTexts(step).some((t) => parseMergeFields(t).some((r) => r.name === name));
}

/** What is wrong with a step on its own, whoever sends it. */
export function stepProblems(step: Step): string[] {
  const out: string[] = [];
  const tests = CONDITION_TESTS as readonly string[];
  if (step.type === 'WAIT' && !(step.waitTimeSeconds > 0)) out.push('a wait needs a length (waitTimeSeconds above 0)');
  if (step.type === 'EMAIL' && step.subject.trim() === '') out.push('an email needs a subject');
  if (step.type === 'CONDITION' && !tests.includes(step.sendCondition)) {
    out.push(`a condition tests one of ${tests.join(', ')}${step.sendCondition ? `, not "${step.sendCondition}"` : ''}`);
  }
  if (step.type !== 'CONDITION' && step.sendCondition !== '' && !tests.includes(step.sendCondition)) {
    out.push(`the send condition must be one of ${tests.join(', ')}, not "${step.sendCondition}"`);
  }
  if (step.voiceNote.mode !== 'none') {
    if (step.type !== 'SEND_MESSAGE') out.push('voice notes are sent only by message steps');
    if (step.voiceNote.mode === 'recorded' && !step.voiceNote.recordingId) out.push('a recorded voice note needs a recording (recordingId)');
  }
  if (!isMessageStep(step) && step.variants.length > 0) out.push('only message steps have variants');
  const variantIds = step.variants.map((v) => v.id);
  if (new Set(variantIds).size !== variantIds.length) out.push('two variants share an id');
  const def = step.variantAssignment.defaultVariantId;
  if (def !== null && !variantIds.includes(def)) out.push('the default variant is not one of the step\'s variants');
  return out;
}

/** What stops `sender` from performing `step`. */
export function senderStepProblems(step: Step, sender: Sender): string[] {
  const out: string[] = [];
  const capability = STEP_CAPABILITY[step.type];
  if (capability && !sender.capabilities.includes(capability)) out.push(`its account cannot send ${capabilityWords(capability)}`);
  if (step.type === 'INMAIL' && !sender.premium) out.push('InMail needs a Premium account');
  if (step.type === 'CONNECTION_REQUEST') {
    const max = sender.connectionNoteMaxLength;
    const longest = Math.max(step.content.length, ...step.variants.map((v) => v.text.length));
    if (longest > max) out.push(`the connection note has ${longest} characters; its limit is ${max}`);
  }
  if (step.voiceNote.mode !== 'none' && !sender.capabilities.includes('voice_note')) out.push('its channel cannot send voice notes');
  return out;
}

function capabilityWords(c: SenderCapability): string {
  switch (c) {
    case 'message':
      return 'messages';
    case 'connection_request':
      return 'connection requests';
    case 'inmail':
      return 'InMails';
    case 'email':
      return 'emails';
    case 'profile_visit':
      return 'profile visits';
    case 'reaction':
      return 'reactions';
    case 'voice_note':
      return 'voice notes';
    case 'post_reading':
      return 'post reads';
  }
}

export const isValidTimeZone = (zone: string): boolean => IANAZone.isValidZone(zone);

export type ScheduleProblem = { day: Day | null; message: string };

/** Day names as people write them, for messages. */
const DAY_NAMES: Record<Day, string> = { monday: 'Monday', tuesday: 'Tuesday', wednesday: 'Wednesday', thursday: 'Thursday', friday: 'Friday', saturday: 'Saturday', sunday: 'Sunday' };

/** Problems of a sending schedule: a valid IANA zone, each enabled day's start strictly before its
 * end, at least one enabled day. */
export function scheduleProblems(schedule: Schedule): ScheduleProblem[] {
  const out: ScheduleProblem[] = [];
  if (!isValidTimeZone(schedule.timeZone)) out.push({ day: null, message: `"${schedule.timeZone}" is not a known time zone (use an IANA name such as Europe/Berlin)` });
  for (const day of DAYS) {
    const w = schedule.days[day];
    if (w.enabled && !(w.start < w.end)) out.push({ day, message: `${DAY_NAMES[day]}'s sending window starts at ${w.start}, which is not before it ends at ${w.end}` });
  }
  if (!DAYS.some((d) => schedule.days[d].enabled)) out.push({ day: null, message: 'every day is switched off; keep at least one day on' });
  return out;
}

export type ReadinessInput = {
  /** The campaign's lead group (null when it is missing). */
  group: LeadGroup | null;
  /** The sender documents of the campaign's senders that exist. */
  senders: readonly Sender[];
  workspace: Workspace | null;
};

/** Whether the campaign can run: errors make it not ready, warnings are worth knowing. */
export function readiness(campaign: Campaign, { group, senders, workspace }: ReadinessInput): Readiness {
  const problems: ReadinessProblem[] = [];
  const error = (message: string, extra: Partial<ReadinessProblem> = {}): void => void problems.push({ severity: 'error', message, ...extra });
  const warning = (message: string, extra: Partial<ReadinessProblem> = {}): void => void problems.push({ severity: 'warning', message, ...extra });
  const steps = campaign.steps;
  const label = (s: Step): string => describeStep(steps, s);

  // Senders.
  const byId = new Map(senders.map((s) => [s.id, s]));
  if (campaign.senders.length === 0) error('The campaign has no sender; add at least one.');
  const active: Sender[] = [];
  for (const entry of campaign.senders) {
    const sender = byId.get(entry.sdrProfileId);
    if (!sender) {
      error("One of the campaign's senders was removed from the workspace: take it off the campaign's senders (it shows as Removed sender).", { sdrProfileId: entry.sdrProfileId });
      continue;
    }
    if (entry.paused) continue;
    active.push(sender);
    if (sender.outreachPaused) warning(`${sender.name}'s outreach is paused on every campaign; it sends nothing until resumed.`, { sdrProfileId: sender.id });
    else if (sender.status === 'disconnected') warning(`${sender.name}'s account is disconnected; it sends nothing until reconnected.`, { sdrProfileId: sender.id });
    else if (sender.status === 'limited') warning(`${sender.name} is backing off after a network limit${sender.statusReason ? ` (${sender.statusReason})` : ''}.`, { sdrProfileId: sender.id });
  }
  if (campaign.senders.length > 0 && campaign.senders.every((e) => e.paused)) error('Every sender is paused on this campaign; resume at least one.');

  // Sequence shape and content.
  if (!steps.some(isActingStep)) error('The sequence has no step that reaches out (message, connection request, InMail, email, profile visit or reaction).');
  for (const p of structureProblems(steps)) error(p.message, p.stepId ? { stepId: p.stepId } : {});
  for (const { step } of walk(steps)) {
    for (const p of stepProblems(step)) error(`${cap(label(step))}: ${p}.`, { stepId: step.id });
    // A connection request's note is optional (API contract); every other message needs words.
    if (isMessageStep(step) && step.type !== 'CONNECTION_REQUEST' && step.voiceNote.mode !== 'recorded' && step.content.trim() === '' && step.variants.every((v) => v.text.trim() === '')) {
      error(`${cap(label(step))} has no text.`, { stepId: step.id });
    }
    if (group) {
      const unknown = unknownStepMergeFields(step, group);
      if (unknown.length > 0) error(`${cap(label(step))} uses merge fields that are not columns of the lead group: ${unknown.join(', ')}.`, { stepId: step.id });
    }
    for (const sender of active) {
      for (const p of senderStepProblems(step, sender)) error(`${sender.name} cannot perform ${label(step)}: ${p}.`, { stepId: step.id, sdrProfileId: sender.id });
      const key = stepLimitKey(step);
      if (key && sender.limits[key] === 0) warning(`${sender.name}'s daily limit for ${key} is 0, so ${label(step)} waits for them.`, { stepId: step.id, sdrProfileId: sender.id });
    }
  }
  if (!group) error("The campaign's lead list no longer exists, so it has no leads to message.");

  // Schedule.
  for (const p of scheduleProblems(campaign.schedule)) error(`Sending schedule: ${p.message}.`);

  if (workspace && workspace.subscriptionStatus !== 'active' && workspace.subscriptionStatus !== 'trialing') {
    warning(`The workspace subscription is ${workspace.subscriptionStatus.replace('_', ' ')}: campaigns cannot start until it is active.`);
  }
  return { ready: !problems.some((p) => p.severity === 'error'), problems };
}

const cap = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

/** Reads what readiness needs and judges the campaign. */
export async function loadReadiness(read: StoreReader, campaign: Campaign): Promise<Readiness> {
  const [group, senders, workspace] = await Promise.all([
    read.get('leadGroups', campaign.leadGroupId),
    read.getMany('senders', campaign.senders.map((s) => s.sdrProfileId)),
    read.get('workspaces', campaign.workspaceId),
  ]);
  return readiness(campaign, { group, senders, workspace });
}
