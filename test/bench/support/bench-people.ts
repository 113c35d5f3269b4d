/** The benches' generated people: lead i's names, company, title and contact details, the same at
 * every scale and in every bench that generates leads (the desktop bench's server seed, the
 * storage measurement). */
import { seededRandom } from '../../support/deterministic.ts';

const FIRST = ['Ann', 'Bob', 'Chen', 'Dana', 'Eve', 'Farid', 'Gus', 'Hana', 'Ivan', 'Jo', 'Kim', 'Lena', 'Mo', 'Nina', 'Omar', 'Pia'];
const LAST = ['Smith', 'Li', 'Okafor', 'Müller', 'Nguyen', 'Garcia', 'Rossi', 'Kowalski', 'Sato', 'Dubois'];
const COMPANY = ['Acme', 'Globex', 'Initech', 'Umbrella', 'Hooli', 'Vandelay', 'Stark', 'Wayne', 'Tyrell', 'Cyberdyne'];

export type BenchPerson = { firstName: string; lastName: string; email: string; company: string; jobTitle: string; phone: string; socialUrl: string };

/** Lead i's person (0-based). */
export function person(i: number): BenchPerson {
  const rnd = seededRandom(99_000_000 + i);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const firstName = pick(FIRST);
  const lastName = pick(LAST);
  const company = `${pick(COMPANY)} ${i % 997}`;
  const slug = `${firstName}-${lastName}-${i}`.toLowerCase();
  return {
    firstName,
    lastName,
    email: `${slug}@${company.toLowerCase().replace(/\s+/g, '')}.example`,
    company,
    jobTitle: pick(['VP Sales', 'CTO', 'Head of Growth', 'SDR', 'RevOps Manager']),
    phone: `+1555${String(i).padStart(7, '0')}`,
    socialUrl: `https://social.example/in/${slug}`,
  };
}
