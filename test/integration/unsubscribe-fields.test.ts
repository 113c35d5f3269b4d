/** What an unsubscribe records is readable wherever Do Not Contact is: `unsubscribedAt` and
 * `unsubscribeSource` in campaigns.leads.get, in the search rows, as export columns (read-only on
 * re-import), and in /openapi.json. The lead unsubscribes the way a person does it in the inbox
 * (a reply labelled unsubscribe, inbox.setLabel). */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newMessage } from '../../shared/model/factories.ts';
import { parseCsv } from '../../shared/import/csv.ts';
import { suggestMapping } from '../../shared/import/fields.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

type Row = { id: string; doNotContact: boolean; unsubscribedAt: string | null; unsubscribeSource: string | null };

describe('unsubscribedAt and unsubscribeSource in the answers', () => {
  let s: TestServer;
  let gone: string;
  let kept: string;
  let at: string;
  beforeAll(async () => {
    s = await startTestServer('pglite');
    const campaign = await s.call<{ leadGroupId: string }>(s.ours.ownerKey, 'campaigns.create', { name: 'Unsub' });
    const created = await s.call<{ leadIds: string[] }>(s.ours.ownerKey, 'campaigns.leads.create', {
      leadGroupId: campaign.body.leadGroupId,
      leads: [
        { firstName: 'Gone', lastName: 'Away', email: 'gone@unsub.example' },
        { firstName: 'Still', lastName: 'Here', email: 'here@unsub.example' },
      ],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    [gone = '', kept = ''] = created.body.leadIds;
    const now = s.clock.now().toISOString();
    const reply = newMessage({ id: randomUUID(), workspaceId: s.ours.workspaceId, now }, {
      leadId: gone, sdrProfileId: randomUUID(), chatId: 'chat-unsub', direction: 'in', kind: 'email', text: 'Please remove me', status: 'received', sentAt: now, replyLabelSuggested: 'unsubscribe',
    });
    await s.db.forWorkspace(s.ours.workspaceId).commit([{ collection: 'messages', id: reply.id, before: null, after: reply }]);
    const labelled = await s.call<{ unsubscribedLeadIds: string[] }>(s.ours.memberKey, 'inbox.setLabel', { messageIds: [reply.id], label: 'unsubscribe' });
    expect(labelled.body.unsubscribedLeadIds).toEqual([gone]);
    at = s.clock.now().toISOString();
  });
  afterAll(async () => {
    await s?.close();
  });

  it('campaigns.leads.get returns them beside doNotContact', async () => {
    const one = await s.call<Row>(s.ours.memberKey, 'campaigns.leads.get', { leadId: gone });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ doNotContact: true, unsubscribedAt: at, unsubscribeSource: 'reply' });
    const other = await s.call<Row>(s.ours.memberKey, 'campaigns.leads.get', { leadId: kept });
    expect(other.body).toMatchObject({ doNotContact: false, unsubscribedAt: null, unsubscribeSource: null });
  });

  it('every search row has them', async () => {
    const res = await s.call<{ leads: Row[] }>(s.ours.memberKey, 'campaigns.leads.search', { query: 'unsub.example' });
    expect(res.status).toBe(200);
    const byId = new Map(res.body.leads.map((r) => [r.id, r]));
    expect(byId.get(gone)).toMatchObject({ doNotContact: true, unsubscribedAt: at, unsubscribeSource: 'reply' });
    expect(byId.get(kept)).toMatchObject({ doNotContact: false, unsubscribedAt: null, unsubscribeSource: null });
  });

  it('the export has them as columns, which a re-import skips', async () => {
    const res = await s.call<{ csv: string; headers: string[] }>(s.ours.memberKey, 'campaigns.leads.export', { query: 'unsub.example' });
    expect(res.status).toBe(200);
    expect(res.body.headers.slice(-2)).toEqual(['Unsubscribed at', 'Unsubscribe source']);
    const parsed = parseCsv(res.body.csv);
    const col = (name: string) => parsed.headers.indexOf(name);
    const rowOf = (id: string) => parsed.records.find((r) => r.cells[col('id')] === id)?.cells ?? [];
    expect([rowOf(gone)[col('Do not contact')], rowOf(gone)[col('Unsubscribed at')], rowOf(gone)[col('Unsubscribe source')]]).toEqual(['yes', at, 'reply']);
    expect([rowOf(kept)[col('Unsubscribed at')], rowOf(kept)[col('Unsubscribe source')]]).toEqual(['', '']);
    expect(suggestMapping(parsed.headers, [])).toMatchObject({ 'Unsubscribed at': 'skip', 'Unsubscribe source': 'skip' });
  });

  it('/openapi.json describes them in the lead, the search row and the export', async () => {
    const doc = (await (await fetch(`${s.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { responses: Record<string, { content: Record<string, { schema: { $ref: string } }> }> }>>; components: { schemas: Record<string, { properties: Record<string, Record<string, unknown>>; required?: string[] }> } };
    const output = (path: string, method: string) => {
      const ref = doc.paths[path]?.[method]?.responses['200']?.content['application/json']?.schema.$ref ?? '';
      const schema = doc.components.schemas[ref.replace('#/components/schemas/', '')];
      if (!schema) throw new Error(`no output schema for ${path}`);
      return schema;
    };
    const lead = output('/campaigns.leads.get', 'get');
    expect(lead.properties.unsubscribedAt).toBeDefined();
    expect(JSON.stringify(lead.properties.unsubscribeSource)).toContain('one_click');
    expect(lead.required).toEqual(expect.arrayContaining(['doNotContact', 'unsubscribedAt', 'unsubscribeSource']));
    const search = output('/campaigns.leads.search', 'get');
    expect(JSON.stringify(search)).toMatch(/unsubscribedAt.*unsubscribeSource|unsubscribeSource.*unsubscribedAt/);
    const exported = output('/campaigns.leads.export', 'get');
    expect(exported.properties.csv).toBeDefined();
    expect(JSON.stringify(doc.paths['/campaigns.leads.export'])).toContain('Unsubscribed at');
  });
});
