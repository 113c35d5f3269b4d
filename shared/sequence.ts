/**
 * The sequence tree of a campaign, stored flat. A step on the main path has parentStepId null and
 * branch null; a step inside a condition's path has parentStepId = that CONDITION's id and branch
 * 'yes' | 'no'. Steps of one path keep array order. A CONDITION is the last step of its path and both
 * of its paths keep at least one step. Positions (`number`) follow a depth-first walk: the main
 * path, and at each condition its yes path, then its no path.
 *
 * Pure helpers shared by the sequence operations, the campaign rules, readiness and the runner.
 */
import { DomainError } from './errors.ts';
import { STEP_TYPES } from './model/index.ts';
import type { Step, StepType } from './model/index.ts';

export type Branch = 'yes' | 'no';
export type PathKey = { parentStepId: string | null; branch: Branch | null };

export const MAIN_PATH: PathKey = { parentStepId: null, branch: null };

/** Step types that carry a message to the lead (text, subject, variants). */
export const MESSAGE_STEP_TYPES: readonly StepType[] = ['SEND_MESSAGE', 'CONNECTION_REQUEST', 'INMAIL', 'EMAIL'];
/** Step types that do something on the network (everything but waiting and branching). */
export const ACTING_STEP_TYPES: readonly StepType[] = ['SEND_MESSAGE', 'CONNECTION_REQUEST', 'INMAIL', 'EMAIL', 'PROFILE_VISIT', 'REACT_TO_POST'];

export const STEP_LABELS: Record<StepType, string> = {
  SEND_MESSAGE: 'Message',
  CONNECTION_REQUEST: 'Connection request',
  INMAIL: 'InMail',
  EMAIL: 'Email',
  WAIT: 'Wait',
  PROFILE_VISIT: 'Profile visit',
  REACT_TO_POST: 'Reaction to a post',
  CONDITION: 'Condition',
};

export const isMessageStep = (step: Pick<Step, 'type'>): boolean => MESSAGE_STEP_TYPES.includes(step.type);
export const isActingStep = (step: Pick<Step, 'type'>): boolean => ACTING_STEP_TYPES.includes(step.type);

export const pathOf = (step: Pick<Step, 'parentStepId' | 'branch'>): PathKey => ({ parentStepId: step.parentStepId, branch: step.branch });
export const onPath = (step: Pick<Step, 'parentStepId' | 'branch'>, path: PathKey): boolean =>
  step.parentStepId === path.parentStepId && step.branch === path.branch;

/** The steps of one path, in order. */
export function pathSteps(steps: readonly Step[], path: PathKey): Step[] {
  return steps.filter((s) => onPath(s, path));
}

/** The first step of a path (the main path by default), or null when it is empty. */
export function firstStep(steps: readonly Step[], path: PathKey = MAIN_PATH): Step | null {
  return steps.find((s) => onPath(s, path)) ?? null;
}

/** The step after `stepId` on the same path, or null at the end of the path (a condition's paths
 * end the sequence: nothing follows a condition). */
export function nextOnPath(steps: readonly Step[], stepId: string): Step | null {
  const i = steps.findIndex((s) => s.id === stepId);
  const step = steps[i];
  if (!step) return null;
  return steps.slice(i + 1).find((s) => onPath(s, pathOf(step))) ?? null;
}

/** Ids of every step inside a condition's paths, nested conditions included. */
export function descendantIds(steps: readonly Step[], conditionId: string): Set<string> {
  const out = new Set<string>();
  const queue = [conditionId];
  for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
    for (const s of steps) {
      if (s.parentStepId === id && !out.has(s.id) && s.id !== conditionId) {
        out.add(s.id);
        queue.push(s.id);
      }
    }
  }
  return out;
}

export type WalkedStep = { step: Step; number: number; depth: number; reachable: boolean };

/** Every step in position order (depth-first). Steps the walk cannot reach from the main path
 * (broken structure) come last, marked unreachable, so nothing is ever hidden from a reader. */
export function walk(steps: readonly Step[]): WalkedStep[] {
  const out: WalkedStep[] = [];
  const seen = new Set<string>();
  const visit = (path: PathKey, depth: number): void => {
    for (const step of pathSteps(steps, path)) {
      if (seen.has(step.id)) continue;
      seen.add(step.id);
      out.push({ step, number: out.length + 1, depth, reachable: true });
      if (step.type === 'CONDITION') {
        visit({ parentStepId: step.id, branch: 'yes' }, depth + 1);
        visit({ parentStepId: step.id, branch: 'no' }, depth + 1);
      }
    }
  };
  visit(MAIN_PATH, 0);
  for (const step of steps) {
    if (!seen.has(step.id)) {
      seen.add(step.id);
      out.push({ step, number: out.length + 1, depth: 0, reachable: false });
    }
  }
  return out;
}

/** Position (1-based) of every step by id. */
export function stepNumbers(steps: readonly Step[]): Map<string, number> {
  return new Map(walk(steps).map((w) => [w.step.id, w.number]));
}

/** "step 3 (InMail)": how messages name a step. */
export function describeStep(steps: readonly Step[], step: Pick<Step, 'id' | 'type'>): string {
  const n = stepNumbers(steps).get(step.id);
  return `${n === undefined ? 'the new step' : `step ${n}`} (${STEP_LABELS[step.type]})`;
}

export type InsertAt = { afterStepId?: string | null; branch?: Branch | null };

/**
 * Inserts `step` (its parentStepId/branch are set here) and returns the new step list.
 * - no afterStepId: appended to the main path (refused when the main path ends with a condition);
 * - afterStepId a CONDITION: `branch` is required and the step goes first on that path;
 * - otherwise: right after afterStepId on its path.
 * A CONDITION may only be inserted where it becomes the last step of its path.
 */
export function insertStep(steps: readonly Step[], step: Step, at: InsertAt = {}): Step[] {
  if (steps.some((s) => s.id === step.id)) throw new DomainError('STEP_INVALID', `A step with id ${step.id} already exists.`, { stepId: step.id });
  const out = [...steps];
  const afterId = at.afterStepId ?? null;

  if (afterId === null) {
    if (at.branch) {
      throw new DomainError('INVALID_INPUT', "A yes or no path belongs to a condition: choose the condition step to add this step under.", { field: 'branch' });
    }
    const main = pathSteps(steps, MAIN_PATH);
    const last = main[main.length - 1];
    if (last?.type === 'CONDITION') {
      throw new DomainError(
        'STEP_INVALID',
        `The sequence ends with a condition (${describeStep(steps, last)}); add the step inside one of its paths: afterStepId = ${last.id} and branch yes or no.`,
        { conditionStepId: last.id },
      );
    }
    out.push({ ...step, parentStepId: null, branch: null });
    return out;
  }

  const afterIndex = steps.findIndex((s) => s.id === afterId);
  const after = steps[afterIndex];
  if (!after) throw new DomainError('NOT_FOUND', 'The step to add after is no longer in this sequence (it was removed meanwhile); reload the sequence and try again.', { what: 'step', id: afterId });

  if (after.type === 'CONDITION') {
    if (!at.branch) {
      throw new DomainError('INVALID_INPUT', `${describeStep(steps, after)} is a condition: say which path the step goes on with branch yes or no.`, { field: 'branch' });
    }
    const path: PathKey = { parentStepId: after.id, branch: at.branch };
    const current = pathSteps(steps, path);
    const first = current[0];
    if (step.type === 'CONDITION' && first) {
      throw new DomainError(
        'STEP_INVALID',
        `A condition must be the last step of its path, and the ${at.branch} path of ${describeStep(steps, after)} already has steps; add it after the last one.`,
        { afterStepId: after.id, branch: at.branch },
      );
    }
    let index: number;
    if (first) index = steps.indexOf(first);
    else if (at.branch === 'yes') index = afterIndex + 1;
    else {
      // After the condition and everything under it, so the stored order stays depth-first.
      const inside = descendantIds(steps, after.id);
      let lastInside = afterIndex;
      steps.forEach((s, i) => {
        if (inside.has(s.id)) lastInside = Math.max(lastInside, i);
      });
      index = lastInside + 1;
    }
    out.splice(index, 0, { ...step, ...path });
    return out;
  }

  if (at.branch && at.branch !== after.branch) {
    throw new DomainError('INVALID_INPUT', `branch is only used after a condition; ${describeStep(steps, after)} is not one.`, { field: 'branch' });
  }
  if (step.type === 'CONDITION' && nextOnPath(steps, after.id)) {
    throw new DomainError(
      'STEP_INVALID',
      `A condition must be the last step of its path; ${describeStep(steps, after)} is followed by other steps.`,
      { afterStepId: after.id },
    );
  }
  out.splice(afterIndex + 1, 0, { ...step, ...pathOf(after) });
  return out;
}

export type Removal = {
  steps: Step[];
  /** Every step taken out (a condition takes its paths with it). */
  removedIds: Set<string>;
  /** The step that now takes the removed step's place on its path (null at the end of the path):
   * enrollments that were about to run a removed step continue there. */
  successor: Step | null;
};

/** Removes a step and joins its neighbours. The only step of a condition path cannot be removed
 * (LAST_STEP_OF_BRANCH); a condition is removed only with `removeBranches` (the app's explicit
 * choice), which removes both of its paths too. */
export function removeStep(steps: readonly Step[], stepId: string, opts: { removeBranches?: boolean } = {}): Removal {
  const step = steps.find((s) => s.id === stepId);
  if (!step) throw new DomainError('NOT_FOUND', 'That step is no longer in this sequence (it was removed meanwhile); reload the sequence.', { what: 'step', id: stepId });
  const removedIds = new Set<string>([step.id]);
  if (step.type === 'CONDITION') {
    if (!opts.removeBranches) {
      throw new DomainError(
        'STEP_INVALID',
        `${describeStep(steps, step)} is a condition: conditions are removed only in the app, which removes both of its paths with it.`,
        { stepId },
      );
    }
    for (const id of descendantIds(steps, step.id)) removedIds.add(id);
  } else if (step.parentStepId !== null && pathSteps(steps, pathOf(step)).length === 1) {
    throw new DomainError(
      'LAST_STEP_OF_BRANCH',
      `${describeStep(steps, step)} is the only step of the ${step.branch ?? ''} path of its condition; add another step to that path before removing it.`,
      { stepId, conditionStepId: step.parentStepId, branch: step.branch },
    );
  }
  const successor = nextOnPath(steps, step.id);
  return { steps: steps.filter((s) => !removedIds.has(s.id)), removedIds, successor };
}

export type StructureProblem = { code: 'STEP_INVALID' | 'LAST_STEP_OF_BRANCH'; message: string; stepId: string | null };

/** Everything wrong with the shape of a sequence (not with what its steps say). */
export function structureProblems(steps: readonly Step[]): StructureProblem[] {
  const problems: StructureProblem[] = [];
  const byId = new Map<string, Step>();
  for (const s of steps) {
    if (byId.has(s.id)) problems.push({ code: 'STEP_INVALID', message: `Two steps share the id ${s.id}.`, stepId: s.id });
    byId.set(s.id, s);
  }
  const label = (s: Step): string => describeStep(steps, s);
  for (const s of steps) {
    if (!(STEP_TYPES as readonly string[]).includes(s.type)) {
      problems.push({ code: 'STEP_INVALID', message: `Step ${s.id} has an unknown type ${String(s.type)}.`, stepId: s.id });
      continue;
    }
    if ((s.parentStepId === null) !== (s.branch === null)) {
      problems.push({
        code: 'STEP_INVALID',
        message: s.parentStepId === null
          ? `${label(s)} names a branch (${String(s.branch)}) but no condition it belongs to.`
          : `${label(s)} hangs under a condition but names no branch (yes or no).`,
        stepId: s.id,
      });
      continue;
    }
    if (s.parentStepId !== null) {
      const parent = byId.get(s.parentStepId);
      if (!parent) {
        problems.push({ code: 'STEP_INVALID', message: `${label(s)} belongs to a condition (${s.parentStepId}) that is not in the sequence.`, stepId: s.id });
        continue;
      }
      if (parent.type !== 'CONDITION') {
        problems.push({ code: 'STEP_INVALID', message: `${label(s)} hangs under ${label(parent)}, which is not a condition.`, stepId: s.id });
        continue;
      }
    }
    if (s.type === 'CONDITION') {
      if (nextOnPath(steps, s.id)) {
        problems.push({ code: 'STEP_INVALID', message: `${label(s)} is a condition and must be the last step of its path.`, stepId: s.id });
      }
      for (const branch of ['yes', 'no'] as const) {
        if (pathSteps(steps, { parentStepId: s.id, branch }).length === 0) {
          problems.push({ code: 'LAST_STEP_OF_BRANCH', message: `The ${branch} path of ${label(s)} has no step; each path of a condition keeps at least one.`, stepId: s.id });
        }
      }
    }
  }
  if (problems.length === 0) {
    for (const w of walk(steps)) {
      if (!w.reachable) problems.push({ code: 'STEP_INVALID', message: `Step ${w.step.id} cannot be reached from the start of the sequence.`, stepId: w.step.id });
    }
  }
  return problems;
}
