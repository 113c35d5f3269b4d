/** An import's new leads go to PostgreSQL while the call still reads its later rows (Tx.writeAhead,
 * Store.commitAhead): a lead no later row of the call can name again is sealed and written in a part
 * of the commit before the handler ends. The answer is the one the same call gives as a dry run
 * (which writes nothing ahead), the leads a later row changes again are stored as that row left them,
 * and the call is still one commit. On PGlite nothing is written ahead; the same expectations hold. */
import { recordPgStatements } from '../support/pg-statements.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS } from './support/db.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

type RowResult = { row: number; code: string; leadId?: string; matchedBy?: string; message: string };
type Answer = { totals: Record<string, number>; results: RowResult[] };

/** Distinct people, with repeats far apart: row 4's person again at the end with a title (an update
 * of a lead created in the first part's rows), the same row again (a repeat), and a second person with
 * row 11's name and company and no email (a possible duplicate). */
function rows(n: number, tag: string): Record<string, string>[] {
  const out: Record<string, string>[] = Array.from({ length: n }, (_, i) => ({ 'First Name': `First${i}`, 'Last Name': `Last${i}${tag}`, Email: `p${i}.${tag}@example.com`, Company: `Co${i % 97}`, Title: '' }));
  out.push({ 'First Name': 'First2', 'Last Name': `Last2${tag}`, Email: ` P2.${tag.toUpperCase()}@EXAMPLE.COM `, Company: 'Co2', Title: 'Chief Executive' });
  out.push({ ...out[5] });
  out.push({ 'First Name': 'First9', 'Last Name': `Last9${tag}`, Email: '', Company: 'Co9', Title: 'Elsewhere' });
  return out;
}

describe.each(BACKENDS)('an import writing its new leads ahead (%s)', (backend) => {
  let s: TestServer;
  let groupId = '';

  beforeAll(async () => {
    s = await startTestServer(backend);
    const groups = await s.call<{ leadGroups: { id: string }[] }>(s.ours.ownerKey, 'leadGroups.getAll');
    groupId = groups.body.leadGroups[0]?.id ?? '';
  }, 60_000);

  afterAll(async () => {
    await s?.close();
  });

  const without = (a: Answer) => ({ totals: a.totals, results: a.results.map(({ leadId: _id, ...r }) => r) });

  it('answers as its dry run does, stores every lead as its last row left it, in one commit', async () => {
    const input = { leadGroupId: groupId, rows: rows(1_234, 'a'), onExisting: 'fill_empty' };
    const dry = await s.call<Answer>(s.ours.ownerKey, 'campaigns.leads.import', { ...input, dryRun: true });
    expect(dry.status).toBe(200);
    const seqBefore = await s.maxSeq(s.ours.workspaceId);
    const real = await s.call<Answer>(s.ours.ownerKey, 'campaigns.leads.import', input);
    expect(real.status).toBe(200);
    expect(without(real.body)).toEqual(without(dry.body));
    expect(real.body.totals).toMatchObject({ created: 1_234, updated: 1, repeatedInFile: 1, possibleDuplicates: 1 });
    // Row 1,236 (the person of row 4, found by email in any spelling) gave its title to that lead.
    const first = real.body.results.find((r) => r.row === 4);
    const again = real.body.results.find((r) => r.row === 1_236);
    expect(again).toMatchObject({ code: 'UPDATED', leadId: first?.leadId });
    const lead = await s.db.forWorkspace(s.ours.workspaceId).get('leads', first?.leadId ?? '');
    expect(lead?.jobTitle).toBe('Chief Executive');
    const created = real.body.results.filter((r) => r.code === 'CREATED').map((r) => r.leadId ?? '');
    expect(await s.db.forWorkspace(s.ours.workspaceId).getMany('leads', created)).toHaveLength(1_234);
    // One commit: its writes took consecutive seqs (nothing else wrote meanwhile).
    expect((await s.maxSeq(s.ours.workspaceId)) - seqBefore).toBe(1_234);
  }, 60_000);

  it('sends the first parts of new leads before the handler has read its last row', async () => {
    // A last row that marks an existing person Do Not Contact: the handler then reads that lead's
    // enrollments after its loop, the last statement it sends before the commit.
    await s.call(s.ours.ownerKey, 'campaigns.leads.import', { leadGroupId: groupId, rows: [{ Email: 'known.b@example.com', 'First Name': 'Known' }] });
    const { texts, stop } = recordPgStatements();
    let res;
    try {
      // Distinct people only: a person repeated later keeps the leads after its first row for the
      // end (they are handed over in the order they are written).
      const input: Record<string, string>[] = rows(1_600, 'b').slice(0, 1_600).map((r) => ({ ...r, 'Do not contact': '' }));
      input.push({ 'First Name': 'Known', 'Last Name': '', Email: 'known.b@example.com', Company: '', Title: '', 'Do not contact': 'yes' });
      res = await s.call<Answer>(s.ours.ownerKey, 'campaigns.leads.import', { leadGroupId: groupId, rows: input });
    } finally {
      stop();
    }
    expect(res.status).toBe(200);
    expect(res.body.totals).toMatchObject({ created: 1_600, updated: 1 });
    if (backend !== 'postgres') return;
    const enrollments = texts.findIndex((t) => t.includes("collection = 'enrollments'"));
    const inserts = texts.map((t, i) => (t.includes('INSERT INTO documents') ? i : -1)).filter((i) => i >= 0);
    expect(enrollments).toBeGreaterThanOrEqual(0);
    // Parts of 500: the three holding rows 1-1,500 went before the handler's last statement.
    expect(inserts.filter((i) => i < enrollments).length).toBeGreaterThanOrEqual(3);
  }, 60_000);
});
