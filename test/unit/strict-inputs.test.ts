import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { OpDef } from '../../shared/ops/define.ts';
import { openApiDocument } from '../../sync-server/openapi.ts';
import { execute } from '../../shared/ops/execute.ts';
import { operations } from '../../shared/ops/index.ts';
import { textProblems } from '../../shared/ops/input-guard.ts';
import { makeHarness, testSecrets } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

/** Calls an operation with an input the types would not allow (what a script or a typo sends). */
function callRaw(h: Harness, name: string, input: unknown) {
  return execute(name, input, { actor: h.owner, store: h.store, clock: h.clock, ids: h.ids, random: h.random, secrets: testSecrets });
}

type Issue = { path: string; message: string };
const issuesOf = (e: { details: Record<string, unknown> }): Issue[] => e.details.issues as Issue[];

describe('strict inputs: undeclared request fields are refused', () => {
  it('tags.create with a misspelled field is refused naming it, and nothing is created', async () => {
    const h = await makeHarness();
    const e = await h.expectRefused(callRaw(h, 'tags.create', { name: 'Typo', colour: '#f00' }), 'INVALID_INPUT');
    expect(issuesOf(e)).toEqual([expect.objectContaining({ path: 'colour' })]);
    expect(e.message).toMatch(/colour/);
    expect((await h.call('tags.getAll', {})).tags.map((t) => t.name)).not.toContain('Typo');
  });

  it('dryRun on an operation without a dry run is refused instead of running for real', async () => {
    const h = await makeHarness();
    const e = await h.expectRefused(
      callRaw(h, 'campaigns.leads.create', { leadGroupId: h.main.leadGroupId, leads: [{ firstName: 'Real' }], dryRun: true }),
      'INVALID_INPUT',
    );
    expect(issuesOf(e).map((i) => i.path)).toEqual(['dryRun']);
    expect(await h.store.count('leads')).toBe(0);
  });

  it('names undeclared fields at any depth: inside array items, unions and nested objects', async () => {
    const h = await makeHarness();
    const e = await h.expectRefused(
      callRaw(h, 'campaigns.leads.create', { leadGroupId: h.main.leadGroupId, leads: [{ firstName: 'A' }, { firstName: 'B', nickname: 'bee' }] }),
      'INVALID_INPUT',
    );
    expect(issuesOf(e).map((i) => i.path)).toEqual(['leads.1.nickname']);

    const lead = await h.addLead({ firstName: 'Ann' });
    const campaign = await h.addCampaign();
    const bulk = await h.expectRefused(
      callRaw(h, 'campaigns.leads.bulkEnrollInCampaign', {
        scope: { kind: 'workspace' },
        selection: { mode: 'ids', leadIds: [lead.id], tagIds: [] },
        destination: { kind: 'existing', campaignId: campaign.id },
        sender: 'keep',
      }),
      'INVALID_INPUT',
    );
    expect(issuesOf(bulk).map((i) => i.path)).toEqual(['selection.tagIds']);

    const schedule = await h.expectRefused(
      callRaw(h, 'campaigns.updateSchedule', { campaignId: campaign.id, days: { monday: { enabled: true, from: '08:00' } } }),
      'INVALID_INPUT',
    );
    expect(issuesOf(schedule).map((i) => i.path)).toEqual(['days.monday.from']);
  });

  it('a key whose value is undefined carries nothing, on every transport (the desktop IPC keeps such keys)', async () => {
    const h = await makeHarness();
    const tag = (await callRaw(h, 'tags.create', { name: 'Quiet', colour: undefined, color: undefined })) as { name: string };
    expect(tag.name).toBe('Quiet');
    const page = (await callRaw(h, 'campaigns.leads.search', { query: undefined, nested: undefined })) as { leads: unknown[] };
    expect(page.leads).toEqual([]);
  });

  it('GET query coercions keep working (booleans, numbers and lists as strings)', async () => {
    const h = await makeHarness();
    await h.addLead({ firstName: 'Ann' });
    const c = await h.addCampaign();
    const page = (await callRaw(h, 'campaigns.leads.search', { includeVariables: 'true', limit: '10', query: 'ann' })) as { leads: unknown[] };
    expect(page.leads).toHaveLength(1);
    const metrics = (await callRaw(h, 'campaigns.getMetrics', { campaignIds: `${c.id}` })) as { metrics: unknown[] };
    expect(metrics.metrics).toHaveLength(1);
    const refused = await h.expectRefused(callRaw(h, 'campaigns.leads.search', { includeVariable: 'true' }), 'INVALID_INPUT');
    expect(issuesOf(refused).map((i) => i.path)).toEqual(['includeVariable']);
  });

  it('every operation refuses an unknown top-level field, and declares dryRun exactly when it has a dry run', () => {
    for (const op of Object.values(operations as Record<string, OpDef>)) {
      const json = z.toJSONSchema(op.input, { io: 'input', unrepresentable: 'any' }) as { properties?: Record<string, unknown>; additionalProperties?: unknown; oneOf?: unknown };
      if (!json.oneOf) expect(json.additionalProperties, op.name).toBe(false);
      expect('dryRun' in (json.properties ?? {}), `${op.name} dryRun`).toBe(op.dryRun);
      const r = op.input.safeParse({ definitelyNotAField: 1 });
      expect(r.success, op.name).toBe(false);
      if (!json.oneOf) expect(r.error?.issues.some((i) => i.code === 'unrecognized_keys'), op.name).toBe(true);
    }
  });

  it('the OpenAPI document marks requests closed and leaves responses open', () => {
    const doc = openApiDocument();
    const text = (v: unknown) => JSON.stringify(v);
    const paths = doc.paths as Record<string, Record<string, { requestBody?: { content: Record<string, { schema: unknown }> }; responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>>;
    const create = paths['/tags.create']?.post;
    expect(text(create?.requestBody?.content['application/json']?.schema)).toContain('"additionalProperties":false');
    for (const [path, methods] of Object.entries(paths)) {
      for (const m of Object.values(methods)) {
        expect(text(m.responses?.['200']?.content?.['application/json']?.schema ?? {}), path).not.toContain('"additionalProperties":false');
      }
    }
  });
});

describe('strict inputs: text no store can hold is refused', () => {
  it('refuses NUL characters in a text field, naming the field, and stores nothing', async () => {
    const h = await makeHarness();
    const e = await h.expectRefused(callRaw(h, 'tags.create', { name: 'bad\u0000tag' }), 'INVALID_INPUT');
    expect(issuesOf(e)).toEqual([expect.objectContaining({ path: 'name', message: expect.stringMatching(/NUL/) })]);
  });

  it('refuses unpaired surrogates, also deep inside a row and in variable names, but accepts real emoji', async () => {
    const h = await makeHarness();
    const e = await h.expectRefused(
      callRaw(h, 'campaigns.leads.create', { leadGroupId: h.main.leadGroupId, leads: [{ firstName: 'Ok' }, { firstName: 'Bad\uD83D' }] }),
      'INVALID_INPUT',
    );
    expect(issuesOf(e)).toEqual([expect.objectContaining({ path: 'leads.1.firstName', message: expect.stringMatching(/surrogate/) })]);
    const key = await h.expectRefused(
      callRaw(h, 'campaigns.leads.create', { leadGroupId: h.main.leadGroupId, leads: [{ firstName: 'Ok', variables: { 'Colour\uDC00': 'teal' } }] }),
      'INVALID_INPUT',
    );
    expect(issuesOf(key)[0]?.path).toMatch(/^leads\.0\.variables\./);
    const ok = await h.call('campaigns.leads.create', { leadGroupId: h.main.leadGroupId, leads: [{ firstName: 'Zoë 😀' }] });
    expect(ok.created).toBe(1);
  });

  it('lists the problems depth-first, field names when their object is reached (the last first)', () => {
    const input = { a: 'ok', b: ['x\u0000', { 'k\uD800': 1, 'j\uDC00': 2, c: 'bad\u0000' }], 'z\u0000': 'v', d: { e: 'y\uD83D' } };
    const NUL = 'must not contain NUL characters (\\u0000)';
    const SURROGATE = 'must not contain unpaired UTF-16 surrogates (invalid Unicode)';
    expect(textProblems(input)).toEqual([
      { path: JSON.stringify('z\u0000'), message: `field name ${NUL}` },
      { path: 'b.0', message: NUL },
      { path: `b.1.${JSON.stringify('j\uDC00')}`, message: `field name ${SURROGATE}` },
      { path: `b.1.${JSON.stringify('k\uD800')}`, message: `field name ${SURROGATE}` },
      { path: 'b.1.c', message: NUL },
      { path: 'd.e', message: SURROGATE },
    ]);
    expect(textProblems('bad\u0000')).toEqual([{ path: '', message: NUL }]);
    expect(textProblems({ rows: Array.from({ length: 30 }, () => ({ x: '\u0000' })) })).toHaveLength(20);
  });

  it('refuses an input nested deeper than any operation needs, without walking it all', async () => {
    const h = await makeHarness();
    let deep: unknown = 'x';
    for (let i = 0; i < 10_000; i++) deep = { a: deep };
    const e = await h.expectRefused(callRaw(h, 'tags.create', { name: 'Deep', color: deep }), 'INVALID_INPUT');
    expect(issuesOf(e)[0]?.message).toMatch(/nested more than/);
  });
});
