/**
 * Lead-group rules. A column's display name is a merge field, so a column a step's message uses may
 * not be renamed or deleted (the message would silently render empty), and column names stay unique
 * so a merge field names one column.
 */
import { DomainError } from '../errors.ts';
import { sameJson } from '../json-equal.ts';
import type { LeadGroup, LeadGroupColumn } from '../model/index.ts';
import { columnKey } from '../lead-columns.ts';
import { describeStep } from '../sequence.ts';
import type { StoreReader } from '../store.ts';
import { stepUsesMergeField } from './readiness.ts';
import type { Rule } from './types.ts';

/** The first step of a campaign on the group that uses `name` as a merge field. */
async function firstUse(read: StoreReader, group: LeadGroup, name: string) {
  const { docs } = await read.query('campaigns', { where: { op: 'eq', field: 'leadGroupId', value: group.id } });
  for (const campaign of docs) {
    const step = campaign.steps.find((s) => stepUsesMergeField(s, name));
    if (step) return { campaign, step };
  }
  return null;
}

export const leadGroupRules: readonly Rule<'leadGroups'>[] = [
  function columnNamesAreUnique({ before, after }) {
    if (!after || (before && sameJson(before.columns, after.columns))) return;
    // Names are matched case-insensitively (lead creation, import, merge-field lookup by name), so
    // a new or renamed column may not differ from another only by case. Pairs that already
    // existed before this write are left alone.
    const old = new Map((before?.columns ?? []).map((c) => [c.id, c.name]));
    const seen = new Map<string, LeadGroupColumn>();
    for (const c of after.columns) {
      const key = columnKey(c.name);
      const other = seen.get(key);
      if (other && (old.get(c.id) !== c.name || old.get(other.id) !== other.name)) {
        throw new DomainError('INVALID_INPUT', `The lead group already has a column named "${other.name}".`, { leadGroupId: after.id, name: c.name });
      }
      if (!other) seen.set(key, c);
    }
  },

  async function usedColumnsKeepTheirName({ before, after }, { read }) {
    if (!before) return;
    const now = new Map((after?.columns ?? []).map((c) => [c.id, c]));
    const gone: { column: LeadGroupColumn; renamedTo: string | null }[] = [];
    for (const column of before.columns) {
      const current = now.get(column.id);
      if (!current) gone.push({ column, renamedTo: null });
      else if (current.name !== column.name) gone.push({ column, renamedTo: current.name });
    }
    for (const { column, renamedTo } of gone) {
      // Another column may take the old name in the same write; then the merge field still resolves.
      if (after?.columns.some((c) => c.name === column.name)) continue;
      const use = await firstUse(read, after ?? before, column.name);
      if (!use) continue;
      const { campaign, step } = use;
      const what = renamedTo === null ? 'deleted' : `renamed to "${renamedTo}"`;
      throw new DomainError(
        'COLUMN_IN_USE',
        `The column "${column.name}" cannot be ${what}: ${describeStep(campaign.steps, step)} of campaign "${campaign.name}" uses it as the merge field {{${column.name}}}. Change that message first.`,
        { leadGroupId: before.id, variableTypeId: column.id, column: column.name, campaignId: campaign.id, campaignName: campaign.name, stepId: step.id },
      );
    }
  },
];
