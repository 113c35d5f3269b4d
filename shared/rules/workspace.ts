/** Workspace, member and API key rules: who may change roles, subscriptions and keys. */
import { DomainError } from '../errors.ts';
import type { Rule } from './types.ts';
import type { Actor } from '../context.ts';

const isAdmin = (a: Actor): boolean => a.isSystem === true || a.role === 'owner' || a.role === 'admin';

export const workspaceRules: readonly Rule<'workspaces'>[] = [
  function subscriptionIsBilling({ before, after }, { actor }) {
    if (!actor.isSystem && (!before || !after || before.subscriptionStatus !== after.subscriptionStatus)) {
      throw new DomainError('PERMISSION_DENIED', 'The subscription status is set by billing, not by members.');
    }
  },
  function publicUrlIsTheServers({ before, after }, { actor }) {
    // The address in unsubscribe links is the sync server's PUBLIC_URL, which the server copies onto
    // every workspace; a member who changed it could send prospects' unsubscribes elsewhere.
    if (!actor.isSystem && (before?.publicUrl ?? null) !== (after?.publicUrl ?? null) && after !== null) {
      throw new DomainError('PERMISSION_DENIED', "The public address is the sync server's PUBLIC_URL setting; members cannot change it.");
    }
  },
  function renameNeedsAdmin({ before, after }, { actor }) {
    if (before && after && before.name !== after.name && !isAdmin(actor)) {
      throw new DomainError('PERMISSION_DENIED', 'Only an owner or admin may rename the workspace.');
    }
  },
];

export const memberRules: readonly Rule<'members'>[] = [
  function membersAreManagedByAdmins({ before, after }, { actor }) {
    const selfRename = before && after && before.id === actor.memberId && before.role === after.role && before.email === after.email;
    if (!isAdmin(actor) && !selfRename) {
      throw new DomainError('PERMISSION_DENIED', 'Only an owner or admin may add, remove or change members.');
    }
    if (after && after.role === 'owner' && before?.role !== 'owner' && !actor.isSystem && actor.role !== 'owner') {
      throw new DomainError('PERMISSION_DENIED', 'Only an owner may make another owner.');
    }
  },
];

export const apiKeyRules: readonly Rule<'apiKeys'>[] = [
  function keysBelongToTheirMember({ before, after }, { actor }) {
    const key = after ?? before;
    if (!key) return;
    if (!before && after && after.memberId !== actor.memberId && !isAdmin(actor)) {
      throw new DomainError('PERMISSION_DENIED', 'Keys are created for yourself unless you are an owner or admin.');
    }
    if (before && before.memberId !== actor.memberId && !isAdmin(actor)) {
      throw new DomainError('NOT_FOUND', `API key ${before.id} was not found in this workspace.`);
    }
    if (before && after && (before.hash !== after.hash || before.memberId !== after.memberId)) {
      throw new DomainError('RULE_VIOLATION', 'A key keeps its secret and its member.');
    }
  },
];
