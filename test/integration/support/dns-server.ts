/**
 * A real DNS server for tests (dns2) on 127.0.0.1, on a free UDP port, answering from a zone the
 * test sets and changes: A, AAAA and TXT records by name; an unknown name is NXDOMAIN, a known name
 * without the asked type is NODATA, as an authoritative server answers. The sender check's resolver
 * is pointed at it (`servers`), and so are the address guard's look-ups (`resolve`: DNS rebinding,
 * names that point at metadata addresses), never the machine's DNS.
 */
import { generateKeyPairSync } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import dns2 from 'dns2';

const { Packet } = dns2;

export type Zone = Record<string, { A?: string[]; AAAA?: string[]; TXT?: string[] }>;

export type TestDns = {
  /** For dnsResolver(servers): ['127.0.0.1:<port>']. */
  servers: string[];
  /** Replaces the records of a name (undefined: removes the name). */
  set(name: string, records: Zone[string] | undefined): void;
  /** Points a name at addresses (IPv4 as A records, IPv6 as AAAA), replacing what it had. */
  point(name: string, addresses: readonly string[]): void;
  /** Every address of a name, as the server answers it now (ENOTFOUND when it has none). */
  resolve(host: string): Promise<string[]>;
  /** The names asked so far, with their type (e.g. "TXT _dmarc.acme.test"). */
  asked: string[];
  close(): Promise<void>;
};

/** TXT strings are at most 255 octets each: longer text (a DKIM key) goes as several. */
const chunks = (text: string): string[] => text.match(/.{1,255}/g) ?? [''];

const typeName = (type: number): string => (type === Packet.TYPE.TXT ? 'TXT' : type === Packet.TYPE.A ? 'A' : type === Packet.TYPE.AAAA ? 'AAAA' : String(type));

export async function startDns(initial: Zone = {}): Promise<TestDns> {
  const zone = new Map<string, Zone[string]>(Object.entries(initial).map(([k, v]) => [k.toLowerCase(), v]));
  const asked: string[] = [];
  const server = dns2.createServer({
    udp: true,
    handle(request, send) {
      const response = Packet.createResponseFromRequest(request);
      const [q] = request.questions;
      if (!q) {
        void send(response);
        return;
      }
      const name = q.name.toLowerCase().replace(/\.$/, '');
      const entry = zone.get(name);
      asked.push(`${typeName(q.type)} ${name}`);
      if (!entry) {
        response.header.rcode = Packet.RCODE.NXDOMAIN;
      } else if (q.type === Packet.TYPE.A || q.type === Packet.TYPE.AAAA) {
        const v6 = q.type === Packet.TYPE.AAAA;
        for (const address of (v6 ? entry.AAAA : entry.A) ?? []) response.answers.push(new Packet.Resource({ name: q.name, type: q.type, class: Packet.CLASS.IN, ttl: 1, address }));
      } else if (q.type === Packet.TYPE.TXT) {
        for (const text of entry.TXT ?? []) response.answers.push(new Packet.Resource({ name: q.name, type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 60, data: chunks(text) }));
      }
      void send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const port = addresses.udp?.port;
  if (!port) throw new Error('the test DNS server did not say its port');
  const resolver = new Resolver({ timeout: 1_000, tries: 1 });
  resolver.setServers([`127.0.0.1:${port}`]);
  const none = (e: unknown): string[] => {
    const code = (e as { code?: string }).code;
    if (code === 'ENODATA' || code === 'ENOTFOUND') return [];
    throw e;
  };
  const set = (name: string, records: Zone[string] | undefined) => {
    if (records) zone.set(name.toLowerCase(), records);
    else zone.delete(name.toLowerCase());
  };
  return {
    servers: [`127.0.0.1:${port}`],
    set,
    point(name, addrs) {
      set(name, { ...zone.get(name.toLowerCase()), A: addrs.filter((a) => !a.includes(':')), AAAA: addrs.filter((a) => a.includes(':')) });
    },
    async resolve(host) {
      const [v4, v6] = await Promise.all([resolver.resolve4(host).catch(none), resolver.resolve6(host).catch(none)]);
      const all = [...v4, ...v6];
      if (all.length === 0) throw Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND' });
      return all;
    },
    asked,
    close: () => server.close(),
  };
}

/** A DKIM key record ("v=DKIM1; k=rsa; p=...") of a fresh 2048-bit RSA key. */
export function dkimKeyRecord(): string {
  const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`;
}

/** The records of a domain whose mail from `ip` passes SPF, with a DKIM key at `selector` and a
 * DMARC policy: what a well set-up sending domain publishes. */
export function passingZone(domain: string, ip = '127.0.0.1', selector = 'default'): Zone {
  return {
    [domain]: { TXT: [`v=spf1 ip4:${ip} -all`] },
    [`${selector}._domainkey.${domain}`]: { TXT: [dkimKeyRecord()] },
    [`_dmarc.${domain}`]: { TXT: [`v=DMARC1; p=quarantine; rua=mailto:dmarc@${domain}`] },
  };
}
