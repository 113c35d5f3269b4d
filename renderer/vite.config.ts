/** Builds the renderer (React) into renderer/dist, served to the Electron window from app://outreach/
 * (electron/app-protocol.ts) and by the web host. The base stays relative (`./`), which both serve
 * from their root and which a build loaded from disk (file://) also resolves. */
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';
import type { Plugin, Rollup } from 'vite';

/** The page's module script (boot.ts) imports the entry (main.tsx) once the first screen is painted,
 * and the entry imports the app (app/mount.tsx: React and the first screen) once it has asked for the
 * first screen's data. Links in the page let the browser fetch and compile those chunks, and the
 * chunks they import, while the page loads instead of when they are imported. */
function preloadApp(): Plugin {
  return {
    name: 'outreach:preload-app',
    transformIndexHtml: {
      order: 'post',
      handler(_html, ctx) {
        const bundle: Rollup.OutputBundle | undefined = ctx.bundle;
        if (!bundle) return undefined;
        const chunks = Object.values(bundle).filter((c): c is Rollup.OutputChunk => c.type === 'chunk');
        const holding = (module: string) => {
          const c = chunks.find((c) => c.moduleIds.some((id) => id.endsWith(module)));
          if (!c) throw new Error(`outreach:preload-app: no chunk holds renderer${module}`);
          return c;
        };
        const files: string[] = [];
        const add = (c: Rollup.OutputChunk) => {
          if (files.includes(c.fileName)) return;
          files.push(c.fileName);
          for (const i of c.imports) {
            const dep = bundle[i];
            if (dep?.type === 'chunk') add(dep);
          }
        };
        add(holding('/src/main.tsx'));
        add(holding('/src/app/mount.tsx'));
        return files
          .filter((f) => f !== ctx.chunk?.fileName)
          .map((f) => ({ tag: 'link', attrs: { rel: 'modulepreload', crossorigin: true, href: `./${f}` }, injectTo: 'head' as const }));
      },
    },
  };
}

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  plugins: [react(), preloadApp()],
  logLevel: 'warn',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: true,
    // No inline scripts or data: modules: the CSP allows only files of this origin.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    // dist/.vite/manifest.json: which chunk holds which module (test/e2e/lazy-screens.test.ts).
    manifest: true,
    // Chunks read from the local disk (the app's folder or the web host on this machine): their
    // size is not a download's, so the 500 kB advice for web pages only adds noise to `npm start`.
    // What counts is what the first screen waits for (the UI benchmark prints it).
    chunkSizeWarningLimit: 2048,
  },
});
