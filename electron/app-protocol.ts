/**
 * The desktop window's page comes from `app://outreach/`, a privileged scheme of the app's own,
 * instead of `file://`: so its page (index.html) can carry the leads table's first screen as the web
 * host's does (the same builder, first-screen-html.ts, and the same headers, renderer-files.ts), and
 * so that its origin, which its policy's `'self'` names, is the app's files only rather than every
 * local file. main.ts registers the scheme before the app is ready (`APP_SCHEME_PRIVILEGES`) and
 * hands `appProtocolHandler` to `protocol.handle` of the window's session: a function from a web
 * `Request` to a `Response`, tested without Electron (test/unit/app-protocol.test.ts). What only
 * Chromium shows (the scheme's registration, its loading of the page, storage under the new origin)
 * is in the README ("Desktop app or web host").
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { CustomScheme } from 'electron';
import { pageWithFirstScreen, styleNonce } from './first-screen-html.ts';
import type { FirstScreenSource } from './first-screen-html.ts';
import { fileHeaders, firstScreenPageHeaders, NOT_BUILT, resolveRendererPath } from './renderer-files.ts';

/** The page's origin is `app://outreach`: its localStorage (hidden columns, folded stages, reminders
 * and notices already told) is kept under it. Another scheme or host would be a new origin, and
 * that storage would start empty again (as it did once, coming from file://: README). */
export const APP_SCHEME = 'app';
export const APP_HOST = 'outreach';
/** The window's page. */
export const APP_URL = `${APP_SCHEME}://${APP_HOST}/`;

/**
 * As the web's own schemes: standard (relative URLs resolve, the page has an origin and storage of
 * its own), secure (a secure context, as file: is), fetch allowed for the page's own files (its
 * module scripts are fetched in CORS mode; same-origin only: no `corsEnabled`), and V8's code cache
 * for its scripts. No CSP bypass, no service workers.
 */
export const APP_SCHEME_PRIVILEGES: CustomScheme = {
  scheme: APP_SCHEME,
  privileges: { standard: true, secure: true, supportFetchAPI: true, codeCache: true },
};

/** Whether `url` is the window's page, with any route (hash) or query. */
export function isAppPage(url: string): boolean {
  try {
    const u = new URL(url);
    u.hash = '';
    u.search = '';
    return u.href === APP_URL;
  } catch {
    return false;
  }
}

export type AppProtocolOptions = {
  /** The Vite build output (renderer/dist). */
  rendererDir: string;
  /** Where the page's first screen is read from; null: the plain page. */
  firstScreen: FirstScreenSource | null;
  /** How long the page waits for the first screen (first-screen-html.ts's default: 150 ms). */
  firstScreenWaitMs?: number;
  log?: (line: string) => void;
};

const text = (status: number, body: string, extra: Record<string, string> = {}): Response =>
  new Response(body, { status, headers: { 'content-type': 'text/plain; charset=utf-8', ...extra } });

/** Answers the window's requests for `app://outreach/...`: the renderer's files, and its page with
 * the first screen in it. Nothing else: another host of the scheme, a path outside the folder, a
 * method other than GET and HEAD. */
export function appProtocolHandler(opts: AppProtocolOptions): (request: Request) => Promise<Response> {
  const root = resolve(opts.rendererDir);
  const log = opts.log ?? (() => undefined);
  return async (request) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return text(405, 'Method not allowed', { allow: 'GET, HEAD' });
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      return text(400, 'Bad request');
    }
    if (url.protocol !== `${APP_SCHEME}:` || url.host !== APP_HOST) return text(404, 'Not found');
    // A URL of a scheme Node does not know as special may have an empty path (Chromium's has '/').
    const found = await resolveRendererPath(root, url.pathname === '' ? '/' : url.pathname);
    switch (found.kind) {
      case 'refused':
        return text(403, 'Forbidden');
      case 'malformed':
        return text(400, 'Bad request');
      case 'missing':
        return text(404, 'Not found');
      case 'unbuilt':
        return text(503, NOT_BUILT);
      case 'file':
        break;
    }
    if (found.index && request.method === 'GET' && opts.firstScreen) {
      const nonce = styleNonce();
      const page = await pageWithFirstScreen(root, opts.firstScreen, nonce, { waitMs: opts.firstScreenWaitMs, log: (line) => log(`app: ${line}`) });
      if (page) {
        const encoder = new TextEncoder();
        // The head at once: Chromium fetches the scripts while the backend answers.
        const body = new ReadableStream<Uint8Array>({
          async start(controller) {
            controller.enqueue(encoder.encode(page.head));
            controller.enqueue(encoder.encode(await page.rest));
            controller.close();
          },
        });
        return new Response(body, { status: 200, headers: firstScreenPageHeaders(null, nonce) });
      }
    }
    const headers = fileHeaders(found.file, found.size, null);
    if (request.method === 'HEAD') return new Response(null, { status: 200, headers });
    return new Response(await readFile(found.file), { status: 200, headers });
  };
}
