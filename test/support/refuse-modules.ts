/** Preloaded into a child process (`--import`): loading a module whose URL ends with one of
 * REFUSE_MODULES (comma-separated) throws, so a test can show that a path of a command line does not
 * load them (the CLI answers bad arguments before it loads the server). */
import { registerHooks } from 'node:module';

const refused = (process.env.REFUSE_MODULES ?? '').split(',').filter(Boolean);

registerHooks({
  resolve(specifier, context, nextResolve) {
    const found = nextResolve(specifier, context);
    if (refused.some((m) => found.url.endsWith(m))) throw new Error(`A refused module was loaded: ${found.url}`);
    return found;
  },
});
