import { opsByName } from './define.ts';

export const socialOps = opsByName();
