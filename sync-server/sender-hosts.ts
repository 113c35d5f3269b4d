/** Where the sync server's runner may connect for a member's sender (SMTP, IMAP, HTTP connector with
 * channelConfig.hostedBy 'server'): not into the server's own network. A member could otherwise
 * point a sender at 127.0.0.1, 10.x, the cloud metadata address or a database next to the server and
 * use the runner to reach it (server-side request forgery).
 *
 * Refused: loopback, private (RFC 1918, IPv6 ULA), link-local (169.254/16 with the metadata address,
 * fe80::/10), CGNAT (100.64/10), "this network", benchmarking, multicast and reserved addresses, and
 * IPv4 addresses embedded in IPv6 (mapped, NAT64, 6to4). A host name is resolved and every address
 * checked before a sender is used, and again when the connection is made (the `lookup` of the
 * sockets), so a name that resolves to a public address first and a private one later (DNS
 * rebinding) is refused too. ALLOW_PRIVATE_SENDER_HOSTS=1 allows them (a mail server on the
 * operator's own network; the test suites' local servers), except link-local and cloud metadata
 * addresses (169.254/16, fe80::/10, fd00:ec2::254, 100.100.100.200, and the IPv4 ones inside IPv6),
 * which no mail server or webhook receiver has and which hand out the cloud's credentials: they
 * are refused whatever the setting, however they are spelled (2852039166, 0xa9fea9fe,
 * 0251.0376.0251.0376, ::ffff:a9fe:a9fe) and whatever name resolves to them. */
import { lookup as dnsLookup } from 'node:dns';
import type { LookupAddress, LookupAllOptions, LookupOneOptions } from 'node:dns';
import { BlockList, connect as netConnect, isIP } from 'node:net';
import type { Socket } from 'node:net';
import { Agent, fetch as undiciFetch } from 'undici';
import { ChannelFailure } from '../shared/engine/channel.ts';
import type { Channel, ChannelHost } from '../shared/engine/channel.ts';
import type { SenderHostCheck } from '../shared/context.ts';
import { senderHostsOf } from '../shared/ops/sender-hosts.ts';
import type { Sender } from '../shared/model/index.ts';

const V4: [string, number, string][] = [
  ['0.0.0.0', 8, 'a "this network" address'],
  ['10.0.0.0', 8, 'a private address'],
  ['100.64.0.0', 10, 'a carrier-grade NAT address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local address (cloud metadata lives there)'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.0.0.0', 24, 'an IETF protocol address'],
  ['192.168.0.0', 16, 'a private address'],
  ['198.18.0.0', 15, 'a benchmarking address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved address'],
];
const V6: [string, number, string][] = [
  ['::', 128, 'the unspecified address'],
  ['::1', 128, 'a loopback address'],
  ['fc00::', 7, 'a private (unique local) address'],
  ['fe80::', 10, 'a link-local address'],
  ['ff00::', 8, 'a multicast address'],
];
type Range = { list: BlockList; type: 'ipv4' | 'ipv6'; why: string };
const range = (type: 'ipv4' | 'ipv6') => ([net, bits, why]: [string, number, string]): Range => {
  const list = new BlockList();
  list.addSubnet(net, bits, type);
  return { list, type, why };
};
const ranges: Range[] = [...V4.map(range('ipv4')), ...V6.map(range('ipv6'))];
/** Refused whatever ALLOW_PRIVATE_SENDER_HOSTS says: link-local, where the cloud metadata services
 * answer (AWS, GCP, Azure, Oracle at 169.254.169.254; AWS's IPv6 one at fd00:ec2::254; Alibaba's at
 * 100.100.100.200). */
const FORBIDDEN: Range[] = [
  range('ipv4')(['169.254.0.0', 16, 'a link-local address (cloud metadata lives there)']),
  range('ipv4')(['100.100.100.200', 32, 'a cloud metadata address']),
  range('ipv6')(['fe80::', 10, 'a link-local address']),
  range('ipv6')(['fd00:ec2::254', 128, 'a cloud metadata address']),
];

/** The IPv4 address inside an IPv6 one (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16). */
function embeddedV4(ip: string): string | null {
  const lower = ip.toLowerCase();
  const dotted = /^(?:::ffff:(?:0:)?|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted?.[1]) return dotted[1];
  const words = expand(lower);
  if (!words) return null;
  const hex = (a: number, b: number) => `${a >> 8}.${a & 255}.${b >> 8}.${b & 255}`;
  const [w0, w1, w2, w3, w4, w5, w6, w7] = words;
  if (w0 === 0 && w1 === 0 && w2 === 0 && w3 === 0 && w4 === 0 && (w5 === 0xffff || w5 === 0) && w6 !== undefined && w7 !== undefined && (w5 === 0xffff || w6 !== 0)) return hex(w6, w7);
  if (w0 === 0x64 && w1 === 0xff9b && w6 !== undefined && w7 !== undefined) return hex(w6, w7);
  if (w0 === 0x2002 && w1 !== undefined && w2 !== undefined) return hex(w1, w2);
  return null;
}

/** The eight 16-bit words of an IPv6 address. */
function expand(ip: string): number[] | null {
  if (isIP(ip) !== 6 || ip.includes('.')) return null;
  const [head = '', tail = ''] = ip.split('::');
  const h = head ? head.split(':') : [];
  const t = ip.includes('::') ? (tail ? tail.split(':') : []) : [];
  const fill = ip.includes('::') ? 8 - h.length - t.length : 0;
  const words = [...h, ...Array<string>(fill).fill('0'), ...t].map((w) => parseInt(w, 16));
  return words.length === 8 && words.every((w) => Number.isInteger(w)) ? words : null;
}

function reasonIn(list: readonly Range[], ip: string): string | null {
  const family = isIP(ip);
  if (family === 0) return 'not an IP address';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const r of list) if (r.type === type && r.list.check(ip, type)) return r.why;
  if (family === 6) {
    const v4 = embeddedV4(ip);
    if (v4) return reasonIn(list, v4);
  }
  return null;
}

/** Why the runner must not connect to `ip`, or null when it is a public address. */
export function blockedReason(ip: string): string | null {
  return reasonIn(ranges, ip);
}

/** Why nothing may connect to `ip` even with ALLOW_PRIVATE_SENDER_HOSTS=1 (link-local, metadata). */
export function forbiddenReason(ip: string): string | null {
  return isIP(ip) === 0 ? null : reasonIn(FORBIDDEN, ip);
}

/** The reason `policy` refuses `ip`, or null. */
export function refusedReason(ip: string, policy: Pick<SenderHostPolicy, 'allowPrivate'>): string | null {
  return policy.allowPrivate ? forbiddenReason(ip) : blockedReason(ip);
}

/** A host as a connection would read it: an IPv4 address in any spelling the URL standard and
 * inet_aton accept (2852039166, 0xa9fea9fe, 0251.0376.0251.0376, 169.254.43518) as dotted
 * decimal, an IPv6 one without brackets, a name lowercased. */
export function canonicalHost(host: string): string {
  const bare = host.trim().replace(/^\[|\]$/g, '');
  if (isIP(bare)) return bare.toLowerCase();
  try {
    const parsed = new URL(`http://${bare.includes(':') ? `[${bare}]` : bare}/`).hostname.replace(/^\[|\]$/g, '');
    return parsed || bare;
  } catch {
    return bare;
  }
}

export type SenderHostPolicy = {
  /** ALLOW_PRIVATE_SENDER_HOSTS: private and local addresses are allowed. */
  allowPrivate: boolean;
  /** Resolves a host name to all its addresses (default dns.lookup); tests give their own. */
  resolve?: (host: string) => Promise<string[]>;
};

/** The operator setting: ALLOW_PRIVATE_SENDER_HOSTS=1 (or true/yes). */
export const privateHostsAllowed = (env: NodeJS.ProcessEnv = process.env): boolean => /^(1|true|yes)$/i.test(env.ALLOW_PRIVATE_SENDER_HOSTS?.trim() ?? '');

const resolveAll = (host: string): Promise<string[]> =>
  new Promise((resolve, reject) => {
    dnsLookup(host, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses.map((a) => a.address))));
  });

/** The guard's sentence for `host` (as given) at `ip`: what it is, and what to do. */
export function refusalSentence(host: string, ip: string, why: string, what = 'connect its senders into'): string {
  const at = ip === host ? 'is' : canonicalHost(host) === ip ? `is ${ip},` : `resolves to ${ip},`;
  return forbiddenReason(ip)
    ? `${host} ${at} ${why}: the sync server never connects there, whatever ALLOW_PRIVATE_SENDER_HOSTS says (the cloud's metadata service hands out its credentials). Use a public host.`
    : `${host} ${at} ${why}: the sync server does not ${what} its own network. Use a public host, or have the operator set ALLOW_PRIVATE_SENDER_HOSTS=1.`;
}

function refusal(host: string, ip: string, why: string): ChannelFailure {
  return new ChannelFailure('unauthorized', refusalSentence(host, ip, why));
}

/** Resolves `host` and refuses it when any of its addresses is not public (with
 * ALLOW_PRIVATE_SENDER_HOSTS=1: when any is link-local or metadata; a name that does not resolve is
 * then left to the connection, which checks again). */
export async function checkHost(host: string, policy: SenderHostPolicy): Promise<void> {
  const name = host.replace(/^\[|\]$/g, '');
  const literal = canonicalHost(name);
  let addresses: string[];
  if (isIP(literal)) addresses = [literal];
  else {
    try {
      addresses = await (policy.resolve ?? resolveAll)(name);
    } catch (e) {
      if (policy.allowPrivate) return;
      throw new ChannelFailure('failed', `${name} could not be resolved (${e instanceof Error ? e.message : String(e)})`);
    }
  }
  if (addresses.length === 0) {
    if (policy.allowPrivate) return;
    throw new ChannelFailure('failed', `${name} has no address`);
  }
  for (const ip of addresses) {
    const why = refusedReason(ip, policy);
    if (why) throw refusal(name, ip, why);
  }
}

/** The hosts a sender's channel connects to: SMTP and IMAP hosts, the connector's base URL host
 * (the same list sdrProfiles.create has checked). */
export const senderHosts = (sender: Sender): string[] => senderHostsOf(sender);

/** How long sdrProfiles.create waits for a host name to resolve (it runs inside the workspace's
 * transaction); a slower answer is no refusal: the runner checks again when it connects. */
const CHECK_TIMEOUT_MS = 2_000;

/**
 * The check operations ask through ctx.senderHosts (sdrProfiles.create, sdrProfiles.checkHosts):
 * the guard's sentence when this server's runner would refuse one of the hosts, else null. A name
 * that does not resolve (yet) is no refusal: the runner backs off, tries again and says so.
 */
export function senderHostCheck(policy: SenderHostPolicy, timeoutMs = CHECK_TIMEOUT_MS): SenderHostCheck {
  const strictest = (p: SenderHostPolicy) => async (hosts: readonly string[]): Promise<string | null> => {
      for (const host of hosts) {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), timeoutMs)));
        const checked = checkHost(host, p).then(
          () => null,
          (e: unknown) => (e instanceof ChannelFailure && e.kind === 'unauthorized' ? e.message : null),
        );
        try {
          const refusal = await Promise.race([checked, late]);
          if (refusal) return refusal;
        } finally {
          clearTimeout(timer);
        }
      }
      return null;
  };
  return {
    refusal: strictest(policy),
    // Link-local and metadata hosts are refused outright: no setting makes them usable.
    forbidden: strictest({ ...policy, allowPrivate: true }),
  };
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for sockets (net.connect, undici) that refuses non-public addresses at connect time. */
export function guardedLookup(policy: SenderHostPolicy): (hostname: string, options: LookupOneOptions | LookupAllOptions, callback: LookupCallback) => void {
  // The policy's resolver when it has one (the same answers as the checks before connecting).
  const all = (hostname: string, options: LookupOneOptions | LookupAllOptions, done: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void): void => {
    if (!policy.resolve) return dnsLookup(hostname, { ...options, all: true, verbatim: true }, done);
    policy.resolve(hostname).then(
      (list) => done(null, list.map((address) => ({ address, family: isIP(address) === 6 ? 6 : 4 }))),
      (e: unknown) => done(Object.assign(e instanceof Error ? e : new Error(String(e)), { code: (e as { code?: string }).code ?? 'ENOTFOUND' }), []),
    );
  };
  return (hostname, options, callback) => {
    all(hostname, options, (err, addresses) => {
      if (err) return callback(err, []);
      for (const a of addresses) {
        const why = refusedReason(a.address, policy);
        if (why) return callback(Object.assign(refusal(hostname, a.address, why), { code: 'EPRIVATEHOST' }), []);
      }
      if ('all' in options && options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
      callback(null, first.address, first.family);
    });
  };
}

/** fetch whose connections go through guardedLookup (for the HTTP connector and webhooks). */
export function guardedFetch(policy: SenderHostPolicy): typeof fetch {
  const dispatcher = new Agent({ connect: { lookup: guardedLookup(policy) } });
  return ((input: Parameters<typeof fetch>[0], init?: RequestInit) => {
    // An IP literal is not looked up: check it here.
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const why = isIP(host) ? refusedReason(host, policy) : null;
    if (why) return Promise.reject(refusal(host, host, why));
    return undiciFetch(url, { ...(init as object), dispatcher } as Parameters<typeof undiciFetch>[1]);
  }) as unknown as typeof fetch;
}

/** nodemailer's getSocket: a TCP connection made through guardedLookup (TLS is nodemailer's part). */
export function guardedSmtpSocket(policy: SenderHostPolicy): (options: { host?: string; port?: number | string; connectionTimeout?: number }, callback: (err: Error | null, socket?: { connection: Socket } | false) => void) => void {
  return (options, callback) => {
    const host = canonicalHost(options.host ?? '');
    const why = isIP(host) ? refusedReason(host, policy) : null;
    if (why) return callback(refusal(options.host ?? host, host, why));
    const socket = netConnect({ host, port: Number(options.port ?? 587), lookup: guardedLookup(policy) });
    // nodemailer's own connection timeout starts once it has the socket: this one covers connecting.
    const timeoutMs = options.connectionTimeout ?? 120_000;
    const timer = setTimeout(() => socket.destroy(Object.assign(new Error(`Connection to ${host} timed out after ${timeoutMs / 1000} s`), { code: 'ETIMEDOUT' })), timeoutMs);
    const fail = (e: Error): void => {
      clearTimeout(timer);
      callback(e);
    };
    socket.once('error', fail);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.off('error', fail);
      callback(null, { connection: socket });
    });
  };
}

/** Wraps a channel host so that every call for a sender first checks the sender's hosts. */
export function guardChannelHost(host: ChannelHost, policy: SenderHostPolicy): ChannelHost {
  const guarded = new WeakMap<Channel, Channel>();
  const check = async (sender: Sender) => {
    for (const h of senderHosts(sender)) await checkHost(h, policy);
  };
  const wrap = (channel: Channel): Channel => {
    const known = guarded.get(channel);
    if (known) return known;
    const w: Channel = {
      ...channel,
      send: async (sender, lead, action, ref) => (await check(sender), channel.send(sender, lead, action, ref)),
      poll: async (sender, cursor) => (await check(sender), channel.poll(sender, cursor)),
      readPost: async (sender, url, part, budget) => (await check(sender), channel.readPost(sender, url, part, budget)),
      canSendMessage: (sender) => channel.canSendMessage(sender),
      ...(channel.idempotentSends !== undefined ? { idempotentSends: channel.idempotentSends } : {}),
      ...(channel.accountInfo ? { accountInfo: async (sender: Sender) => (await check(sender), channel.accountInfo?.(sender) ?? Promise.reject(new Error('no accountInfo'))) } : {}),
      ...(channel.findSent ? { findSent: async (sender: Sender, ref: string) => (await check(sender), channel.findSent?.(sender, ref) ?? Promise.resolve({ status: 'unknown' as const })) } : {}),
    };
    guarded.set(channel, w);
    return w;
  };
  return {
    ...host,
    channelFor: (sender) => {
      const c = host.channelFor(sender);
      return c ? wrap(c) : null;
    },
  };
}
