import type { Rule } from './types.ts';

export const leadGroupRules: readonly Rule<'leadGroups'>[] = [];
