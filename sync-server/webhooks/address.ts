/** The address guard for webhook URLs: the same rule as server-hosted senders (sender-hosts.ts: no
 * loopback, private, link-local, CGNAT or metadata addresses unless ALLOW_PRIVATE_SENDER_HOSTS=1,
 * and never link-local or metadata ones, whatever the setting),
 * checked when an endpoint is created or its URL changed, and again when each delivery connects
 * (guardedFetch), so a name that later resolves into the server's network (DNS rebinding) is
 * refused too. */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { canonicalHost, forbiddenReason, refusedReason } from '../sender-hosts.ts';
import type { SenderHostPolicy } from '../sender-hosts.ts';

/** How long creation waits for the name to resolve; a name that does not resolve (yet) is no
 * refusal: each delivery checks again when it connects. */
const RESOLVE_TIMEOUT_MS = 2_000;

/** The sentence that refuses the URL's host, or null. */
export async function webhookUrlRefusal(url: URL, policy: SenderHostPolicy): Promise<string | null> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const literal = canonicalHost(host);
  let addresses: string[];
  if (isIP(literal)) addresses = [literal];
  else {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<string[]>((resolve) => (timer = setTimeout(() => resolve([]), RESOLVE_TIMEOUT_MS)));
    const resolve = policy.resolve ?? (async (h: string) => (await lookup(h, { all: true, verbatim: true })).map((a) => a.address));
    try {
      addresses = await Promise.race([resolve(host).catch(() => []), late]);
    } finally {
      clearTimeout(timer);
    }
  }
  for (const ip of addresses) {
    const why = refusedReason(ip, policy);
    if (!why) continue;
    const at = `${host} ${ip === host ? 'is' : ip === literal ? `is ${ip},` : `resolves to ${ip},`} ${why}`;
    return forbiddenReason(ip)
      ? `${at}: the sync server never sends webhooks there, whatever ALLOW_PRIVATE_SENDER_HOSTS says (the cloud's metadata service hands out its credentials, and the delivery log keeps the answers). Use a public URL.`
      : `${at}: the sync server does not send webhooks into its own network (loopback, private, link-local and metadata addresses). Use a public URL, or have the operator set ALLOW_PRIVATE_SENDER_HOSTS=1.`;
  }
  return null;
}
