/** Every committed write, from an operation, the runner or a replication push, passes these. */
import { DomainError } from '../errors.ts';
import type { CollectionName } from '../model/index.ts';
import { schemaProblem } from '../model/validate.ts';
import type { AnyWrite } from '../store.ts';
import { activityRules } from './activities.ts';
import { campaignRules } from './campaigns.ts';
import { leadGroupRules } from './leadGroups.ts';
import { leadRules } from './leads.ts';
import { senderRules } from './senders.ts';
import { enrollmentRules } from './enrollments.ts';
import { leadReferenceRules, messageReferenceRules, senderReferenceRules, usageReferenceRules } from './references.ts';
import { workspaceRules, memberRules, apiKeyRules } from './workspace.ts';
import type { Change, Rule, RuleCtx, RuleSet } from './types.ts';

export type { Change, Rule, RuleCtx, RuleSet } from './types.ts';

/** Rules that hold for every collection: identity fields never change, documents match the schema. */
const integrity = ({ collection, before, after }: Change<CollectionName>, { actor }: RuleCtx): void => {
  if (after) {
    const problem = schemaProblem(collection, after);
    if (problem) throw new DomainError('INVALID_INPUT', `The ${collection} document is not valid: ${problem}.`, { collection, id: after.id });
    if (after.workspaceId !== actor.workspaceId) throw new DomainError('NOT_FOUND', `${collection} ${after.id} was not found in this workspace.`);
  }
  if (before && after && before.createdAt !== after.createdAt) {
    throw new DomainError('RULE_VIOLATION', 'createdAt never changes.', { collection, id: after.id });
  }
};

export const RULES: RuleSet = {
  activities: activityRules,
  leads: [...leadRules, ...leadReferenceRules],
  campaigns: campaignRules,
  leadGroups: leadGroupRules,
  senders: [...senderRules, ...senderReferenceRules],
  enrollments: enrollmentRules,
  workspaces: workspaceRules,
  members: memberRules,
  apiKeys: apiKeyRules,
  messages: messageReferenceRules,
  usage: usageReferenceRules,
};

/** Runs the rules of a change from `from` on: a rule that reads (a promise) is awaited before the
 * next one; the others run at once, so a write whose rules read nothing (an import's new lead: its
 * list is known, no stage) costs no turn of the microtask queue per rule. Order and refusals are
 * those of awaiting each rule in turn. */
function runRules(change: Change<CollectionName>, rctx: RuleCtx, rules: readonly Rule<CollectionName>[], from: number): Promise<void> | undefined {
  for (let i = from; i < rules.length; i++) {
    // A rule answers undefined or a promise (Rule's void | Promise<void>).
    const pending = (rules[i] as Rule<CollectionName>)(change, rctx) as Promise<void> | undefined;
    if (pending !== undefined) return pending.then(() => runRules(change, rctx, rules, i + 1));
  }
  return undefined;
}

/** Checks one change; a promise only when a rule reads the store. Throws the first refusal. */
function checkChange(change: Change<CollectionName>, rctx: RuleCtx): Promise<void> | undefined {
  integrity(change, rctx);
  return runRules(change, rctx, (RULES[change.collection] ?? []) as readonly Rule<CollectionName>[], 0);
}

export async function validateChange(change: Change<CollectionName>, rctx: RuleCtx): Promise<void> {
  await checkChange(change, rctx);
}

/** Validates every write of one commit; throws the first refusal. */
export async function validateWrites(writes: readonly AnyWrite[], rctx: RuleCtx): Promise<void> {
  for (const w of writes) {
    const pending = checkChange(w as Change<CollectionName>, rctx);
    if (pending) await pending;
  }
}
