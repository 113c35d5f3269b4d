import { opsByName } from './define.ts';

export const activitiesOps = opsByName();
