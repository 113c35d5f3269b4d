/** The server bench's raw baseline inserts the documents the import makes (issue 26 asks for the raw
 * INSERT "of the same documents"): importedLeads runs the dialog's calls through the operation on the
 * memory store, and the server, given the same calls over HTTP, stores the same leads field for field
 * (ids, times, the workspace's and its list's ids and the custom columns' ids aside). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Lead } from '../../shared/model/index.ts';
import { EXPORT_HEADERS, exportRow } from '../bench/support/generated-export.ts';
import { importCalls } from '../bench/support/http-seed.ts';
import { importedLeads } from '../bench/support/imported-leads.ts';
import { startTestServer } from './support/server.ts';
import type { TestServer } from './support/server.ts';

const FILE = { headers: EXPORT_HEADERS, row: exportRow, rows: 240 };

/** A lead without what differs between two workspaces; its custom columns by position. */
function comparable(l: Lead): Record<string, unknown> {
  const { id: _id, workspaceId: _w, createdAt: _c, updatedAt: _u, leadGroupId: _g, groupIds, variables, ...rest } = l;
  return { ...rest, lists: groupIds.length, variables: Object.values(variables) };
}

describe('the import bench baseline', () => {
  let s: TestServer;

  beforeAll(async () => {
    s = await startTestServer('pglite');
  }, 60_000);

  afterAll(async () => {
    await s?.close();
  });

  it('makes the documents the server stores for the same calls, in the same order', async () => {
    const groups = await s.call<{ leadGroups: { id: string }[] }>(s.ours.ownerKey, 'leadGroups.getAll');
    const groupId = groups.body.leadGroups[0]?.id ?? '';
    const stored: string[] = [];
    for (const body of importCalls(FILE, groupId)) {
      const res = await s.call<{ results: { code: string; leadId?: string }[] }>(s.ours.ownerKey, 'campaigns.leads.import', JSON.parse(body) as Record<string, unknown>);
      expect(res.status).toBe(200);
      for (const r of res.body.results) if (r.code === 'CREATED' && r.leadId) stored.push(r.leadId);
    }
    const server = await s.db.forWorkspace(s.ours.workspaceId).getMany('leads', stored);
    const made = await importedLeads(FILE);

    expect(made).toHaveLength(FILE.rows);
    expect(server).toHaveLength(FILE.rows);
    expect(made.map(comparable)).toEqual(server.map(comparable));
    // Custom columns (the export's '# Employees', 'Industry', 'Apollo Contact Id') are in the documents.
    expect(Object.keys(made[0]?.variables ?? {})).toHaveLength(3);
    // Ids and times are spelt alike, so the documents weigh the same.
    const bytes = (leads: Lead[]) => leads.reduce((n, l) => n + JSON.stringify(l).length, 0);
    expect(bytes(made)).toBe(bytes(server));
  });
});
