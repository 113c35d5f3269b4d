/**
 * Bundles the main process and preload once for the whole `electron` test project (esbuild, as
 * `npm start` and `npm run dist` do), so no two test files write build/electron/ while another reads
 * it. Tests get the paths with `inject('electronBundle')`.
 */
import type { TestProject } from 'vitest/node';
import { buildElectron } from '../../scripts/build-app.ts';

declare module 'vitest' {
  // Only an interface can be augmented.
  // eslint-disable-next-line @typescript-eslint/consistent-type-definitions
  export interface ProvidedContext {
    electronBundle: { main: string; preload: string; backendWorker: string };
  }
}

export default async function setup(project: TestProject): Promise<void> {
  project.provide('electronBundle', await buildElectron());
}
