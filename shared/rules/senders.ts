/** Sender profile rules: daily limits stay within the plan, and only owners and admins raise them
 * or touch what the plan and the account decide (plan maximums, owner, channel). */
import type { Actor } from '../context.ts';
import { DomainError } from '../errors.ts';
import { sameJson } from '../json-equal.ts';
import { DEFAULT_LIMITS, DEFAULT_PLAN_MAX } from '../model/factories.ts';
import { LIMIT_KEYS } from '../model/index.ts';
import type { LimitKey, LimitSet } from '../model/index.ts';
import type { Rule } from './types.ts';

/** Raising a limit needs the same permission as starting a campaign (owner or admin). */
export const canRaiseLimits = (a: Actor): boolean => a.isSystem === true || a.role === 'owner' || a.role === 'admin';

const above = (values: LimitSet, ceiling: LimitSet): LimitKey[] => LIMIT_KEYS.filter((k) => values[k] > ceiling[k]);

export const senderRules: readonly Rule<'senders'>[] = [
  function limitsWithinPlan({ after }) {
    if (!after) return;
    const over = above(after.limits, after.planMax);
    if (over.length > 0) {
      throw new DomainError('RULE_VIOLATION', `Daily limits cannot exceed the plan maximum (${over.map((k) => `${k} ${after.limits[k]} > ${after.planMax[k]}`).join(', ')}).`, {
        sdrProfileId: after.id,
        limits: over,
      });
    }
  },

  function raisingNeedsLaunchPermission({ before, after }, { actor }) {
    if (!after || canRaiseLimits(actor)) return;
    // A member's new sender starts at the default limits or lower, otherwise creating a sender
    // would be a way around the permission.
    const raised = above(after.limits, before ? before.limits : DEFAULT_LIMITS);
    if (raised.length > 0) {
      throw new DomainError('PERMISSION_DENIED', `Raising daily limits (${raised.join(', ')}) needs an owner or admin.`, {
        sdrProfileId: after.id,
        limits: raised,
        permission: 'campaigns.launch',
      });
    }
  },

  function planAndAccountAreAdminOnly({ before, after }, { actor }) {
    if (!after || canRaiseLimits(actor)) return;
    if (!before) {
      if (above(after.planMax, DEFAULT_PLAN_MAX).length > 0 || after.ownerMemberId !== actor.memberId) {
        throw new DomainError('PERMISSION_DENIED', 'A member connects senders for themselves on the default plan; an owner or admin sets other owners and plans.', { sdrProfileId: after.id });
      }
      return;
    }
    const changed = (['planMax', 'ownerMemberId', 'channel'] as const).filter((f) => !sameJson(before[f], after[f]));
    if (changed.length > 0) {
      throw new DomainError('PERMISSION_DENIED', `Only an owner or admin may change a sender's ${changed.join(', ')}.`, { sdrProfileId: after.id, fields: changed });
    }
  },
];
