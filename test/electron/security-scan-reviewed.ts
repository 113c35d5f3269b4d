/**
 * Electronegativity's findings on the desktop app that were reviewed and kept, each with its reason
 * (`npm run lint:electron`, test/electron/security-scan.ts). A finding matches an entry by check,
 * file and a piece of the reported line's code, so a new use of the same API elsewhere is a new
 * finding to review. A finding that is a real problem is fixed in the code, not listed here.
 */
export type Reviewed = {
  check: string;
  /** Relative to the project; null for a finding about the whole app. */
  file: string | null;
  /** Text on the reported line. */
  code: string | null;
  reason: string;
};

/** Checks not run, and why. */
export const EXCLUDED_CHECKS: { check: string; reason: string }[] = [
  {
    check: 'AvailableSecurityFixesGlobalCheck',
    reason:
      "Downloads Electron's release list from GitHub at every run to compare versions: a network call in every `npm test` (and offline the scanner crashes on it). The Electron version is the one package.json pins; it moves with dependency updates and its security releases are read there.",
  },
];

const CSP_SELF =
  "The policy allows scripts, styles and connections from 'self' only, objects and base URIs from nowhere. The CSP evaluator marks script-src 'self' as possibly weak because a site that also serves JSONP endpoints, AngularJS or user uploads from its own origin can be made to run them. The renderer's origin serves none of those: it is the app's own files, its one script is the Vite bundle, and nothing in the renderer turns data into markup (no innerHTML or dangerouslySetInnerHTML; React escapes text). The page comes from the app's own privileged scheme, app://outreach/ (electron/app-protocol.ts, Electron's security checklist, item 18), so 'self' is the app's build folder only, not every local file; its handler serves nothing outside that folder (test/unit/app-protocol.test.ts). The page with the first screen carries the same policy with one style nonce per response, which main's header listener leaves in place.";

export const REVIEWED: Reviewed[] = [
  { check: 'CSP_GLOBAL_CHECK', file: 'electron/main.ts', code: `'Content-Security-Policy': ["default-src 'self'; script-src 'self'`, reason: CSP_SELF },
  { check: 'CSP_GLOBAL_CHECK', file: 'renderer/index.html', code: 'http-equiv="Content-Security-Policy"', reason: CSP_SELF },
  {
    check: 'OPEN_EXTERNAL_JS_CHECK',
    file: 'electron/main.ts',
    code: 'void shell.openExternal(u.toString())',
    reason:
      "main's only call of shell.openExternal. The URL is parsed first and only http:, https: and mailto: leave the app (never file:, javascript:, smb: or a custom scheme); IPC asking for it is answered for our own page's top frame only. test/electron/main.test.ts ('refuses navigation and new windows...', 'a page that is not ours...').",
  },
  {
    check: 'OPEN_EXTERNAL_JS_CHECK',
    file: 'electron/bridge-client.ts',
    code: 'transport.openExternal(String(url))',
    reason: "The renderer's side of the bridge: it only forwards the URL to main (over IPC) or, in a browser tab, to window.open with noopener. main decides what opens (see electron/main.ts above).",
  },
  {
    check: 'OPEN_EXTERNAL_JS_CHECK',
    file: 'renderer/src/screens/lead/LeadPanel.tsx',
    code: 'bridge.openExternal(`mailto:${d.email}`)',
    reason: "A lead's email address opens the member's mail app through the bridge; main allows mailto: only.",
  },
  {
    check: 'OPEN_EXTERNAL_JS_CHECK',
    file: 'renderer/src/screens/lead/LeadPanel.tsx',
    code: 'bridge.openExternal(d.socialUrl)',
    reason: "A lead's profile link opens in the system browser through the bridge. It is imported data, so main's scheme check is what keeps a javascript: or file: link from opening; tested with both.",
  },
  {
    check: 'OPEN_EXTERNAL_JS_CHECK',
    file: 'renderer/src/screens/senders/OAuthSignIn.tsx',
    code: 'bridge.openExternal(begun.authorizationUrl)',
    reason:
      "The mailbox sign-in opens the provider's authorization page in the system browser (RFC 8252: never in the app's own window). The URL is the backend's answer to sdrProfiles.oauth.begin, built from the provider's discovery document, whose issuer must be https (http on loopback only); main's scheme check applies as for every link. test/integration/oauth-desktop-flow.test.ts.",
  },
  {
    check: 'AUXCLICK_JS_CHECK',
    file: 'electron/main.ts',
    code: 'const w = new BrowserWindow({',
    reason:
      "A middle-click opens a link through the window-open handler, like target=_blank and window.open: main's handler refuses every new window and sends only web and mail links to the system browser (test: 'refuses navigation and new windows'). Disabling the auxclick event would take nothing more away.",
  },
  {
    check: 'PRELOAD_JS_CHECK',
    file: 'electron/main.ts',
    code: 'preload: PRELOAD,',
    reason:
      'The preload runs sandboxed with context isolation and exposes exactly one object, window.outreach (the typed bridge), through one contextBridge call; no ipcRenderer, require or process reaches the page, and its bundle requires nothing but electron. Tested with the real preload and its bundle (test/electron/main.test.ts, bundle.test.ts).',
  },
];
