/** The custom columns of a lead's panel (pure, so it is tested without a browser). */
import { columnKey } from '../../../../shared/lead-columns.ts';
import type { OpOutput } from '../../../../shared/ops/index.ts';

type Variable = OpOutput<'campaigns.leads.get'>['variables'][number];

/** The lead's custom columns, one field per name (as campaigns.leads.update matches names: columnKey): a lead on several lists can
 * have a column of the same name on each, and saving a name sets every one of them
 * (campaigns.leads.update). Shows the first list's value, and the others' where they differ. */
export function customFields(variables: readonly Variable[]): (Variable & { otherValues: string[] })[] {
  const byName = new Map<string, Variable & { otherValues: string[] }>();
  for (const v of variables) {
    if (v.builtInType) continue;
    const key = columnKey(v.name);
    const first = byName.get(key);
    if (!first) byName.set(key, { ...v, otherValues: [] });
    else if (v.value !== first.value && v.value !== '' && !first.otherValues.includes(v.value)) first.otherValues.push(v.value);
  }
  return [...byName.values()];
}

