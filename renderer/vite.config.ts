/** Builds the renderer (React) into renderer/dist, loaded by the Electron window (file://, hence the
 * relative base) and served by the web host. */
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  plugins: [react()],
  logLevel: 'warn',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: true,
    // No inline scripts or data: modules: the CSP allows only files of this origin.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    // One bundle read from the local disk (the app's folder or the web host on this machine): its
    // size is not a download's, so the 500 kB advice for web pages only adds noise to `npm start`.
    chunkSizeWarningLimit: 2048,
  },
});
