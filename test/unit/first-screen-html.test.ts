/** The page's HTML with the leads table's first screen in it (electron/first-screen-html.ts, served by
 * the web host): drawn from the backend's data with every value escaped, no style attribute (the
 * CSP's nonce allows one style element, scripts stay 'self' only), never cached, only for requests
 * naming the host itself (DNS rebinding gets the plain page), and the plain page at once when the
 * backend fails or is slow. */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Result } from '../../electron/bridge.ts';
import type { Backend } from '../../electron/backend/backend.ts';
import { startWebHost } from '../../electron/web-host.ts';
import type { WebHost } from '../../electron/web-host.ts';
import { toHtml } from '../../renderer/src/screens/leads/first-screen.ts';
import { firstScreenFixture, LINK, sourceCalling, TEMPLATE } from '../support/first-screen-fixture.ts';

type Got = { status: number; headers: Record<string, string | string[] | undefined>; body: string; ms: number };

/** A raw request with the given Host header. */
function get(host: WebHost, path: string, hostHeader?: string, method = 'GET'): Promise<Got> {
  const url = new URL(host.url);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path, method, headers: hostHeader ? { host: hostHeader } : {} }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, ms: performance.now() - started }));
    });
    req.on('error', reject);
    req.end();
  });
}

let dist = '';
let backend: Backend;
let host: WebHost;
const hosts: WebHost[] = [];

beforeAll(async () => {
  ({ dist, backend } = await firstScreenFixture());
  host = await startWebHost({ backend, rendererDir: dist, port: 0 });
  hosts.push(host);
}, 60_000);

afterAll(async () => {
  for (const h of hosts) await h.close();
  await backend?.close();
});

const own = (h: WebHost) => new URL(h.url).host;

describe('the first screen in the page', () => {
  it('carries the first rows to a request naming the host, every value escaped, without style attributes or a cache', async () => {
    for (const name of [own(host), `localhost:${host.port}`]) {
      for (const path of ['/', '/index.html', '/leads']) {
        const r = await get(host, path, name);
        expect(r.status).toBe(200);
        expect(r.body).toContain('data-first-paint="leads"');
        expect(r.headers['cache-control']).toBe('no-store');
      }
    }
    const r = await get(host, '/', own(host));
    const layer = r.body.slice(r.body.indexOf('<div id="root"></div>'));
    // The rows: both leads, newest first, the markup in their names shown as text.
    expect(layer.indexOf('data-lead-id')).toBeGreaterThan(0);
    expect(layer).toContain('>&lt;img src=x onerror="alert(1)"&gt; &lt;/style&gt;&lt;script&gt;alert(2)&lt;/script&gt;<');
    expect(layer).toContain('title="&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &lt;/style&gt;');
    expect(layer).toContain('>"&gt;&lt;b&gt;bold&lt;/b&gt;<');
    expect(layer).toContain('Acme &amp; &lt;Co&gt;');
    expect(layer).toContain('&lt;i&gt;hot&lt;/i&gt;');
    expect(layer.indexOf('&lt;img')).toBeLessThan(layer.indexOf('Ann Lee'));
    expect(layer).not.toMatch(/<(img|script|b|i)[\s>]/);
    // No style attribute (the CSP refuses them): places and colours are classes of one style element,
    // which the response's nonce allows, in the header's policy and in the page's own.
    expect(layer).not.toMatch(/\sstyle=/);
    const nonce = /<style nonce="([^"]+)">/.exec(layer)?.[1] ?? '';
    expect(nonce).not.toBe('');
    expect((layer.match(/<style/g) ?? []).length).toBe(1);
    const csp = String(r.headers['content-security-policy']);
    expect(csp).toContain(`style-src 'self' 'nonce-${nonce}'`);
    expect(r.body).toContain(`style-src 'self' 'nonce-${nonce}'; img-src`);
    // Scripts stay this origin's files only: no inline script, with or without the nonce.
    expect(csp).toContain("script-src 'self';");
    expect(csp).not.toMatch(/unsafe-inline|script-src[^;]*nonce/);
    // The style sheet is in the page (a request less before the first frame), under the same nonce.
    expect(r.body).toContain(`<style nonce="${nonce}">.x { color: red }</style></head>`);
    expect(r.body).not.toContain(LINK);
    // A new nonce each time.
    expect((await get(host, '/', own(host))).headers['content-security-policy']).not.toBe(csp);
  });

  it('gives the plain page to a request naming another host (DNS rebinding), and to HEAD', async () => {
    for (const name of [`evil.example:${host.port}`, 'evil.example', `127.0.0.1.evil.example:${host.port}`]) {
      const r = await get(host, '/', name);
      expect(r.status).toBe(200);
      expect(r.body).toBe(TEMPLATE);
      expect(r.body).not.toContain('Ann Lee');
      expect(String(r.headers['content-security-policy'])).toContain("style-src 'self';");
    }
    const head = await get(host, '/', own(host), 'HEAD');
    expect(head.headers['cache-control']).toBe('no-cache');
  });

  it('gives the plain page at once when the backend fails or is slow', async () => {
    const failing = sourceCalling(async (): Promise<Result<unknown>> => ({ ok: false, error: { code: 'INTERNAL', message: 'broken', details: {} } }));
    const throwing = sourceCalling(() => Promise.reject(new Error('gone')));
    const slow = sourceCalling((op, input) => new Promise((resolve) => setTimeout(() => void backend.call(op, input).then(resolve), 2000)));
    for (const firstScreen of [failing, throwing, slow]) {
      const h = await startWebHost({ backend, rendererDir: dist, port: 0, firstScreen, firstScreenWaitMs: 150 });
      hosts.push(h);
      const r = await get(h, '/', own(h));
      expect(r.status).toBe(200);
      expect(r.body).not.toContain('data-first-paint');
      expect(r.body).toContain('<div id="root"></div></body>');
      expect(r.ms).toBeLessThan(1000);
    }
  });

  it('writes only safe style values into the style sheet, and refuses event handler attributes', () => {
    const { html, css } = toHtml({ tag: 'div', style: { background: 'red;} body { display: none', color: '#ff000022', width: 'url(//evil.example/x)' }, children: ['a < b & c'] });
    expect(css).toBe('[data-first-paint] .fp0, [data-first-paint].fp0 { color: #ff000022 }');
    expect(html).toBe('<div class="fp0">a &lt; b &amp; c</div>');
    expect(() => toHtml({ tag: 'div', attrs: { onclick: 'alert(1)' }, children: [] })).toThrow();
  });
});
