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
 * operator's own network; the test suites' local servers). */
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

/** Why the runner must not connect to `ip`, or null when it is a public address. */
export function blockedReason(ip: string): string | null {
  const family = isIP(ip);
  if (family === 0) return 'not an IP address';
  if (family === 6) {
    const v4 = embeddedV4(ip);
    if (v4) return blockedReason(v4);
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const r of ranges) if (r.type === type && r.list.check(ip, type)) return r.why;
  return null;
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

function refusal(host: string, ip: string, why: string): ChannelFailure {
  return new ChannelFailure(
    'unauthorized',
    `${host} ${ip === host ? 'is' : `resolves to ${ip},`} ${why}: the sync server does not connect its senders into its own network. Use a public host, or have the operator set ALLOW_PRIVATE_SENDER_HOSTS=1.`,
  );
}

/** Resolves `host` and refuses it when any of its addresses is not public. */
export async function checkHost(host: string, policy: SenderHostPolicy): Promise<void> {
  if (policy.allowPrivate) return;
  const name = host.replace(/^\[|\]$/g, '');
  let addresses: string[];
  if (isIP(name)) addresses = [name];
  else {
    try {
      addresses = await (policy.resolve ?? resolveAll)(name);
    } catch (e) {
      throw new ChannelFailure('failed', `${name} could not be resolved (${e instanceof Error ? e.message : String(e)})`);
    }
  }
  if (addresses.length === 0) throw new ChannelFailure('failed', `${name} has no address`);
  for (const ip of addresses) {
    const why = blockedReason(ip);
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
  return {
    async refusal(hosts) {
      if (policy.allowPrivate) return null;
      for (const host of hosts) {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), timeoutMs)));
        const checked = checkHost(host, policy).then(
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
    },
  };
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for sockets (net.connect, undici) that refuses non-public addresses at connect time. */
export function guardedLookup(policy: SenderHostPolicy): (hostname: string, options: LookupOneOptions | LookupAllOptions, callback: LookupCallback) => void {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true, verbatim: true }, (err, addresses) => {
      if (err) return callback(err, []);
      if (!policy.allowPrivate) {
        for (const a of addresses) {
          const why = blockedReason(a.address);
          if (why) return callback(Object.assign(refusal(hostname, a.address, why), { code: 'EPRIVATEHOST' }), []);
        }
      }
      if ('all' in options && options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
      callback(null, first.address, first.family);
    });
  };
}

/** fetch whose connections go through guardedLookup (for the HTTP connector). */
export function guardedFetch(policy: SenderHostPolicy): typeof fetch {
  if (policy.allowPrivate) return fetch;
  const dispatcher = new Agent({ connect: { lookup: guardedLookup(policy) } });
  return ((input: Parameters<typeof fetch>[0], init?: RequestInit) => {
    // An IP literal is not looked up: check it here.
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const why = isIP(host) ? blockedReason(host) : null;
    if (why) return Promise.reject(refusal(host, host, why));
    return undiciFetch(url, { ...(init as object), dispatcher } as Parameters<typeof undiciFetch>[1]);
  }) as unknown as typeof fetch;
}

/** nodemailer's getSocket: a TCP connection made through guardedLookup (TLS is nodemailer's part). */
export function guardedSmtpSocket(policy: SenderHostPolicy): (options: { host?: string; port?: number | string }, callback: (err: Error | null, socket?: { connection: Socket } | false) => void) => void {
  return (options, callback) => {
    if (policy.allowPrivate) return callback(null, false);
    const host = (options.host ?? '').replace(/^\[|\]$/g, '');
    const why = isIP(host) ? blockedReason(host) : null;
    if (why) return callback(refusal(host, host, why));
    const socket = netConnect({ host, port: Number(options.port ?? 587), lookup: guardedLookup(policy) });
    const fail = (e: Error): void => callback(e);
    socket.once('error', fail);
    socket.once('connect', () => {
      socket.off('error', fail);
      callback(null, { connection: socket });
    });
  };
}

/** Wraps a channel host so that every call for a sender first checks the sender's hosts. */
export function guardChannelHost(host: ChannelHost, policy: SenderHostPolicy): ChannelHost {
  if (policy.allowPrivate) return host;
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
