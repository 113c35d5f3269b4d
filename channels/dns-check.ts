/**
 * The sending domain's DNS, checked before an email sender's first send (channels/verify-sender.ts):
 * SPF (does the domain allow the SMTP host to send its mail), DKIM (is a signing key published under
 * the selector the user names, else the provider's usual ones) and DMARC (is there a policy). The
 * records are read and evaluated by mailauth, the library mail servers use to verify incoming mail;
 * nothing here parses a record. Each finding is a line saying what to fix in plain words.
 *
 * The resolver is a setting: DNS_SERVERS (comma-separated `host` or `host:port`, e.g.
 * 127.0.0.1:5353) or the `servers` option; by default the system's resolvers. Tests point it at a
 * DNS server they run on loopback.
 */
import { isIP } from 'node:net';
import { Resolver } from 'node:dns/promises';
import type { DNSResolver } from 'mailauth';
import addressparser from 'nodemailer/lib/addressparser';
import { spf } from 'mailauth/lib/spf/index.js';
import getDmarcRecord from 'mailauth/lib/dmarc/get-dmarc-record.js';
import { getPublicKey } from 'mailauth/lib/tools.js';
import type { SenderCheckLine } from '../shared/context.ts';

export type DnsResolve = DNSResolver;

/** DNS_SERVERS as a list, or null when unset. A malformed entry is refused: a check that silently
 * asked another resolver would report on records nobody meant. */
export function dnsServersFromEnv(value: string | undefined): string[] | null {
  const text = value?.trim() ?? '';
  if (!text) return null;
  const servers = text.split(',').map((s) => s.trim()).filter((s) => s !== '');
  for (const s of servers) {
    const m = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(s) ?? /^([^:]+)(?::(\d{1,5}))?$/.exec(s);
    const host = m?.[1] ?? (isIP(s) === 6 ? s : '');
    const port = m?.[2] !== undefined ? Number(m[2]) : 53;
    if (isIP(host) === 0 || port < 1 || port > 65535) {
      throw new Error(`DNS_SERVERS: "${s}" is not an IP address with an optional port (e.g. 127.0.0.1:5353 or [::1]:53).`);
    }
  }
  return servers;
}

/** A resolver for the checks: the servers given, else DNS_SERVERS, else the system's. */
export function dnsResolver(servers?: readonly string[] | null, opts: { timeoutMs?: number } = {}): DnsResolve {
  const resolver = new Resolver({ timeout: opts.timeoutMs ?? 3_000, tries: 2 });
  const list = servers ?? dnsServersFromEnv(process.env.DNS_SERVERS);
  if (list && list.length > 0) resolver.setServers([...list]);
  return async (name, rrtype) => (await resolver.resolve(name, rrtype)) as string[][] | string[];
}

/** What we know of the big providers: the SPF include they document and the DKIM selectors they sign with. */
type Provider = { name: string; smtpHost: RegExp; spfInclude: string; dkimSelectors: string[]; dkimHow: string };

const PROVIDERS: readonly Provider[] = [
  {
    name: 'Google Workspace',
    smtpHost: /(^|\.)(gmail|google|googlemail)\.com$/i,
    spfInclude: '_spf.google.com',
    dkimSelectors: ['google'],
    dkimHow: 'In the Google Admin console open Apps > Google Workspace > Gmail > Authenticate email, generate a key, publish it as the TXT record it shows, then click Start authentication.',
  },
  {
    name: 'Microsoft 365',
    smtpHost: /(^|\.)(office365|outlook|office)\.com$/i,
    spfInclude: 'spf.protection.outlook.com',
    dkimSelectors: ['selector1', 'selector2'],
    dkimHow: 'In Microsoft Defender open Email & collaboration > Policies > Email authentication settings > DKIM, publish the two CNAME records (selector1 and selector2) it shows, then enable signing for the domain.',
  },
];

/** Selectors other providers and mail servers commonly sign with, tried when the user names none. */
const COMMON_SELECTORS = ['default', 'dkim', 'mail', 's1', 's2', 'k1', 'selector1', 'selector2', 'google', 'smtp'];

export function providerOf(smtpHost: string): Provider | null {
  return PROVIDERS.find((p) => p.smtpHost.test(smtpHost.trim())) ?? null;
}

/** The selectors a check tries: the one the user named, else the provider's, then the common ones. */
export function dkimSelectorsFor(smtpHost: string, named: string | null): string[] {
  if (named) return [named];
  return [...new Set([...(providerOf(smtpHost)?.dkimSelectors ?? []), ...COMMON_SELECTORS])];
}

type DnsError = Error & { code?: string };
const NO_RECORD = new Set(['ENOTFOUND', 'ENODATA', 'EBADNAME']);
const isNoRecord = (e: unknown): boolean => NO_RECORD.has((e as DnsError)?.code ?? '');
const reason = (e: unknown): string => (e instanceof Error ? ((e as DnsError).code ?? e.message) : String(e));

/** The bare address of a From setting ("Sam <sam@acme.test>" -> sam@acme.test). */
export const bareAddress = (from: string): string => addressparser(from, { flatten: true })[0]?.address?.trim() || from.trim();

export const domainOfAddress = (address: string): string => (bareAddress(address).split('@').pop() ?? '').trim().toLowerCase();

/** The addresses the SMTP host has in this resolver's DNS (an IP literal is its own address). */
async function addressesOf(host: string, resolve: DnsResolve): Promise<string[]> {
  if (isIP(host) !== 0) return [host];
  const out: string[] = [];
  for (const type of ['A', 'AAAA']) {
    try {
      const rows = await resolve(host, type);
      for (const r of rows) if (typeof r === 'string') out.push(r);
    } catch (e) {
      if (!isNoRecord(e)) throw e;
    }
  }
  return out;
}

async function checkSpf(from: string, domain: string, smtpHost: string, resolve: DnsResolve): Promise<SenderCheckLine> {
  const provider = providerOf(smtpHost);
  let addresses: string[];
  try {
    addresses = await addressesOf(smtpHost, resolve);
  } catch (e) {
    return { check: 'spf', status: 'warn', message: `SPF could not be checked: the address of ${smtpHost} could not be looked up (${reason(e)}).`, fix: 'Check again in a few minutes; if it persists, check the DNS servers this host uses (DNS_SERVERS).' };
  }
  const suggestion = provider ? `include:${provider.spfInclude}` : addresses[0] ? `${isIP(addresses[0]) === 6 ? 'ip6' : 'ip4'}:${addresses[0]}` : `the include your mail provider documents`;
  // Evaluated as a receiver would for mail from the SMTP host's address(es); the best result counts.
  const rank = ['pass', 'neutral', 'softfail', 'fail', 'permerror', 'temperror', 'none'];
  let best: { result: string; rr: string | null; comment: string } | null = null;
  for (const ip of addresses.slice(0, 4)) {
    const r = await spf({ sender: from, ip, helo: smtpHost, mta: 'sender-check', resolver: resolve, maxElapsedTime: 10_000 });
    const cur = { result: r.status.result, rr: r.rr ?? null, comment: r.status.comment ?? '' };
    if (!best || rank.indexOf(cur.result) < rank.indexOf(best.result)) best = cur;
  }
  if (!best) {
    const r = await spf({ sender: from, ip: '192.0.2.1', helo: smtpHost, mta: 'sender-check', resolver: resolve, maxElapsedTime: 10_000 });
    best = { result: r.status.result, rr: r.rr ?? null, comment: r.status.comment ?? '' };
  }
  // A provider's outgoing servers are not its submission host (smtp.office365.com): the record
  // naming the provider's documented include is what the provider asks for.
  const namesProvider = provider !== null && best.rr !== null && best.rr.toLowerCase().split(/\s+/).includes(`include:${provider.spfInclude}`);
  if (best.result === 'pass' || namesProvider) {
    return { check: 'spf', status: 'pass', message: `SPF: ${domain} allows ${provider ? provider.name : smtpHost} to send its mail.`, fix: null };
  }
  switch (best.result) {
    case 'none':
      return { check: 'spf', status: 'fail', message: `SPF: ${domain} publishes no SPF record, so receivers cannot tell that ${smtpHost} may send its mail.`, fix: `Add a TXT record at ${domain}: "v=spf1 ${suggestion} ~all".` };
    case 'permerror':
      return { check: 'spf', status: 'fail', message: `SPF: the record of ${domain} is invalid${best.comment ? ` (${best.comment})` : ''}, so receivers ignore it.`, fix: `Correct the TXT record at ${domain}${best.rr ? ` (now "${best.rr}")` : ''}: one record starting v=spf1, at most 10 lookups, with ${suggestion}.` };
    case 'temperror':
      return { check: 'spf', status: 'warn', message: `SPF of ${domain} could not be read (${best.comment || 'DNS error'}).`, fix: 'Check again in a few minutes; if it persists, check the domain\'s DNS servers.' };
    default:
      return {
        check: 'spf', status: 'fail',
        message: `SPF does not include your SMTP host's sender (${smtpHost}${addresses[0] ? `, ${addresses[0]}` : ''}): receivers will treat its mail from ${domain} as ${best.result === 'fail' ? 'forged' : 'suspicious'}.`,
        fix: `Add ${suggestion} to the SPF record at ${domain}${best.rr ? ` (now "${best.rr}")` : ''}.`,
      };
  }
}

async function checkDkim(domain: string, smtpHost: string, named: string | null, resolve: DnsResolve): Promise<SenderCheckLine> {
  const provider = providerOf(smtpHost);
  const selectors = dkimSelectorsFor(smtpHost, named);
  const how = provider ? provider.dkimHow : 'Publish the DKIM key your mail provider or mail server gives you as a TXT record at <selector>._domainkey.' + domain + ', and turn signing on there.';
  let lookupError: string | null = null;
  for (const selector of selectors) {
    const name = `${selector}._domainkey.${domain}`;
    try {
      const key = await getPublicKey('DKIM', name, 1024, resolve);
      const size = key.keyType === 'rsa' && key.modulusLength ? ` (RSA, ${key.modulusLength} bits)` : key.keyType ? ` (${key.keyType})` : '';
      if (key.testing) return { check: 'dkim', status: 'warn', message: `DKIM: a key is published at ${name}${size}, marked for testing (t=y): receivers may ignore its signatures.`, fix: `Remove t=y from the record at ${name} once signing works.` };
      return { check: 'dkim', status: 'pass', message: `DKIM: a signing key is published at ${name}${size}.`, fix: null };
    } catch (e) {
      const code = (e as DnsError)?.code ?? '';
      if (isNoRecord(e)) continue;
      if (code === 'ESHORTKEY') return { check: 'dkim', status: 'fail', message: `DKIM: the key at ${name} is shorter than 1024 bits; receivers refuse its signatures.`, fix: `Publish a 2048-bit key at ${name}. ${how}` };
      if (code.startsWith('EINVALID')) {
        return { check: 'dkim', status: 'fail', message: `DKIM: the record at ${name} is not a usable key (${e instanceof Error ? e.message : code}; an empty p= means it was revoked).`, fix: `Publish the current key at ${name}. ${how}` };
      }
      lookupError = reason(e);
    }
  }
  if (lookupError) {
    return { check: 'dkim', status: 'warn', message: `DKIM of ${domain} could not be read (${lookupError}).`, fix: 'Check again in a few minutes; if it persists, check the domain\'s DNS servers.' };
  }
  if (named) {
    return { check: 'dkim', status: 'fail', message: `DKIM: no key is published at ${named}._domainkey.${domain}, so mail signed with selector ${named} fails DKIM.`, fix: `${how} If your provider signs with another selector (the s= of the DKIM-Signature header of a sent email), enter that one and check again.` };
  }
  return {
    check: 'dkim', status: 'warn',
    message: `DKIM: no key was found at the selectors tried (${selectors.join(', ')}) of ${domain}; unsigned mail is more likely to land in spam.`,
    fix: `${how} If your provider signs with another selector (the s= of the DKIM-Signature header of a sent email), enter it and check again.`,
  };
}

async function checkDmarc(domain: string, resolve: DnsResolve): Promise<SenderCheckLine> {
  const suggested = `"v=DMARC1; p=none; rua=mailto:dmarc-reports@${domain}"`;
  let record: Awaited<ReturnType<typeof getDmarcRecord>>;
  try {
    record = await getDmarcRecord(domain, resolve);
  } catch (e) {
    return { check: 'dmarc', status: 'warn', message: `DMARC of ${domain} could not be read (${reason(e)}).`, fix: 'Check again in a few minutes; if it persists, check the domain\'s DNS servers.' };
  }
  if (!record) {
    return { check: 'dmarc', status: 'warn', message: `DMARC: ${domain} publishes no DMARC record. Gmail and Yahoo require one of senders of bulk mail, and without it spoofed mail in your name is not refused.`, fix: `Add a TXT record at _dmarc.${domain}: ${suggested}; tighten p= to quarantine once the reports show only your own mail.` };
  }
  const where = record.isOrgRecord ? ` (inherited from ${record.recordDomain})` : '';
  if (record.p === 'quarantine' || record.p === 'reject') {
    return { check: 'dmarc', status: 'pass', message: `DMARC: ${domain} has policy p=${record.p}${where}.`, fix: null };
  }
  if (record.p === 'none') {
    return { check: 'dmarc', status: 'pass', message: `DMARC: ${domain} has policy p=none${where}: receivers report on your mail but do not act on failures.`, fix: null };
  }
  return { check: 'dmarc', status: 'warn', message: `DMARC: the record of ${domain}${where} has no valid policy (p=), so receivers treat it as p=none at most.`, fix: `Replace the TXT record at _dmarc.${record.recordDomain} with ${suggested}.` };
}

/** The SPF, DKIM and DMARC lines of a sender sending as `from` through `smtpHost`. */
export async function checkSendingDomain(input: { from: string; smtpHost: string; dkimSelector: string | null; resolve: DnsResolve }): Promise<SenderCheckLine[]> {
  const domain = domainOfAddress(input.from);
  if (!domain || isIP(domain.replace(/^\[|\]$/g, '')) !== 0) {
    return [{ check: 'spf', status: 'warn', message: `The From address ${bareAddress(input.from)} has no domain name, so its SPF, DKIM and DMARC cannot be checked.`, fix: 'Send from an address at your own domain.' }];
  }
  const guard = (check: SenderCheckLine['check']) => (e: unknown): SenderCheckLine => ({ check, status: 'warn', message: `${check.toUpperCase()} of ${domain} could not be checked (${reason(e)}).`, fix: 'Check again in a few minutes.' });
  return Promise.all([
    checkSpf(bareAddress(input.from), domain, input.smtpHost, input.resolve).catch(guard('spf')),
    checkDkim(domain, input.smtpHost, input.dkimSelector, input.resolve).catch(guard('dkim')),
    checkDmarc(domain, input.resolve).catch(guard('dmarc')),
  ]);
}
