import { opsByName } from './define.ts';

export const leadsOps = opsByName();
