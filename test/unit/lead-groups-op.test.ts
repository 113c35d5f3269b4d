import { describe, expect, it } from 'vitest';
import { makeHarness } from '../support/harness.ts';

describe('leadGroups.getAll', () => {
  it("lists the workspace's lead groups with their columns, and nothing of another workspace", async () => {
    const h = await makeHarness();
    const { leadGroups } = await h.call('leadGroups.getAll', {});
    expect(leadGroups.map((g) => g.id)).toEqual([h.main.leadGroupId]);
    const columns = leadGroups[0]?.columns ?? [];
    expect(columns.find((c) => c.name === 'First name')?.builtInType).toBe('firstName');
    const foreign = await h.call('leadGroups.getAll', {}, h.foreignOwner);
    expect(foreign.leadGroups.map((g) => g.id)).toEqual([h.other.leadGroupId]);
  });
});
