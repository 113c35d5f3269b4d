/**
 * Mailbox sign-in with OAuth on the desktop, as native apps do it (RFC 8252): begin keeps the state
 * and PKCE verifier in this process and, unless the caller gave its own redirectUri, listens on the
 * loopback address on a free port for the provider's redirect (the UI opens the authorization URL
 * in the system browser: Electron's shell.openExternal through the main process, or a tab for the
 * web host). The redirect is checked against the state it was begun with; a mismatch is refused
 * and the sign-in goes on waiting; the user cancelling (error=access_denied), the provider's error
 * or 10 minutes without an answer end it with nothing stored. A code completes it through the
 * operation (`complete`, run by the backend as the member), and the UI follows with
 * sdrProfiles.oauth.status.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OAuthConnectPort, OAuthFlowStatus } from '../../shared/context.ts';
import { createOAuthConnect, memoryPendingStore } from '../../channels/oauth-connect.ts';
import { PENDING_TTL_MS } from '../../channels/oauth.ts';
import type { OAuthClientSettings } from '../../channels/oauth.ts';
import type { Result } from '../bridge.ts';
import { escapeHtml } from '../../shared/html.ts';

export const LOOPBACK_PATH = '/oauth/callback';

type Flow = { workspaceId: string; status: OAuthFlowStatus; server: Server | null; timer: ReturnType<typeof setTimeout> | null };

type Completion = Result<{ id: string; name: string; reconnected: boolean }>;

export type DesktopOAuth = OAuthConnectPort & {
  /**
   * A sign-in another host keeps (the sync server, for the senders its runner hosts): this desktop
   * only receives the redirect on its loopback address and hands the code on. `begin` is given the
   * redirect address; `complete` is the other host's completion.
   */
  beginElsewhere(
    workspaceId: string,
    begin: (redirectUri: string) => Promise<{ authorizationUrl: string; state: string; redirectUri: string; expiresAt: string }>,
    complete: (state: string, code: string) => Promise<Completion>,
  ): Promise<{ authorizationUrl: string; state: string; redirectUri: string; expiresAt: string }>;
  /** Stops every listener (the backend is closing). */
  close(): Promise<void>;
};

const page = (title: string, body: string): string =>
  `<!doctype html><html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer"><title>${escapeHtml(title)}</title></head><body style="font-family:system-ui,sans-serif;max-width:40em;margin:4em auto"><h1>${escapeHtml(title)}</h1><p>${escapeHtml(body)}</p></body></html>`;

export function createDesktopOAuth(opts: {
  settings: OAuthClientSettings;
  /** Runs sdrProfiles.oauth.complete as the signed-in member. */
  complete: (state: string, code: string) => Promise<Result<{ id: string; name: string; reconnected: boolean }>>;
  fetch?: typeof fetch;
  now?: () => number;
  /** How long a sign-in waits for the browser (default 10 minutes, the state's life). */
  timeoutMs?: number;
  log?: (line: string) => void;
}): DesktopOAuth {
  const now = opts.now ?? Date.now;
  const pending = memoryPendingStore(now);
  const flows = new Map<string, Flow>();
  const log = opts.log ?? (() => undefined);

  function finish(state: string, status: OAuthFlowStatus): void {
    const flow = flows.get(state);
    if (!flow) return;
    flow.status = status;
    if (flow.timer) clearTimeout(flow.timer);
    flow.timer = null;
    const server = flow.server;
    flow.server = null;
    // Let the answer to the browser go out first. Then close its connections too: close() alone
    // only stops new ones, and a kept-alive connection in use at that moment (the browser's, or
    // any local client's) would go on reaching this listener after its sign-in ended.
    if (server) setTimeout(() => {
      server.close();
      server.closeAllConnections();
    }, 100).unref();
    // Kept a while for the UI's status question, then forgotten.
    setTimeout(() => flows.delete(state), PENDING_TTL_MS).unref();
  }

  async function listen(complete: (state: string, code: string) => Promise<Completion>, forget: (workspaceId: string, state: string) => Promise<unknown>): Promise<{ server: Server; redirectUri: string; arm: (state: string, workspaceId: string) => void }> {
    let expected: { state: string; workspaceId: string } | null = null;
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const send = (status: number, title: string, body: string) => {
        res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(page(title, body));
      };
      if (req.method !== 'GET' || url.pathname !== LOOPBACK_PATH || !expected) return send(404, 'Not found', 'Nothing is waiting here.');
      const state = url.searchParams.get('state') ?? '';
      // Not the sign-in this listener waits for (RFC 6749 10.12): refused, nothing stored, still waiting.
      if (state !== expected.state) return send(400, 'Sign-in refused', 'This answer does not belong to the sign-in in progress (its state does not match). Nothing was connected.');
      const { workspaceId } = expected;
      const error = url.searchParams.get('error');
      const code = url.searchParams.get('code');
      if (error || !code) {
        void forget(workspaceId, state);
        const message =
          error === 'access_denied'
            ? 'The sign-in was cancelled (access not granted): nothing was connected.'
            : `The provider ended the sign-in with ${(error ?? 'no code').slice(0, 64)}: nothing was connected.`;
        finish(state, { status: 'failed', sdrProfileId: null, message });
        return send(400, 'Mailbox not connected', `${message} You can close this tab.`);
      }
      expected = null;
      void complete(state, code).then(
        (out) => {
          if (out.ok) {
            finish(state, { status: 'connected', sdrProfileId: out.value.id, message: null });
            send(200, 'Mailbox connected', `${out.value.name} is ${out.value.reconnected ? 'reconnected' : 'connected'}. You can close this tab and go back to the app.`);
          } else {
            finish(state, { status: 'failed', sdrProfileId: null, message: out.error.message });
            send(400, 'Mailbox not connected', out.error.message);
          }
        },
        (e: unknown) => {
          const message = e instanceof Error ? e.message : String(e);
          finish(state, { status: 'failed', sdrProfileId: null, message });
          send(500, 'Mailbox not connected', message);
        },
      );
    });
    // A free port on the loopback interface only (RFC 8252 7.3, 8.3).
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const port = (server.address() as AddressInfo).port;
    return { server, redirectUri: `http://127.0.0.1:${port}${LOOPBACK_PATH}`, arm: (state, workspaceId) => (expected = { state, workspaceId }) };
  }

  /** Listens on loopback, begins with that redirect address, and waits for the browser. */
  async function viaLoopback(
    workspaceId: string,
    begin: (redirectUri: string) => Promise<{ authorizationUrl: string; state: string; redirectUri: string; expiresAt: string }>,
    complete: (state: string, code: string) => Promise<Completion>,
    forget: (workspaceId: string, state: string) => Promise<unknown>,
  ) {
    const l = await listen(complete, forget);
    try {
      const out = await begin(l.redirectUri);
      l.arm(out.state, workspaceId);
      const timer = setTimeout(() => {
        void forget(workspaceId, out.state);
        finish(out.state, { status: 'failed', sdrProfileId: null, message: 'The sign-in was not finished within 10 minutes: nothing was connected. Start again.' });
      }, opts.timeoutMs ?? PENDING_TTL_MS);
      timer.unref();
      flows.set(out.state, { workspaceId, status: { status: 'waiting', sdrProfileId: null, message: null }, server: l.server, timer });
      return out;
    } catch (e) {
      l.server.close();
      throw e;
    }
  }

  const core = createOAuthConnect({ hostedBy: 'desktop', pending, settings: opts.settings, now, ...(opts.fetch ? { fetch: opts.fetch } : {}) });

  return {
    hostedBy: 'desktop',
    async begin(req) {
      if (req.redirectUri) {
        // The caller receives the redirect itself and calls complete.
        const out = await core.begin(req);
        flows.set(out.state, { workspaceId: req.workspaceId, status: { status: 'waiting', sdrProfileId: null, message: null }, server: null, timer: null });
        return out;
      }
      return viaLoopback(req.workspaceId, (redirectUri) => core.begin({ ...req, redirectUri }), opts.complete, (ws, state) => pending.take(ws, state));
    },
    beginElsewhere: (workspaceId, begin, complete) => viaLoopback(workspaceId, begin, complete, async () => undefined),
    async complete(req) {
      const out = await core.complete(req);
      return out;
    },
    async status(req) {
      const flow = flows.get(req.state);
      if (!flow || flow.workspaceId !== req.workspaceId) return { status: 'unknown', sdrProfileId: null, message: null };
      return flow.status;
    },
    async close() {
      for (const [state, flow] of flows) {
        if (flow.timer) clearTimeout(flow.timer);
        flow.server?.close();
        flows.delete(state);
      }
      log('OAuth sign-ins in progress were ended (the backend closed).');
    },
  };
}
