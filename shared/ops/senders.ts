import { opsByName } from './define.ts';

export const sendersOps = opsByName();
