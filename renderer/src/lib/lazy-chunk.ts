/** Code loaded after the first screen: a component in a chunk of its own, drawn through React.lazy
 * (suspending until it is loaded), and fetched ahead as soon as the first screen has drawn its data
 * and the browser is idle, so that opening it later does not wait for its code. */
import { lazy } from 'react';
import type { ComponentType } from 'react';
import { afterFirstScreen } from '../app/first-screen.ts';

const chunks: (() => Promise<unknown>)[] = [];

/** `load` imports the chunk and picks the component. A failed load is forgotten, so that the next
 * attempt (a render, after a failed preload) fetches again. */
export function lazyChunk<P extends object>(load: () => Promise<ComponentType<P>>) {
  let loading: Promise<{ default: ComponentType<P> }> | null = null;
  const get = () =>
    (loading ??= load().then(
      (component) => ({ default: component }),
      (e: unknown) => {
        loading = null;
        throw e;
      },
    ));
  chunks.push(get);
  return lazy(get);
}

afterFirstScreen(() => {
  const loadAll = () => {
    for (const get of chunks) void get().catch(() => undefined);
  };
  if (typeof requestIdleCallback === 'function') requestIdleCallback(loadAll, { timeout: 2000 });
  else setTimeout(loadAll, 200);
});
