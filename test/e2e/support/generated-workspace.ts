/** A workspace with many generated leads, for the UI benchmark (100k leads) and for tests that need
 * volume rather than the demo's story. Deterministic from the seed. */
import { randomUUID } from 'node:crypto';
import type { Ids } from '../../../shared/context.ts';
import { newLead } from '../../../shared/model/factories.ts';
import type { AnyWrite } from '../../../shared/store.ts';
import { workspaceCreation } from '../../../shared/workspace-setup.ts';
import { seededRandom } from '../../../shared/seeded-random.ts';
import type { DemoWorkspace } from '../../../electron/backend/session.ts';

const FIRST = ['Ada', 'Ben', 'Chloe', 'Dmitri', 'Elena', 'Farid', 'Grace', 'Hiro', 'Ines', 'Jonas', 'Kemi', 'Liam', 'Maya', 'Noah', 'Olga', 'Priya', 'Quinn', 'Rosa', 'Sven', 'Tara'];
const LAST = ['Nakamura', 'Okafor', 'Schmidt', 'Rossi', 'Dubois', 'Kowalski', 'Silva', 'Haddad', 'Larsen', 'Moreau', 'Patel', 'Novak', 'Garcia', 'Ivanova', 'Brennan'];
const COMPANIES = ['Northwind', 'Globex', 'Initech', 'Umbrella Health', 'Stark Logistics', 'Wayne Finance', 'Acme Robotics', 'Hooli', 'Vandelay Imports', 'Soylent Foods'];
const TITLES = ['VP Sales', 'Head of Growth', 'CTO', 'Founder', 'Sales Director', 'RevOps Manager', 'CMO', 'Account Executive'];

export function generatedWorkspace(opts: { leads: number; now: Date; ids?: Ids; seed?: number }): DemoWorkspace {
  const ids: Ids = opts.ids ?? { uuid: () => randomUUID() };
  const random = seededRandom(opts.seed ?? 7);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
  const now = opts.now.toISOString();
  const ws = workspaceCreation(ids, now, { name: 'Generated workspace', owner: { name: 'Bench Owner', email: 'owner@bench.test' }, subscriptionStatus: 'active' });
  const writes: AnyWrite[] = [...ws.writes];
  for (let i = 0; i < opts.leads; i++) {
    const firstName = pick(FIRST);
    const lastName = pick(LAST);
    const company = pick(COMPANIES);
    const created = new Date(opts.now.getTime() - i * 60_000).toISOString();
    const lead = newLead({ id: ids.uuid(), workspaceId: ws.workspaceId, now: created }, ws.leadGroupId, {
      firstName, lastName, company, jobTitle: pick(TITLES),
      email: `${firstName}.${lastName}.${i}@${company.toLowerCase().replace(/\W+/g, '')}.example`.toLowerCase(),
      socialUrl: `https://social.example/in/${firstName}-${lastName}-${i}`.toLowerCase(),
      rankingScore: Math.round(random() * 100), leadFitScore: Math.round(random() * 100),
    });
    writes.push({ collection: 'leads', id: lead.id, before: null, after: lead });
  }
  return { workspaceId: ws.workspaceId, workspaceName: 'Generated workspace', member: { id: ws.ownerId, name: 'Bench Owner', role: 'owner' }, writes };
}
