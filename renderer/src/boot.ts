/** The page's module script: the style sheet, and the entry (main.tsx), which runs once the browser
 * has painted the first screen the page's HTML brought (the web host and the desktop window's app:
 * scheme draw it into the page: electron/first-screen-html.ts). A module script runs when the page
 * is parsed, and the entry's code (evaluating it, then adopting the layer, which lays the page out)
 * would come before that first frame: in a trace, the frame with the rows waited for it. The entry's
 * chunk is fetched and compiled meanwhile (a modulepreload link in the page, vite.config.ts). Without
 * the first screen in the page (no workspace, a slow backend), or on another screen, whose entry
 * takes the layer away, the entry runs at once. */
import './styles/app.css';

/** The most the entry waits for that frame (a window the browser does not paint). */
const PAINT_WAIT_MS = 1000;

const start = (() => {
  let started = false;
  return () => {
    if (started) return;
    started = true;
    void import('./main.tsx');
  };
})();

const served = document.querySelector('body > [data-first-paint]') !== null;
const onLeads = location.hash === '' || location.hash === '#/leads' || location.hash === '#/';
if (served && onLeads && document.visibilityState === 'visible') {
  // A task posted from the frame's animation callbacks runs once that frame is painted.
  requestAnimationFrame(() => setTimeout(start, 0));
  setTimeout(start, PAINT_WAIT_MS);
} else start();
