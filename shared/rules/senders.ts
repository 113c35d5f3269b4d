import type { Rule } from './types.ts';

export const senderRules: readonly Rule<'senders'>[] = [];
