import { describe, expect, it } from 'vitest';
import { compareValues } from '../../shared/query.ts';
import { foldForSort } from '../../shared/text-sort.ts';
import { newEnrollment, newLead, newLeadGroup, newStage } from '../../shared/model/factories.ts';
import type { Campaign, Enrollment, Lead, LeadGroup, Stage } from '../../shared/model/index.ts';
import { execute } from '../../shared/ops/execute.ts';
import { LEAD_QUERY_FIELDS, LEAD_SORT_FIELDS, leadFilterCond } from '../../shared/ops/lead-search.ts';
import type { LeadFilter } from '../../shared/ops/lead-search.ts';
import type { AnyWrite, Cond, Store } from '../../shared/store.ts';
import { matches } from '../../shared/query.ts';
import { makeHarness, seededRandom, testSecrets } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const FIRST = ['Ann', 'Bob', 'Céline', 'Dmitri', 'Eve', 'Farah', 'Gus', 'Hana', 'annika', 'Zoë'];
const LAST = ['Smith', 'Jones', 'Ng', 'García', 'Okafor', 'Schmidt', 'Lee'];
const COMPANIES = ['Initech', 'Globex', 'Umbrella', 'Hooli', 'Acme Rockets', ''];

type World = {
  h: Harness;
  leads: Lead[];
  stages: Stage[];
  inbound: Stage;
  tags: { hot: string; cold: string };
  campaigns: { a: Campaign; b: Campaign };
  enrollments: Enrollment[];
  group: LeadGroup;
};

/** A few hundred leads with every attribute the filters look at, from a seeded generator. */
async function world(n = 320): Promise<World> {
  const h = await makeHarness();
  const rnd = seededRandom(99);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const inbound = newStage(h.stamp(), 'Inbound', 'NEW', '#123456', 7);
  const group = newLeadGroup(h.stamp(), 'Imported', () => h.ids.uuid(), ['Favourite colour']);
  await h.seed([
    { collection: 'stages', id: inbound.id, before: null, after: inbound },
    { collection: 'leadGroups', id: group.id, before: null, after: group },
  ]);
  const stages = (await h.store.query('stages', { orderBy: [{ field: 'position', dir: 'asc' }] })).docs;
  const hot = (await h.call('tags.create', { name: 'Hot' })).id;
  const cold = (await h.call('tags.create', { name: 'Cold' })).id;
  const sender = await h.addSender({ name: 'Sam Sender' });
  const sender2 = await h.addSender({ name: 'Tia Two' });
  const a = await h.addCampaign({ name: 'Alpha', senderIds: [sender.id, sender2.id] });
  // Beta works the imported group: its leads are those linked to that group (created there or
  // linked by enrollment), Alpha's those of the workspace's default group.
  const b = await h.addCampaign({ name: 'Beta', senderIds: [sender.id], leadGroupId: group.id });
  const colour = group.columns.find((c) => c.builtInType === null);

  const leads: Lead[] = [];
  const enrollments: Enrollment[] = [];
  const writes: AnyWrite[] = [];
  for (let i = 0; i < n; i++) {
    // Several leads share a createdAt, so ties are broken by id.
    if (rnd() < 0.6) h.clock.advance(Math.floor(rnd() * 5) * 1000);
    const firstName = pick(FIRST);
    const lastName = pick(LAST);
    const r = rnd();
    const lead = newLead(h.stamp(), rnd() < 0.2 ? group.id : h.main.leadGroupId, {
      firstName,
      lastName,
      email: rnd() < 0.8 ? `${firstName.toLowerCase()}.${i}@${pick(['example.com', 'EXAMPLE.org', 'mail.test'])}` : '',
      company: pick(COMPANIES),
      phone: rnd() < 0.5 ? `+1 555 ${String(1000 + i)}` : '',
      socialUrl: rnd() < 0.7 ? `https://network.test/in/${firstName.toLowerCase()}-${i}` : '',
      personalSocialUrl: rnd() < 0.1 ? `https://personal.test/~p${i}` : '',
      jobTitle: pick(['CEO', 'CTO', 'VP Sales', 'Engineer']),
      tagId: r < 0.3 ? hot : r < 0.5 ? cold : null,
      pipelineStageId: rnd() < 0.35 ? null : pick(stages).id,
      rankingScore: Math.floor(rnd() * 10),
      leadFitScore: Math.round(rnd() * 1000) / 10,
      lastActivityAt: rnd() < 0.5 ? null : new Date(Date.parse('2026-10-01T00:00:00Z') + Math.floor(rnd() * 30) * 86400_000).toISOString(),
      followUpAt: rnd() < 0.7 ? null : new Date(Date.parse('2026-11-01T00:00:00Z') + Math.floor(rnd() * 60) * 86400_000).toISOString(),
    });
    if (lead.leadGroupId === group.id && colour) lead.variables = { [colour.id]: pick(['red', 'blue']) };
    leads.push(lead);
    writes.push({ collection: 'leads', id: lead.id, before: null, after: lead });
    const e = rnd();
    const add = (campaign: Campaign, fields: Partial<Enrollment>) => {
      const en = newEnrollment(h.stamp(), lead.id, campaign.id, fields);
      if (!lead.groupIds.includes(campaign.leadGroupId)) lead.groupIds.push(campaign.leadGroupId);
      enrollments.push(en);
      writes.push({ collection: 'enrollments', id: en.id, before: null, after: en });
    };
    if (e < 0.25) add(a, { sdrProfileId: pick([sender.id, sender2.id, null]) });
    else if (e < 0.4) add(b, { status: 'COMPLETED', sdrProfileId: sender.id });
    else if (e < 0.55) {
      add(a, { status: 'STOPPED', sdrProfileId: sender2.id });
      h.clock.advance(1);
      add(b, { status: rnd() < 0.5 ? 'IN_PROGRESS' : 'REPLIED', sdrProfileId: sender.id });
    } else if (e < 0.65) {
      // The running enrollment is older than a finished one: the running one still describes the lead.
      add(a, { sdrProfileId: sender2.id });
      h.clock.advance(1);
      add(b, { status: 'COMPLETED', sdrProfileId: sender.id });
    }
  }
  await h.seed(writes);
  return { h, leads, stages, inbound, tags: { hot, cold }, campaigns: { a, b }, enrollments, group };
}

/** The filter's meaning, written out independently of the Cond language. */
function expected(w: World, f: LeadFilter): Set<string> {
  const stageById = new Map(w.stages.map((s) => [s.id, s]));
  return new Set(
    w.leads
      .filter((l) => {
        const campaign = [w.campaigns.a, w.campaigns.b].find((c) => c.id === f.campaignId);
        if (f.campaignId && !l.groupIds.includes(campaign?.leadGroupId ?? '')) return false;
        if (f.tagId && f.tagId !== 'all' && (f.tagId === 'uncategorized' ? l.tagId !== null : l.tagId !== f.tagId)) return false;
        if (f.query) {
          const q = f.query.toLowerCase();
          const hay = [l.firstName, l.lastName, l.fullName, l.email, l.company, l.phone, l.socialUrl, l.personalSocialUrl];
          if (!hay.some((v) => v.toLowerCase().includes(q))) return false;
        }
        if (f.pipelineStage) {
          const st = l.pipelineStageId === null ? null : stageById.get(l.pipelineStageId);
          const upper = f.pipelineStage.toUpperCase();
          const categories = ['NEW', 'CONTACTED', 'ENGAGED', 'MEETING_BOOKED', 'ON_HOLD', 'WON', 'LOST'];
          if (categories.includes(upper)) {
            if (st ? st.category !== upper : upper !== 'NEW') return false;
          } else {
            const named = w.stages.filter((s) => s.name.toLowerCase() === f.pipelineStage?.toLowerCase());
            if (st ? !named.includes(st) : !named.some((s) => s.category === 'NEW')) return false;
          }
        }
        return true;
      })
      .map((l) => l.id),
  );
}

type Row = { id: string } & Record<string, unknown>;
type SearchInput = LeadFilter & { limit?: number; sortBy?: (typeof LEAD_SORT_FIELDS)[number]; sortOrder?: 'asc' | 'desc'; includeVariables?: boolean };

async function all(w: World, input: SearchInput): Promise<{ rows: Row[]; pages: number }> {
  const rows: Row[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page: { leads: Row[]; nextCursor: string | null } = await w.h.call('campaigns.leads.search', { ...input, cursor });
    expect(page.leads.length).toBeLessThanOrEqual(input.limit ?? 50);
    if (page.nextCursor) expect(page.leads.length).toBe(input.limit ?? 50);
    rows.push(...page.leads);
    cursor = page.nextCursor;
    pages++;
    expect(pages).toBeLessThan(1000);
  } while (cursor);
  return { rows, pages };
}

/** Names and companies sort case- and accent-insensitively (shared/text-sort.ts), the rest by value. */
const sortKey = (field: string, v: unknown): unknown => ((field === 'fullName' || field === 'company') && typeof v === 'string' ? foldForSort(v) : v);

function expectOrdered(rows: Row[], field: string, dir: 'asc' | 'desc'): void {
  for (let i = 1; i < rows.length; i++) {
    const prev = rows[i - 1] as Row;
    const cur = rows[i] as Row;
    const c = compareValues(sortKey(field, prev[field]), sortKey(field, cur[field]));
    const ok = dir === 'asc' ? c < 0 || (c === 0 && prev.id < cur.id) : c > 0 || (c === 0 && prev.id < cur.id);
    expect(ok, `${field} ${dir} at ${i}: ${String(prev[field])}/${prev.id} then ${String(cur[field])}/${cur.id}`).toBe(true);
  }
}

describe('lead search filters and paging', () => {
  it('every filter alone and combined returns exactly the matching leads, pages concatenating without gap or duplicate', async () => {
    const w = await world();
    const filters: LeadFilter[] = [
      {},
      { tagId: 'all' },
      { tagId: 'uncategorized' },
      { tagId: w.tags.hot },
      { campaignId: w.campaigns.a.id },
      { campaignId: w.campaigns.b.id },
      { query: 'ann' },
      { query: 'EXAMPLE.ORG' },
      { query: '555 11' },
      { query: 'network.test/in/eve' },
      { query: 'personal.test' },
      { query: 'acme rock' },
      { pipelineStage: 'MEETING_BOOKED' },
      { pipelineStage: 'Meeting booked' },
      { pipelineStage: 'meeting BOOKED' },
      { pipelineStage: 'LOST' },
      { pipelineStage: 'NEW' },
      { pipelineStage: 'new' },
      { pipelineStage: 'Inbound' },
      { pipelineStage: 'Contacted' },
      { campaignId: w.campaigns.a.id, tagId: w.tags.cold },
      { campaignId: w.campaigns.b.id, tagId: 'uncategorized', query: 'a' },
      { tagId: w.tags.hot, query: 'e', pipelineStage: 'NEW' },
      { campaignId: w.campaigns.a.id, tagId: 'all', query: 'example', pipelineStage: 'Meeting booked' },
    ];
    for (const f of filters) {
      const want = expected(w, f);
      const { rows } = await all(w, { ...f, limit: 13 });
      const ids = rows.map((r) => r.id);
      expect(new Set(ids).size, JSON.stringify(f)).toBe(ids.length);
      expect(new Set(ids), JSON.stringify(f)).toEqual(want);
      expectOrdered(rows, 'createdAt', 'desc');
      // The count the leads screen shows is the size of the same search.
      expect((await w.h.call('campaigns.leads.count', f)).count, JSON.stringify(f)).toBe(want.size);
    }
    // The sample is rich enough that the filters above are not trivially empty or full.
    expect(expected(w, { campaignId: w.campaigns.a.id, tagId: w.tags.cold }).size).toBeGreaterThan(3);
    // A campaign's leads include leads of its group that are not enrolled in it (yet).
    const notEnrolledInB = [...expected(w, { campaignId: w.campaigns.b.id })].filter((id) => !w.enrollments.some((e) => e.leadId === id && e.campaignId === w.campaigns.b.id));
    expect(notEnrolledInB.length).toBeGreaterThan(3);
    expect(expected(w, { campaignId: w.campaigns.b.id }).size).toBeLessThan(w.leads.length);
    expect(expected(w, { pipelineStage: 'NEW' }).size).toBeGreaterThan(expected(w, { pipelineStage: 'LOST' }).size);
  });

  it('NEW means unstaged leads plus every NEW-category stage; a stage name finds that stage', async () => {
    const w = await world(120);
    const { rows: newRows } = await all(w, { pipelineStage: 'NEW', limit: 200 });
    const newStageIds = new Set(w.stages.filter((s) => s.category === 'NEW').map((s) => s.id));
    expect(newStageIds.has(w.inbound.id)).toBe(true);
    expect(newRows.every((r) => r.pipelineStageId === null || newStageIds.has(String(r.pipelineStageId)))).toBe(true);
    expect(newRows.some((r) => r.pipelineStageId === w.inbound.id)).toBe(true);
    expect(newRows.some((r) => r.pipelineStageId === null)).toBe(true);
    const { rows: inboundRows } = await all(w, { pipelineStage: 'inbound', limit: 200 });
    // Naming a NEW-category stage includes unstaged leads too (they sit in the first column).
    expect(new Set(inboundRows.map((r) => r.id))).toEqual(new Set(w.leads.filter((l) => l.pipelineStageId === null || l.pipelineStageId === w.inbound.id).map((l) => l.id)));
    const { rows: won } = await all(w, { pipelineStage: 'Won', limit: 200 });
    expect(won.length).toBeGreaterThan(0);
    expect(won.every((r) => (r.pipelineStage as { category: string }).category === 'WON')).toBe(true);
  });

  it('every sort column, both directions, pages in a consistent order equal to one big page', async () => {
    const w = await world(260);
    for (const sortBy of LEAD_SORT_FIELDS) {
      for (const sortOrder of ['asc', 'desc'] as const) {
        const { rows, pages } = await all(w, { sortBy, sortOrder, limit: 17 });
        expect(pages).toBeGreaterThan(10);
        expect(rows.map((r) => r.id).sort()).toEqual(w.leads.map((l) => l.id).sort());
        expectOrdered(rows, sortBy, sortOrder);
        const big = await w.h.call('campaigns.leads.search', { sortBy, sortOrder, limit: 200 });
        expect(rows.slice(0, 200).map((r) => r.id)).toEqual(big.leads.map((r) => r.id));
      }
    }
  });

  it('refuses unknown or foreign campaign and tag ids, an unknown stage, a bad limit and a cursor of another sort', async () => {
    const w = await world(40);
    const { h } = w;
    const foreignTag = await h.call('tags.create', { name: 'Theirs' }, h.foreignOwner);
    await h.expectRefused(h.call('campaigns.leads.search', { campaignId: h.ids.uuid() }), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.leads.search', { campaignId: w.campaigns.a.id }, h.foreignOwner), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.leads.search', { tagId: foreignTag.id }), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.leads.search', { tagId: 'nonsense' }), 'NOT_FOUND');
    await h.expectRefused(h.call('campaigns.leads.search', { pipelineStage: 'Negotiation' }), 'INVALID_INPUT');
    await h.expectRefused(h.call('campaigns.leads.search', { limit: 201 }), 'INVALID_INPUT');
    await h.expectRefused(h.call('campaigns.leads.search', { limit: 0 }), 'INVALID_INPUT');
    const first = await h.call('campaigns.leads.search', { limit: 5 });
    expect(first.nextCursor).not.toBeNull();
    await h.expectRefused(h.call('campaigns.leads.search', { limit: 5, cursor: first.nextCursor, sortBy: 'fullName' }), 'INVALID_INPUT');
    await h.expectRefused(h.call('campaigns.leads.search', { cursor: 'createdAt.desc.%%%' }), 'INVALID_INPUT');
    expect((await h.call('campaigns.leads.search', {}, h.foreignOwner)).leads).toEqual([]);
  });

  it('accepts query-string forms (GET): limit and includeVariables as strings', async () => {
    const w = await world(30);
    const res = await w.h.call('campaigns.leads.search', { limit: '7', includeVariables: 'true' } as never);
    expect(res.leads).toHaveLength(7);
    expect(res.leads[0]?.variables).toBeDefined();
  });
});

describe('lead search rows', () => {
  it('carry stage, sequence status from the running enrollment else the latest, the assigned sender and campaigns', async () => {
    const w = await world(200);
    const { rows } = await all(w, { limit: 200 });
    const byId = new Map(rows.map((r) => [r.id, r]));
    const stageById = new Map(w.stages.map((s) => [s.id, s]));
    const senders = new Map((await w.h.store.query('senders', {})).docs.map((s) => [s.id, s]));
    let checkedRunning = 0;
    let checkedLatest = 0;
    for (const lead of w.leads) {
      const row = byId.get(lead.id);
      expect(row).toBeDefined();
      if (!row) continue;
      const st = lead.pipelineStageId ? stageById.get(lead.pipelineStageId) : undefined;
      expect(row.pipelineStage).toEqual(st ? { name: st.name, colorHex: st.colorHex, category: st.category } : null);
      const mine = w.enrollments.filter((e) => e.leadId === lead.id);
      const runningOne = mine.find((e) => e.status === 'IN_PROGRESS');
      const latest = [...mine].sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1)).pop();
      const cur = runningOne ?? latest;
      if (runningOne && latest && runningOne.id !== latest.id) checkedRunning++;
      if (!runningOne && mine.length > 1) checkedLatest++;
      expect(row.sequenceStatus).toBe(cur?.status ?? null);
      if (cur) {
        const s = cur.sdrProfileId ? senders.get(cur.sdrProfileId) : undefined;
        expect(row.leadSequence).toMatchObject({
          enrollmentId: cur.id, status: cur.status, sdrProfileId: cur.sdrProfileId,
          sdrProfile: s ? { id: s.id, firstName: s.firstName, lastName: s.lastName } : null,
        });
      } else expect(row.leadSequence).toBeNull();
      const names = [...new Set(mine.map((e) => (e.campaignId === w.campaigns.a.id ? 'Alpha' : 'Beta')))];
      expect((row.campaigns as { name: string }[]).map((c) => c.name)).toEqual(names);
      expect(row).toMatchObject({ fullName: lead.fullName, jobTitle: lead.jobTitle, rankingScore: lead.rankingScore, leadFitScore: lead.leadFitScore, createdAt: lead.createdAt });
      expect(row).not.toHaveProperty('variables');
      expect(row).not.toHaveProperty('builtInValues');
    }
    expect(checkedRunning).toBeGreaterThan(0);
    expect(checkedLatest).toBeGreaterThan(0);
  });

  it("with campaignId show each lead's enrollment in that campaign, NOT_ENROLLED for the group's leads not enrolled yet", async () => {
    const w = await world(200);
    const c = w.campaigns.b;
    const { rows } = await all(w, { campaignId: c.id, limit: 200 });
    const { rows: wide } = await all(w, { limit: 200 });
    const wideById = new Map(wide.map((r) => [r.id, r]));
    const states = new Set<string>();
    for (const row of rows) {
      const mine = w.enrollments.filter((e) => e.leadId === row.id && e.campaignId === c.id);
      const cur = mine.find((e) => e.status === 'IN_PROGRESS') ?? mine[mine.length - 1];
      expect(row.enrollmentState).toBe(cur?.status ?? 'NOT_ENROLLED');
      expect(row.sequenceStatus).toBe(cur?.status ?? null);
      if (cur) expect(row.leadSequence).toMatchObject({ enrollmentId: cur.id, campaignId: c.id });
      else expect(row.leadSequence).toBeNull();
      states.add(String(row.enrollmentState));
      // The payload has the same fields with or without campaignId.
      expect(Object.keys(row).sort()).toEqual(Object.keys(wideById.get(row.id) ?? {}).sort());
    }
    expect(states).toContain('NOT_ENROLLED');
    expect(states.size).toBeGreaterThan(2);
    // Without campaignId the state is the lead's current enrollment anywhere.
    for (const row of wide) expect(row.enrollmentState).toBe(row.sequenceStatus ?? 'NOT_ENROLLED');
  });

  it('include built-in values and every variable of the lead\'s groups when includeVariables is true', async () => {
    const w = await world(120);
    const lead = w.leads.find((l) => l.leadGroupId === w.group.id);
    expect(lead).toBeDefined();
    if (!lead) return;
    const { rows } = await all(w, { query: lead.socialUrl || lead.email || lead.fullName, includeVariables: true, limit: 200 });
    const row = rows.find((r) => r.id === lead.id);
    expect(row?.builtInValues).toMatchObject({ firstName: lead.firstName, lastName: lead.lastName, company: lead.company, email: lead.email });
    const vars = row?.variables as { variableTypeId: string; name: string; builtInType: string; value: string }[];
    const colour = w.group.columns.find((c) => c.builtInType === null);
    expect(vars.find((v) => v.name === 'Favourite colour')).toEqual({ variableTypeId: colour?.id, name: 'Favourite colour', builtInType: '', value: lead.variables[colour?.id ?? ''] });
    expect(vars.filter((v) => v.builtInType === 'firstName')).toEqual([
      { variableTypeId: w.group.columns.find((c) => c.builtInType === 'firstName')?.id, name: 'First name', builtInType: 'firstName', value: lead.firstName },
    ]);
  });

  it('resolves enrollments, campaigns and senders for the rows of the page only', async () => {
    const w = await world(300);
    const { h } = w;
    const seen: { collection: string; size: number }[] = [];
    const base: Store = h.db.forWorkspace(h.main.workspaceId);
    const inSize = (c: Cond | undefined): number => {
      if (!c) return Infinity;
      if (c.op === 'in' && c.field === 'leadId') return c.values.length;
      if (c.op === 'and') return Math.min(...c.conds.map(inSize));
      if (c.op === 'eq' && c.field === 'campaignId') return 0;
      return Infinity;
    };
    const spy: Store = {
      ...base,
      workspaceId: base.workspaceId,
      get: (c, id) => base.get(c, id),
      getMany: (c, ids) => {
        seen.push({ collection: `getMany:${c}`, size: ids.length });
        return base.getMany(c, ids);
      },
      query: (c, q) => {
        if (c === 'enrollments') seen.push({ collection: 'enrollments', size: inSize(q?.where) });
        return base.query(c, q);
      },
      count: (c, wh) => base.count(c, wh),
      commit: (ws) => base.commit(ws),
    };
    const out = await execute('campaigns.leads.search', { limit: 10, campaignId: w.campaigns.a.id }, {
      actor: h.owner, store: spy, clock: h.clock, ids: h.ids, random: h.random, secrets: testSecrets,
    });
    expect(out.leads).toHaveLength(10);
    for (const s of seen) expect(s.size, s.collection).toBeLessThanOrEqual(10);
  });
});

describe('leadFilterCond', () => {
  it('is usable on its own against any StoreReader and matches the search', async () => {
    const w = await world(100);
    const cond = await leadFilterCond(w.h.store, { tagId: w.tags.hot, query: 'A' });
    const hits = w.leads.filter((l) => matches(l, cond)).map((l) => l.id);
    expect(new Set(hits)).toEqual(expected(w, { tagId: w.tags.hot, query: 'A' }));
    expect(LEAD_QUERY_FIELDS).toEqual(['firstName', 'lastName', 'fullName', 'email', 'company', 'phone', 'socialUrl', 'personalSocialUrl']);
    await expect(leadFilterCond(w.h.store, { pipelineStage: 'Nope' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(leadFilterCond(w.h.store, { campaignId: w.h.ids.uuid() })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
