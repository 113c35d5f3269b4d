import type { Rule } from './types.ts';

export const campaignRules: readonly Rule<'campaigns'>[] = [];
