import { opsByName } from './define.ts';

export const sequenceOps = opsByName();
