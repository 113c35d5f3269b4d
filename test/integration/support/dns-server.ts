/**
 * A real DNS server for tests (dns2) on 127.0.0.1, on a free UDP port, answering from a zone the
 * test sets and changes: A and TXT records by name; an unknown name is NXDOMAIN, a known name
 * without the asked type is NODATA, as an authoritative server answers. The sender check's resolver
 * is pointed at it (`servers`), never at the machine's DNS.
 */
import { generateKeyPairSync } from 'node:crypto';
import dns2 from 'dns2';

const { Packet } = dns2;

export type Zone = Record<string, { A?: string[]; TXT?: string[] }>;

export type TestDns = {
  /** For dnsResolver(servers): ['127.0.0.1:<port>']. */
  servers: string[];
  /** Replaces the records of a name (undefined: removes the name). */
  set(name: string, records: Zone[string] | undefined): void;
  /** The names asked so far, with their type (e.g. "TXT _dmarc.acme.test"). */
  asked: string[];
  close(): Promise<void>;
};

/** TXT strings are at most 255 octets each: longer text (a DKIM key) goes as several. */
const chunks = (text: string): string[] => text.match(/.{1,255}/g) ?? [''];

export async function startDns(initial: Zone): Promise<TestDns> {
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
      asked.push(`${q.type === Packet.TYPE.TXT ? 'TXT' : q.type === Packet.TYPE.A ? 'A' : String(q.type)} ${name}`);
      if (!entry) {
        response.header.rcode = Packet.RCODE.NXDOMAIN;
      } else if (q.type === Packet.TYPE.A) {
        for (const address of entry.A ?? []) response.answers.push(new Packet.Resource({ name: q.name, type: Packet.TYPE.A, class: Packet.CLASS.IN, ttl: 60, address }));
      } else if (q.type === Packet.TYPE.TXT) {
        for (const text of entry.TXT ?? []) response.answers.push(new Packet.Resource({ name: q.name, type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 60, data: chunks(text) }));
      }
      void send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const port = addresses.udp?.port;
  if (!port) throw new Error('the test DNS server did not say its port');
  return {
    servers: [`127.0.0.1:${port}`],
    set(name, records) {
      if (records) zone.set(name.toLowerCase(), records);
      else zone.delete(name.toLowerCase());
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
