/** The data contract over HTTP (API contract: "Campaign leads and the runner", "Custom columns",
 * "Strict inputs"), on PGlite and, when DATABASE_URL is set, on PostgreSQL: each refusal shows its
 * status and code and that nothing changed. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS } from './support/db.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

type ErrorBody = { error: { code: string; message: string; details: { issues?: { path: string; message: string }[] } & Record<string, unknown> } };
type Row = { id: string; firstName: string; enrollmentState: string; sequenceStatus: string | null; variables?: { name: string; value: string; variableTypeId: string }[] };
type Page = { leads: Row[]; nextCursor: string | null };

describe.each(BACKENDS)('data contract over HTTP (%s)', (backend) => {
  let s: TestServer;
  let key: string;
  beforeAll(async () => {
    s = await startTestServer(backend);
    key = s.ours.ownerKey;
  });
  afterAll(async () => {
    await s?.close();
  });

  async function expectRefused(name: string, input: Record<string, unknown>, status: number, code: string): Promise<ErrorBody> {
    const before = await s.snapshot(s.ours.workspaceId);
    const res = await s.call<ErrorBody>(key, name, input);
    expect(res.status, `${name}: ${JSON.stringify(res.body)}`).toBe(status);
    expect(res.body.error.code).toBe(code);
    expect(await s.snapshot(s.ours.workspaceId)).toEqual(before);
    return res.body;
  }

  async function newCampaign(name: string): Promise<{ id: string; leadGroupId: string }> {
    const res = await s.call<{ id: string; leadGroupId: string }>(key, 'campaigns.create', { name });
    expect(res.status).toBe(200);
    return res.body;
  }

  it('strict inputs: an unknown field (at any depth), dryRun where there is none, NUL and lone surrogates are 400 naming the field', async () => {
    const tag = await expectRefused('tags.create', { name: 'Typo', colour: '#f00' }, 400, 'INVALID_INPUT');
    expect(tag.error.details.issues?.map((i) => i.path)).toEqual(['colour']);
    const c = await newCampaign('Strict');
    const dry = await expectRefused('campaigns.leads.create', { leadGroupId: c.leadGroupId, leads: [{ firstName: 'Real' }], dryRun: true }, 400, 'INVALID_INPUT');
    expect(dry.error.details.issues?.map((i) => i.path)).toEqual(['dryRun']);
    const deep = await expectRefused('campaigns.leads.create', { leadGroupId: c.leadGroupId, leads: [{ firstName: 'A', nick: 'a' }] }, 400, 'INVALID_INPUT');
    expect(deep.error.details.issues?.map((i) => i.path)).toEqual(['leads.0.nick']);
    const nul = await expectRefused('tags.create', { name: 'a\u0000b' }, 400, 'INVALID_INPUT');
    expect(nul.error.details.issues?.map((i) => i.path)).toEqual(['name']);
    // A lone surrogate sent as a JSON escape (JSON.stringify would write it the same way).
    const raw = '{"leadGroupId":"' + c.leadGroupId + '","leads":[{"firstName":"x\\ud800"}]}';
    const before = await s.snapshot(s.ours.workspaceId);
    const res = await s.call<ErrorBody>(key, 'campaigns.leads.create', {}, { rawBody: raw });
    expect(res.status).toBe(400);
    expect(res.body.error.details.issues?.map((i) => i.path)).toEqual(['leads.0.firstName']);
    expect(await s.snapshot(s.ours.workspaceId)).toEqual(before);
    // GET query strings keep their coercions; an unknown query parameter is refused.
    expect((await s.call(key, 'campaigns.leads.search', { includeVariables: 'true', limit: '5' })).status).toBe(200);
    const q = await expectRefused('campaigns.leads.search', { includeVariable: 'true' }, 400, 'INVALID_INPUT');
    expect(q.error.details.issues?.map((i) => i.path)).toEqual(['includeVariable']);
  });

  it('a limit above the plan maximum, however large, is lowered and reported in cappedAtPlan', async () => {
    const sender = await s.call<{ id: string }>(key, 'sdrProfiles.create', { name: 'Sam Sender', channel: 'sandbox' });
    expect(sender.status, JSON.stringify(sender.body)).toBe(200);
    const res = await s.call<{ after: { messages: number }; planMax: { messages: number }; cappedAtPlan: { limit: string; requested: number }[] }>(key, 'sdrProfiles.setDailyLimits', {
      sdrProfileId: sender.body.id,
      limits: { messages: 1_000_000 },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.after.messages).toBe(res.body.planMax.messages);
    expect(res.body.cappedAtPlan).toEqual([{ limit: 'messages', requested: 1_000_000, planMax: res.body.planMax.messages }]);
    await expectRefused('sdrProfiles.setDailyLimits', { sdrProfileId: sender.body.id, limits: { messages: -5 } }, 400, 'INVALID_INPUT');
  });

  it("custom columns: created by leads.create, shown by search with includeVariables, offered as merge fields, added, renamed and removed", async () => {
    const c = await newCampaign('Fair');
    const created = await s.call<{ created: number; errors: unknown[] }>(key, 'campaigns.leads.create', {
      leadGroupId: c.leadGroupId,
      leads: [{ firstName: 'Tea', variables: { 'Favourite Colour': 'teal' } }],
    });
    expect(created.body).toMatchObject({ created: 1, errors: [] });
    const page = await s.call<Page>(key, 'campaigns.leads.search', { campaignId: c.id, includeVariables: true });
    const colour = page.body.leads[0]?.variables?.find((v) => v.name === 'Favourite Colour');
    expect(colour?.value).toBe('teal');
    const fields = await s.call<{ mergeFields: { name: string; kind: string }[] }>(key, 'campaigns.getMergeFields', { campaignId: c.id });
    expect(fields.body.mergeFields).toContainEqual(expect.objectContaining({ name: 'Favourite Colour', kind: 'custom' }));

    const added = await s.call<{ column: { variableTypeId: string; name: string } }>(key, 'campaigns.addColumn', { campaignId: c.id, name: 'Booth' });
    expect(added.status).toBe(200);
    await expectRefused('campaigns.addColumn', { campaignId: c.id, name: 'favourite colour' }, 400, 'INVALID_INPUT');
    expect((await s.call(key, 'campaigns.renameColumn', { campaignId: c.id, variableTypeId: added.body.column.variableTypeId, name: 'Stand' })).status).toBe(200);
    // Used by a message: removal refused like a rename.
    const step = await s.call(key, 'campaigns.addSequenceStep', { campaignId: c.id, step: { type: 'SEND_MESSAGE', content: 'Love {{Favourite Colour|colours}}?' } });
    expect(step.status, JSON.stringify(step.body)).toBe(200);
    await expectRefused('campaigns.removeColumn', { campaignId: c.id, variableTypeId: colour?.variableTypeId }, 422, 'COLUMN_IN_USE');
    const removed = await s.call<{ clearedValues: number }>(key, 'campaigns.removeColumn', { campaignId: c.id, variableTypeId: added.body.column.variableTypeId });
    expect(removed.status).toBe(200);
  });

  it("a campaign's leads are its lead group's leads, enrolled or not, with the same payload as a workspace search", async () => {
    const c = await newCampaign('Group leads');
    await s.call(key, 'campaigns.leads.create', { leadGroupId: c.leadGroupId, leads: [{ firstName: 'Una' }, { firstName: 'Vic' }] });
    const page = await s.call<Page>(key, 'campaigns.leads.search', { campaignId: c.id });
    expect(page.body.leads.map((l) => [l.firstName, l.enrollmentState, l.sequenceStatus]).sort()).toEqual([['Una', 'NOT_ENROLLED', null], ['Vic', 'NOT_ENROLLED', null]]);
    expect((await s.call<{ count: number }>(key, 'campaigns.leads.count', { campaignId: c.id })).body.count).toBe(2);
    const wide = await s.call<Page>(key, 'campaigns.leads.search', { query: 'Una' });
    expect(Object.keys(wide.body.leads[0] ?? {}).sort()).toEqual(Object.keys(page.body.leads.find((l) => l.firstName === 'Una') ?? {}).sort());

    const una = page.body.leads.find((l) => l.firstName === 'Una');
    const enrolled = await s.call(key, 'campaigns.leads.bulkEnrollInCampaign', {
      scope: { kind: 'campaign', campaignId: c.id }, selection: { mode: 'ids', leadIds: [una?.id] }, destination: { kind: 'existing', campaignId: c.id }, sender: 'unassign',
    });
    expect(enrolled.status, JSON.stringify(enrolled.body)).toBe(200);
    const after = await s.call<Page>(key, 'campaigns.leads.search', { campaignId: c.id });
    expect(after.body.leads.map((l) => [l.firstName, l.enrollmentState]).sort()).toEqual([['Una', 'IN_PROGRESS'], ['Vic', 'NOT_ENROLLED']]);
  });

  it('campaigns.leads.update changes only what is passed; nothing passed and a duplicate email are refused', async () => {
    const c = await newCampaign('Edits');
    const res = await s.call<{ leadIds: string[] }>(key, 'campaigns.leads.create', { leadGroupId: c.leadGroupId, leads: [{ firstName: 'Ed', email: 'ed@x.test' }, { firstName: 'Flo', email: 'flo@x.test' }] });
    const [ed, flo] = res.body.leadIds;
    const upd = await s.call<{ company: string; firstName: string; changed: string[] }>(key, 'campaigns.leads.update', { leadId: ed, company: 'Initech' });
    expect(upd.status).toBe(200);
    expect(upd.body).toMatchObject({ company: 'Initech', firstName: 'Ed', changed: ['company'] });
    await expectRefused('campaigns.leads.update', { leadId: ed }, 422, 'NO_FIELDS_TO_UPDATE');
    await expectRefused('campaigns.leads.update', { leadId: flo, email: 'ED@x.test' }, 409, 'DUPLICATE_LEAD');
  });

  it('bulk enrollment reports closed leads and leaves them out with excludeClosed', async () => {
    const c = await newCampaign('Closed');
    const dest = await newCampaign('Destination');
    const res = await s.call<{ leadIds: string[] }>(key, 'campaigns.leads.create', { leadGroupId: c.leadGroupId, leads: [{ firstName: 'Open' }, { firstName: 'Won' }] });
    const stages = await s.call<{ stages: { id: string; category: string }[] }>(key, 'pipelineStages.getAll', {});
    const won = stages.body.stages.find((st) => st.category === 'WON');
    await s.call(key, 'campaigns.leads.updateLeadStage', { leadId: res.body.leadIds[1], pipelineStageId: won?.id });
    const input = { scope: { kind: 'campaign', campaignId: c.id }, selection: { mode: 'filter' }, destination: { kind: 'existing', campaignId: dest.id }, sender: 'unassign', excludeClosed: true };
    const preview = await s.call<Record<string, unknown>>(key, 'campaigns.leads.bulkEnrollInCampaign', { ...input, dryRun: true });
    const real = await s.call<Record<string, unknown>>(key, 'campaigns.leads.bulkEnrollInCampaign', input);
    expect(preview.body).toEqual({ ...real.body, dryRun: true });
    expect(real.body).toMatchObject({ enrolled: 1, closedSelected: 1, skippedClosed: 1 });
  });
});
