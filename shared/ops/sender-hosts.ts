/** The hosts a sender's channel connects to (SMTP and IMAP hosts, the connector URL's host): the
 * list the sync server's address guard checks for server-hosted senders, at creation through
 * ctx.senderHosts (shared/ops/sdrProfiles.create.ts) and at every connection (sync-server/sender-hosts.ts). */
import type { Sender } from '../model/index.ts';

export function senderHostsOf(sender: Pick<Sender, 'channelConfig'>): string[] {
  const c = sender.channelConfig;
  const hosts: string[] = [];
  for (const h of [c.host, c.imapHost]) if (typeof h === 'string' && h.trim() !== '') hosts.push(h.trim());
  if (typeof c.baseUrl === 'string') {
    try {
      hosts.push(new URL(c.baseUrl).hostname);
    } catch {
      // The channel refuses a malformed URL itself.
    }
  }
  return [...new Set(hosts)];
}
