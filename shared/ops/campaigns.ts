import { opsByName } from './define.ts';

export const campaignsOps = opsByName();
