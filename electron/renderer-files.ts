/**
 * The built renderer (renderer/dist) as both of its hosts serve it: the web host over HTTP
 * (web-host.ts) and the desktop window's `app:` scheme (app-protocol.ts). Which file a request path
 * names (only a file really inside the folder: no parent segment, encoded or not, no backslash or
 * drive, no link that leads out), its type, and the headers every file or page carries (the policy,
 * no type sniffing, no referrer). The page with the first screen in it is first-screen-html.ts's.
 */
import { realpath as realpathCallback } from 'node:fs';
import { stat } from 'node:fs/promises';
import { extname, join, relative, isAbsolute, sep } from 'node:path';
import { promisify } from 'node:util';

export const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
  '.map': 'application/json',
};

/** What a page answers when the renderer has not been built. */
export const NOT_BUILT = 'The renderer is not built yet: run `npm start` (it builds it) or `npx vite build -c renderer/vite.config.ts`.';

/** The renderer's policy: only its own origin's scripts and styles, no plugins, no framing, as the
 * Electron window's. `socket` is the web host's WebSocket origin (null under Electron, whose page
 * talks over IPC); `styleNonce` allows the one style element of a page that carries the first screen. */
export function contentSecurityPolicy(socket: string | null, styleNonce?: string): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    styleNonce ? `style-src 'self' 'nonce-${styleNonce}'` : "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    socket ? `connect-src 'self' ${socket}` : "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** The headers every response of a file or page carries: the policy (with the first screen's style
 * nonce), no type sniffing, no referrer. */
export function pageHeaders(socket: string | null, nonce?: string): Record<string, string> {
  return {
    'content-security-policy': contentSecurityPolicy(socket, nonce),
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  };
}

/** The headers of the page carrying the first screen: workspace data, kept by no cache, shared or not. */
export function firstScreenPageHeaders(socket: string | null, nonce: string): Record<string, string> {
  return { 'content-type': CONTENT_TYPES['.html'] ?? 'text/html', 'cache-control': 'no-store', ...pageHeaders(socket, nonce) };
}

/** The headers of a file as it is on disk: its type, size, and caching (the build's hashed assets
 * never change; the rest is checked again). */
export function fileHeaders(file: string, size: number, socket: string | null): Record<string, string> {
  const immutable = file.includes(`${sep}assets${sep}`);
  return {
    'content-type': CONTENT_TYPES[extname(file)] ?? 'application/octet-stream',
    'content-length': String(size),
    'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
    ...pageHeaders(socket),
  };
}

/** What a request path names in the renderer's folder: a file (`index`: the page), or why not. */
export type RendererPath =
  | { kind: 'file'; file: string; size: number; index: boolean }
  /** Not a plain path below the folder (a parent segment, a backslash, a drive, a link leading out). */
  | { kind: 'refused' }
  /** Percent-encoding that does not decode. */
  | { kind: 'malformed' }
  /** A file (a name with an extension) that is not there. */
  | { kind: 'missing' }
  /** No index.html: the renderer is not built. */
  | { kind: 'unbuilt' };

const within = (root: string, path: string): boolean => {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
};

/** The operating system's realpath: one call (fs/promises' realpath walks the path with an lstat a
 * component, which doubled the web host's time for a file: README). */
const realpath = promisify(realpathCallback.native);

/** The real path of each build folder, once found (a request then costs one round of file system
 * calls, as before the link check). */
const realRoots = new Map<string, string>();

async function realRoot(root: string): Promise<string | null> {
  const known = realRoots.get(root);
  if (known !== undefined) return known;
  const real = await realpath(root).catch(() => null);
  if (real !== null) realRoots.set(root, real);
  return real;
}

/** The file's size and real path, or null when it is not a file. */
async function fileAt(file: string): Promise<{ size: number; real: string } | null> {
  const [info, real] = await Promise.all([stat(file).catch(() => null), realpath(file).catch(() => null)]);
  return info?.isFile() && real !== null ? { size: info.size, real } : null;
}

/**
 * The file of `root` (the renderer's build folder) that a URL's path names. A path ending in `/`
 * names its index.html; a path without an extension that names no file is a client-side route and
 * gets the page; a missing asset is missing, a missing page means no build. Each segment, decoded,
 * must be a plain name: not empty, `.` or `..`, no backslash (a separator on Windows), colon (a
 * drive, or an NTFS stream) or NUL. The file found must really lie inside the folder (a link in it
 * may not lead out).
 */
export async function resolveRendererPath(root: string, pathname: string): Promise<RendererPath> {
  let rel: string;
  try {
    rel = decodeURIComponent(pathname);
  } catch {
    return { kind: 'malformed' };
  }
  if (!rel.startsWith('/')) return { kind: 'refused' };
  if (rel.endsWith('/')) rel += 'index.html';
  const segments = rel.slice(1).split('/');
  if (segments.some((s) => s === '' || s === '.' || s === '..' || /[\\:\0]/.test(s))) return { kind: 'refused' };
  const index = join(root, 'index.html');
  let file = join(root, ...segments);
  if (!within(root, file)) return { kind: 'refused' };
  let found = await fileAt(file);
  if (!found) {
    if (extname(rel) !== '' && file !== index) return { kind: 'missing' };
    file = index;
    found = await fileAt(file);
    if (!found) return { kind: 'unbuilt' };
  }
  const real = await realRoot(root);
  if (real === null || !within(real, found.real)) return { kind: 'refused' };
  return { kind: 'file', file, size: found.size, index: file === index };
}
