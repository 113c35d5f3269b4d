/** The desktop window's app: scheme (electron/app-protocol.ts), run as Electron runs it: a function
 * from real `Request`s to `Response`s over a renderer build on disk. Its page carries the first screen
 * as the web host's does (the same builder and headers) when the backend answers in time, the plain
 * page otherwise; its files come with their types; nothing outside the build's folder is served
 * (parent segments plain or encoded, backslashes, absolute paths, drives, links leading out), nor
 * another host of the scheme. And the main process's source of the first screen, over a bridge
 * connection of its own (first-screen-html.ts's firstScreenOverBridge), as main has to the backend's
 * thread. */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_URL, appProtocolHandler, isAppPage } from '../../electron/app-protocol.ts';
import type { Result } from '../../electron/bridge.ts';
import type { Backend } from '../../electron/backend/backend.ts';
import { openRpcConnection } from '../../electron/backend/rpc.ts';
import { firstScreenOverBridge } from '../../electron/first-screen-html.ts';
import { contentSecurityPolicy } from '../../electron/renderer-files.ts';
import { startWebHost } from '../../electron/web-host.ts';
import type { WebHost } from '../../electron/web-host.ts';
import { firstScreenFixture, sourceCalling, TEMPLATE } from '../support/first-screen-fixture.ts';

let dir = '';
let dist = '';
let backend: Backend;
let host: WebHost | null = null;

beforeAll(async () => {
  ({ dir, dist, backend } = await firstScreenFixture());
  writeFileSync(join(dir, 'secret.txt'), 'do not serve');
  // Links inside the build that lead out of it: to a file, and to a folder.
  symlinkSync(join(dir, 'secret.txt'), join(dist, 'assets', 'linked.js'));
  symlinkSync(dir, join(dist, 'outside'));
  mkdirSync(join(dist, 'fonts'));
  writeFileSync(join(dist, 'fonts', 'a.woff2'), 'font');
}, 60_000);

afterAll(async () => {
  await host?.close();
  await backend?.close();
});

const nonceOf = (body: string) => /<style nonce="([^"]+)">/.exec(body)?.[1] ?? '';

describe('the app: scheme', () => {
  it('answers the page with the first rows in it when the backend answers in time, with the page headers and no cache', async () => {
    const handle = appProtocolHandler({ rendererDir: dist, firstScreen: backend });
    for (const url of [APP_URL, `${APP_URL}index.html`, `${APP_URL}leads`, 'app://outreach']) {
      const r = await handle(new Request(url));
      expect(r.status, url).toBe(200);
      const body = await r.text();
      expect(body, url).toContain('data-first-paint="leads"');
      expect(body).toContain('data-lead-id');
      expect(body).toContain('&lt;img src=x onerror="alert(1)"&gt;');
      expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(r.headers.get('cache-control')).toBe('no-store');
      expect(r.headers.get('x-content-type-options')).toBe('nosniff');
      expect(r.headers.get('referrer-policy')).toBe('no-referrer');
      // The policy allows the page's one style element by this response's nonce; no socket (IPC).
      const nonce = nonceOf(body);
      expect(nonce).not.toBe('');
      expect(r.headers.get('content-security-policy')).toBe(contentSecurityPolicy(null, nonce));
      expect(r.headers.get('content-security-policy')).toContain("connect-src 'self';");
      expect(body).toContain(`style-src 'self' 'nonce-${nonce}'; img-src`);
    }
  });

  it('sends the head before the backend has answered, the first screen when it does', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const source = sourceCalling(async (op, input) => {
      await held;
      return backend.call(op, input);
    });
    const r = await appProtocolHandler({ rendererDir: dist, firstScreen: source, firstScreenWaitMs: 10_000 })(new Request(APP_URL));
    const reader = r.body?.getReader();
    if (!reader) throw new Error('no body');
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toMatch(/<style nonce="[^"]+">\.x \{ color: red \}<\/style><\/head><body><div id="root"><\/div>$/);
    release();
    let rest = '';
    for (let c = await reader.read(); !c.done; c = await reader.read()) rest += new TextDecoder().decode(c.value);
    expect(rest).toContain('data-lead-id');
    expect(rest.endsWith('</body></html>')).toBe(true);
  });

  it('answers the plain page at once when the backend fails, throws or is slower than the bound', async () => {
    const failing = sourceCalling(async (): Promise<Result<unknown>> => ({ ok: false, error: { code: 'INTERNAL', message: 'broken', details: {} } }));
    const throwing = sourceCalling(() => Promise.reject(new Error('gone')));
    const slow = sourceCalling((op, input) => new Promise((resolve) => setTimeout(() => void backend.call(op, input).then(resolve), 2000)));
    for (const firstScreen of [failing, throwing, slow, null]) {
      const started = performance.now();
      const r = await appProtocolHandler({ rendererDir: dist, firstScreen, firstScreenWaitMs: 150 })(new Request(APP_URL));
      const body = await r.text();
      expect(r.status).toBe(200);
      expect(body).not.toContain('data-first-paint');
      expect(body).toContain('<div id="root"></div></body>');
      expect(performance.now() - started).toBeLessThan(1000);
    }
    // Without a source the page is the build's file as it is.
    const plain = await appProtocolHandler({ rendererDir: dist, firstScreen: null })(new Request(APP_URL));
    expect(await plain.text()).toBe(TEMPLATE);
    expect(plain.headers.get('content-security-policy')).toBe(contentSecurityPolicy(null));
  });

  it('writes the same page as the web host for the same data (one builder)', async () => {
    // The backend's answers, read once, given alike to both (which of the count, campaigns and
    // stages make it into a page depends on when they answer).
    const answers = new Map<string, Result<unknown>>();
    const source = sourceCalling(async (op, input) => {
      const key = JSON.stringify([op, input]);
      const known = answers.get(key) ?? (await backend.call(op, input));
      answers.set(key, known);
      return known;
    });
    await appProtocolHandler({ rendererDir: dist, firstScreen: source, firstScreenWaitMs: 10_000 })(new Request(APP_URL)).then((r) => r.text());
    host = await startWebHost({ backend, rendererDir: dist, port: 0, firstScreen: source });
    const fromHost = await (await fetch(host.url)).text();
    const fromApp = await (await appProtocolHandler({ rendererDir: dist, firstScreen: source })(new Request(APP_URL))).text();
    expect(fromApp).toContain('data-lead-id');
    const same = (body: string) => body.replaceAll(nonceOf(body), 'NONCE');
    expect(same(fromApp)).toBe(same(fromHost));
  });

  it('serves the files of the build with their types and caching, HEAD without a body', async () => {
    const handle = appProtocolHandler({ rendererDir: dist, firstScreen: backend });
    const js = await handle(new Request(`${APP_URL}assets/app.js`));
    expect(js.status).toBe(200);
    expect(await js.text()).toBe('console.log(1)');
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('content-length')).toBe('14');
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(js.headers.get('content-security-policy')).toBe(contentSecurityPolicy(null));
    expect(js.headers.get('x-content-type-options')).toBe('nosniff');
    expect(js.headers.get('referrer-policy')).toBe('no-referrer');
    expect((await handle(new Request(`${APP_URL}assets/app-1.css`))).headers.get('content-type')).toBe('text/css; charset=utf-8');
    const font = await handle(new Request(`${APP_URL}fonts/a.woff2`));
    expect(font.headers.get('content-type')).toBe('font/woff2');
    expect(font.headers.get('cache-control')).toBe('no-cache');
    const head = await handle(new Request(APP_URL, { method: 'HEAD' }));
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    expect(head.headers.get('content-length')).toBe(String(TEMPLATE.length));
  });

  it('answers 404 for a missing file or another host, 405 for other methods', async () => {
    const handle = appProtocolHandler({ rendererDir: dist, firstScreen: backend });
    for (const url of [`${APP_URL}assets/missing.js`, `${APP_URL}favicon.ico`, 'app://elsewhere/', 'app://elsewhere/assets/app.js', 'other://outreach/']) {
      expect((await handle(new Request(url))).status, url).toBe(404);
    }
    const post = await handle(new Request(APP_URL, { method: 'POST', body: 'x' }));
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  it('refuses every path that leads outside the build: parent segments, encoded or not, backslashes, absolute paths, drives, NUL, links', async () => {
    const handle = appProtocolHandler({ rendererDir: dist, firstScreen: backend });
    const refused = [
      `${APP_URL}..%2fsecret.txt`,
      `${APP_URL}%2e%2e%2fsecret.txt`,
      `${APP_URL}assets/%2E%2E%2F%2E%2E%2Fsecret.txt`,
      `${APP_URL}..\\secret.txt`,
      `${APP_URL}assets\\..\\..\\secret.txt`,
      `${APP_URL}%5c..%5csecret.txt`,
      `${APP_URL}/etc/passwd`,
      `${APP_URL}%2fetc%2fpasswd`,
      `${APP_URL}${encodeURIComponent(join(dir, 'secret.txt'))}`,
      `${APP_URL}C:%5cWindows%5cwin.ini`,
      `${APP_URL}C:/Windows/win.ini`,
      `${APP_URL}index.html%00.js`,
      `${APP_URL}assets/linked.js`,
      `${APP_URL}outside/secret.txt`,
    ];
    for (const url of refused) {
      const r = await handle(new Request(url));
      expect(r.status, url).toBe(403);
      expect(await r.text()).not.toContain('do not serve');
    }
    // The URL parser itself takes plain and encoded dot segments away: what is left is not there.
    for (const url of [`${APP_URL}../secret.txt`, `${APP_URL}%2e%2e/secret.txt`, `${APP_URL}assets/.%2E/.%2e/secret.txt`]) {
      const r = await handle(new Request(url));
      expect(r.status, url).toBe(404);
      expect(await r.text()).not.toContain('do not serve');
    }
    expect((await handle(new Request(`${APP_URL}%E0%A4%A`))).status).toBe(400);
  });

  it('says the renderer is not built when there is no page', async () => {
    for (const path of ['', 'index.html', 'leads']) {
      const r = await appProtocolHandler({ rendererDir: join(dir, 'nowhere'), firstScreen: backend })(new Request(`${APP_URL}${path}`));
      expect(r.status, path).toBe(503);
      expect(await r.text()).toMatch(/not built/);
    }
  });

  it('knows the page of the window on any route, and nothing else', () => {
    for (const url of [APP_URL, `${APP_URL}#/tasks`, `${APP_URL}?reload=1#/leads?lead=1`]) expect(isAppPage(url), url).toBe(true);
    for (const url of [`${APP_URL}index.html`, `${APP_URL}assets/app.js`, 'app://elsewhere/', 'http://outreach/', 'file:///index.html', 'not a url']) expect(isAppPage(url), url).toBe(false);
  });
});

describe("main's source of the first screen, over a bridge connection of its own", () => {
  it('reads the session and sync status as pushed, calls over the bridge, and follows the session closing', async () => {
    const source = await firstScreenOverBridge((send) => openRpcConnection(backend, send));
    try {
      const info = source.session.info();
      expect(info.state === 'open' && info.workspaceName).toBe('Acme & <Co>');
      expect(source.session.syncStatus().mode).toBe('local');
      const tags = await source.call('tags.getAll', {});
      expect(tags.ok && JSON.stringify(tags.value)).toContain('<i>hot</i>');
      const handle = appProtocolHandler({ rendererDir: dist, firstScreen: source });
      const page = await (await handle(new Request(APP_URL))).text();
      expect(page).toContain('data-lead-id');
      expect(page).toContain('Acme &amp; &lt;Co&gt;');

      await backend.session.close();
      for (let i = 0; i < 100 && source.session.info().state !== 'none'; i++) await new Promise((r) => setTimeout(r, 10));
      expect(source.session.info().state).toBe('none');
      const plain = await (await handle(new Request(APP_URL))).text();
      expect(plain).not.toContain('data-first-paint');
      expect(plain).toContain('<div id="root"></div></body>');
    } finally {
      source.close();
    }
    const closed = await source.call('tags.getAll', {});
    expect(!closed.ok && closed.error.code).toBe('DISCONNECTED');
  });
});
