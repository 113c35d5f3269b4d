/**
 * The page's HTML with the leads table's first screen in it: navigation, top bar, the screen's header
 * and filters and the first page's rows, read from the backend as the page's entry would ask for them
 * (the session, the first page in the default order, the tags, the count, the campaigns and stages
 * of the filters) and drawn by the description the entry draws from (renderer/src/screens/leads/
 * first-screen.ts), so the browser paints the rows with its first frame, before any script has run;
 * the entry adopts that layer (first-rows.ts). Every value is escaped; the rows' places and the
 * pills' colours are classes of one `<style>` element allowed by a nonce of this response. One
 * builder for both who serve the page: the web host (web-host.ts) and the desktop window's app:
 * scheme (app-protocol.ts), which reads the backend over a connection to its thread.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Bridge, Result, ServerMessage, SessionInfo, SyncStatus } from './bridge.ts';
import { createBridgeClient } from './bridge-client.ts';
import { CAMPAIGNS_INPUT, LEAD_PAGE_SIZE, leadCountInput, STAGES_INPUT, TAGS_INPUT } from '../renderer/src/lib/workspace-inputs.ts';
import { layoutOf } from '../renderer/src/screens/leads/columns.ts';
import { firstScreenNode, SERVED_HEIGHT, toHtml } from '../renderer/src/screens/leads/first-screen.ts';
import type { FirstScreen, Named, Tag } from '../renderer/src/screens/leads/first-screen.ts';
import type { LeadRow } from '../renderer/src/screens/leads/lead-pager.ts';
import { searchInput } from '../renderer/src/screens/leads/selection.ts';
import { DEFAULT_FILTERS } from '../renderer/src/state/lead-filters.ts';

/** What the first screen is read from: the backend (the web host's, in its process), or the Electron
 * main process's connection to the backend's thread (`firstScreenOverBridge`). */
export type FirstScreenSource = {
  call(op: string, input: unknown): Promise<Result<unknown>>;
  session: { info(): SessionInfo; syncStatus(): SyncStatus };
};

/** How long the page's HTML may wait for the backend: past it, the page comes without the first
 * screen, and its entry asks for it as it always did. */
export const FIRST_SCREEN_WAIT_MS = 150;

/** Where the first screen goes in the built index.html: right after React's (empty) root. */
const ROOT_DIV = '<div id="root"></div>';

/** The first screen's data, or null when no workspace is open, a query failed, or the page and the
 * tags took longer than `waitMs` (the count, campaigns and stages are shown if they are there by
 * then; the entry draws them when they answer otherwise). */
export async function readFirstScreen(source: FirstScreenSource, waitMs = FIRST_SCREEN_WAIT_MS): Promise<FirstScreen | null> {
  const session = source.session.info();
  if (session.state !== 'open') return null;
  const filters = DEFAULT_FILTERS;
  const ask = <T>(op: string, input: unknown) => source.call(op, input).then((r) => (r.ok ? (r.value as T) : undefined), () => undefined);
  const needed = Promise.all([
    // As the pager asks for it (lead-pager.ts).
    ask<{ leads: LeadRow[]; nextCursor: string | null }>('campaigns.leads.search', { ...searchInput(filters), limit: LEAD_PAGE_SIZE }),
    ask<{ tags: Tag[] }>('tags.getAll', TAGS_INPUT),
  ]);
  // Asked after the rows, which they must not hold back.
  const later: { count?: number; campaigns?: Named[]; stages?: Named[] } = {};
  void ask<{ count: number }>('campaigns.leads.count', leadCountInput(filters)).then((v) => (later.count = v?.count));
  void ask<{ basicCampaigns: Named[] }>('campaigns.getBasic', CAMPAIGNS_INPUT).then((v) => (later.campaigns = v?.basicCampaigns));
  void ask<{ stages: Named[] }>('pipelineStages.getAll', STAGES_INPUT).then((v) => (later.stages = v?.stages));
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), waitMs)));
  const answered = await Promise.race([needed, late]);
  clearTimeout(timer);
  if (!answered) return null;
  const [page, tags] = answered;
  if (!page || !tags || page.leads.length === 0) return null;
  return {
    session,
    sync: source.session.syncStatus(),
    filters,
    // Every column: the columns a person hid are known to their window only (which then draws its own).
    layout: layoutOf(false, new Set()),
    tags: new Map(tags.tags.map((t) => [t.id, t])),
    count: later.count,
    campaigns: later.campaigns,
    stages: later.stages,
    rows: { loadedCount: page.leads.length, hasMore: page.nextCursor !== null, loading: false, error: null, row: (i) => page.leads[i] },
    checked: new Set(),
    scrollTop: 0,
    height: SERVED_HEIGHT,
    overscan: 0,
  };
}

/** A nonce for one response's `<style>` element. */
export const styleNonce = (): string => randomBytes(18).toString('base64');

/** The page's style sheet link (the build's one for the entry). */
const STYLESHEET = /<link rel="stylesheet" crossorigin href="\.\/assets\/([\w.-]+\.css)">/;

/** The built index.html cut where the first screen goes, its CSP meta tag allowing the style
 * elements of `nonce` (a page's policies all apply: the header's and the meta tag's), and its style
 * sheet in the page (`readStyles` reads it from the build's assets): a link is a request the first
 * frame waits for, to a host that is busy answering the page's first queries. Null when the page
 * has no place for the first screen. */
export async function splitIndexHtml(template: string, nonce: string, readStyles: (file: string) => Promise<string | null>): Promise<{ head: string; tail: string } | null> {
  const at = template.indexOf(ROOT_DIV);
  if (at < 0) return null;
  let head = template.slice(0, at + ROOT_DIV.length).replace(/(<meta http-equiv="Content-Security-Policy" content="[^"]*style-src 'self')/, `$1 'nonce-${nonce}'`);
  const link = STYLESHEET.exec(head);
  const css = link?.[1] ? await readStyles(link[1]) : null;
  if (link && css !== null && !/<\/style/i.test(css)) head = head.replace(link[0], () => `<style nonce="${nonce}">${css}</style>`);
  return { head, tail: template.slice(at + ROOT_DIV.length) };
}

/** The first screen as markup for the page's body: its style sheet, then the layer. */
export function firstScreenHtml(screen: FirstScreen, nonce: string): string {
  const { html, css } = toHtml(firstScreenNode(screen));
  return `<style nonce="${nonce}">${css}</style>${html}`;
}

/** The page as the web host and the desktop window's `app:` scheme serve it: the build's index.html
 * (in `root`) with its head ready at once (the browser fetches the scripts while the backend answers)
 * and the rest, with the first screen in it when `source` answered within `waitMs`, plain otherwise.
 * Null when the page has no place for the first screen (then the file is served as it is). */
export async function pageWithFirstScreen(
  root: string,
  source: FirstScreenSource,
  nonce: string,
  opts: { waitMs?: number; log?: (line: string) => void } = {},
): Promise<{ head: string; rest: Promise<string> } | null> {
  const readStyles = (file: string) => readFile(join(root, 'assets', file), 'utf8').catch(() => null);
  const parts = await splitIndexHtml(await readFile(join(root, 'index.html'), 'utf8'), nonce, readStyles);
  if (!parts) return null;
  const rest = readFirstScreen(source, opts.waitMs)
    .catch((e: Error) => {
      opts.log?.(`the first screen was not read: ${e.message}`);
      return null;
    })
    .then((screen) => (screen ? firstScreenHtml(screen, nonce) : '') + parts.tail);
  return { head: parts.head, rest };
}

/** One connection to the backend, as the backend's thread gives main one (backend-thread.ts) and
 * rpc.ts opens one in-process: bridge messages in, `ServerMessage`s out through `send`. */
export type BackendConnection = { receive(raw: unknown): void; close(): void };

/** A first screen source over a bridge connection of its own: the Electron main process's way to
 * the backend in its thread. Calls go over the bridge protocol (bridge-client.ts); the session and
 * the sync status are the last the backend pushed, so `readFirstScreen` reads them at once.
 * Resolves once both are known (the session asked for, the sync status pushed when the connection
 * opens). After `close`, calls answer DISCONNECTED. */
export async function firstScreenOverBridge(connect: (send: (msg: ServerMessage) => void) => BackendConnection): Promise<FirstScreenSource & { close(): void }> {
  let connection: BackendConnection | null = null;
  const client = createBridgeClient({
    platform: 'electron',
    send: (msg) => connection?.receive(msg),
    // Nothing of this connection opens links or shows notifications.
    openExternal: () => undefined,
    notify: () => Promise.resolve(false),
  });
  connection = connect((msg) => client.receive(msg));
  const bridge: Bridge = client.bridge;
  const call: FirstScreenSource['call'] = bridge.call;
  let sync: SyncStatus | null = null;
  let stopSync: () => void = () => undefined;
  const firstSync = new Promise<SyncStatus>((resolve) => {
    stopSync = bridge.syncStatus.subscribe((s) => {
      sync = s;
      resolve(s);
    });
  });
  let info: SessionInfo | null = null;
  const stopSession = bridge.session.subscribe((i) => (info = i));
  try {
    // Pushed before the answer: older than it; after: newer (one ordered connection).
    info = await bridge.session.get();
  } catch (e) {
    stopSession();
    stopSync();
    connection?.close();
    throw e;
  }
  const opened = info;
  const synced = await firstSync;
  const closed: Result<unknown> = { ok: false, error: { code: 'DISCONNECTED', message: 'The first screen connection is closed.', details: {} } };
  return {
    call: (op, input) => (connection ? call(op, input) : Promise.resolve(closed)),
    session: { info: () => info ?? opened, syncStatus: () => sync ?? synced },
    close() {
      stopSession();
      stopSync();
      connection?.close();
      connection = null;
    },
  };
}
