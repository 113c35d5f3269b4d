/** Walking a campaign's sequence the way the runner needs it. Steps are stored flat in path order:
 * a path is the main path (parentStepId null) or one branch of a condition. A condition is the last
 * step of its path; its yes and no paths end the sequence (paths never join again). */
import type { Enrollment, Step } from '../model/index.ts';

type Branch = 'yes' | 'no';

/** The steps of one path in order. */
export function pathSteps(steps: readonly Step[], parentStepId: string | null, branch: Branch | null): Step[] {
  return steps.filter((s) => s.parentStepId === parentStepId && (parentStepId === null || s.branch === branch));
}

/** The first step of the main path, or null for an empty sequence. */
export function firstStep(steps: readonly Step[]): Step | null {
  return steps.find((s) => s.parentStepId === null) ?? null;
}

/** The first step of a condition's yes or no path. */
export function firstOfBranch(steps: readonly Step[], conditionId: string, branch: Branch): Step | null {
  return steps.find((s) => s.parentStepId === conditionId && s.branch === branch) ?? null;
}

/** The step after `step` on the same path, or null when `step` ends its path. */
export function nextStep(steps: readonly Step[], step: Step): Step | null {
  const path = pathSteps(steps, step.parentStepId, step.branch);
  const i = path.findIndex((s) => s.id === step.id);
  return i >= 0 ? (path[i + 1] ?? null) : null;
}

/** Steps that act on the network (everything but waits and conditions). */
export const isAction = (s: Step): boolean => s.type !== 'WAIT' && s.type !== 'CONDITION';

/**
 * Where an enrollment continues when its currentStepId no longer exists (the sequence was edited
 * while the campaign was paused): walk from the first step, skipping steps already done and
 * following the branch each done condition took; the first step not done is the resume point.
 */
export function resumePoint(steps: readonly Step[], done: Enrollment['doneSteps']): Step | null {
  const outcomes = new Map(done.map((d) => [d.stepId, d.outcome]));
  let cur = firstStep(steps);
  for (let guard = 0; cur && guard <= steps.length; guard++) {
    const outcome = outcomes.get(cur.id);
    if (outcome === undefined) return cur;
    if (cur.type === 'CONDITION') {
      cur = firstOfBranch(steps, cur.id, outcome === 'yes' ? 'yes' : 'no');
      continue;
    }
    cur = nextStep(steps, cur);
  }
  return null;
}
