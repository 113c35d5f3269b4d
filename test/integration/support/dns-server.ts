/** A DNS server on 127.0.0.1 (dns2) whose answers a test sets per name, and a resolver that asks
 * it (node:dns's own Resolver), for checks that follow what a name resolves to now: DNS rebinding,
 * names that point at metadata addresses. */
import { Resolver } from 'node:dns/promises';
import dns2 from 'dns2';

export type TestDns = {
  /** Name -> the addresses it resolves to (IPv4 as A records, IPv6 as AAAA). */
  answers: Map<string, string[]>;
  /** Every address of a name, as the server answers it now. */
  resolve(host: string): Promise<string[]>;
  close(): Promise<void>;
};

export async function startTestDns(): Promise<TestDns> {
  const answers = new Map<string, string[]>();
  const { Packet } = dns2;
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      for (const q of request.questions) {
        for (const address of answers.get(q.name.toLowerCase()) ?? []) {
          const v6 = address.includes(':');
          if ((q.type === Packet.TYPE.A && !v6) || (q.type === Packet.TYPE.AAAA && v6)) {
            response.answers.push(Packet.createResourceFromQuestion(q, { type: v6 ? Packet.TYPE.AAAA : Packet.TYPE.A, class: Packet.CLASS.IN, ttl: 1, address }));
          }
        }
      }
      send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const port = addresses.udp?.port;
  if (!port) throw new Error('the test DNS server did not listen');
  const resolver = new Resolver({ timeout: 1_000, tries: 1 });
  resolver.setServers([`127.0.0.1:${port}`]);
  const none = (e: unknown): string[] => {
    if ((e as { code?: string }).code === 'ENODATA' || (e as { code?: string }).code === 'ENOTFOUND') return [];
    throw e;
  };
  return {
    answers,
    async resolve(host) {
      const [v4, v6] = await Promise.all([resolver.resolve4(host).catch(none), resolver.resolve6(host).catch(none)]);
      const all = [...v4, ...v6];
      if (all.length === 0) throw Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND' });
      return all;
    },
    close: () => server.close(),
  };
}
