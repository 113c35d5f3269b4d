import { opsByName } from './define.ts';

export const bulkOps = opsByName();
