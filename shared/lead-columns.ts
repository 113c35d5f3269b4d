/**
 * The columns of a lead group: the built-in ones (a lead field each, e.g. firstName) and custom ones
 * (`{id, name}`; the id is the `variableTypeId`, a lead stores its value in `lead.variables[id]`).
 * A column's display name is a merge field, so names are unique in a group, case-insensitively.
 *
 * Every operation that adds, finds or removes a column goes through this module (lead creation,
 * import, `campaigns.addColumn`, `campaigns.removeColumn`), so they all match names the same way.
 */
import type { Ctx } from './context.ts';
import { nowIso } from './context.ts';
import { DomainError, notFound } from './errors.ts';
import type { Lead, LeadGroup, LeadGroupColumn } from './model/index.ts';

/** Longest display name of a column (the lead-group schema's limit). */
export const MAX_COLUMN_NAME = 100;
/** Most custom columns one lead group may hold (keeps rows and merge-field lists bounded). */
export const MAX_CUSTOM_COLUMNS = 200;

/** The key names are matched by: trimmed, lower-cased (locale-independent). */
export const columnKey = (name: string): string => name.trim().toLowerCase();

/** The column a name designates: its display name (case-insensitive), else for built-in columns
 * the lead field name (`firstName`, `jobTitle`), so "firstName" never becomes a custom column. */
export function findColumn(group: LeadGroup, name: string): LeadGroupColumn | undefined {
  const key = columnKey(name);
  return (
    group.columns.find((c) => columnKey(c.name) === key) ??
    group.columns.find((c) => c.builtInType !== null && c.builtInType.toLowerCase() === key)
  );
}

/** Why `name` cannot be a column's display name, or null. A merge field is written
 * `{{Display Name|fallback}}`, so braces and the pipe would make the column unusable in messages. */
export function columnNameProblem(name: string): string | null {
  const trimmed = name.trim();
  if (trimmed === '') return 'a column name must not be empty';
  if (trimmed.length > MAX_COLUMN_NAME) return `a column name is at most ${MAX_COLUMN_NAME} characters ("${trimmed.slice(0, 40)}…")`;
  if (/[{}|]/.test(trimmed)) return `a column name cannot contain "{", "}" or "|" ("${trimmed}"): it is written as a merge field {{${trimmed}}}`;
  return null;
}

/** Loads a lead group or throws NOT_FOUND. */
async function loadGroup(ctx: Ctx, leadGroupId: string): Promise<LeadGroup> {
  const group = await ctx.db.get('leadGroups', leadGroupId);
  if (!group) throw notFound('Lead group', leadGroupId);
  return group;
}

/**
 * Finds or creates the columns named `names` in the lead group `leadGroupId` and returns them keyed
 * by `columnKey(name)` (trimmed, lower-cased). A name matches an existing column by display name,
 * case-insensitively (built-in columns also by their lead field name, see `findColumn`): such a
 * column is returned as it is, so callers check `builtInType` (non-null = a lead field, else a
 * custom value in `lead.variables[column.id]`). Missing names become custom columns, named as first
 * given (trimmed), appended in the order given, and the group is staged once in `ctx.db` (committed
 * with the rest of the operation, discarded by a dry run).
 *
 * Throws INVALID_INPUT (nothing staged) when a new name is empty, too long or holds `{`, `}` or `|`,
 * or when the group would exceed MAX_CUSTOM_COLUMNS; NOT_FOUND for an unknown group.
 * Signature stable: the CSV/JSON import calls it.
 */
export async function ensureCustomColumns(ctx: Ctx, leadGroupId: string, names: Iterable<string>): Promise<Map<string, LeadGroupColumn>> {
  const group = await loadGroup(ctx, leadGroupId);
  const out = new Map<string, LeadGroupColumn>();
  const added: LeadGroupColumn[] = [];
  for (const name of names) {
    const key = columnKey(name);
    if (out.has(key)) continue;
    const existing = findColumn(group, name);
    if (existing) {
      out.set(key, existing);
      continue;
    }
    const problem = columnNameProblem(name);
    if (problem) throw new DomainError('INVALID_INPUT', `Column "${name.trim()}": ${problem}.`, { field: 'name', name, leadGroupId: group.id });
    const column: LeadGroupColumn = { id: ctx.ids.uuid(), name: name.trim(), builtInType: null };
    added.push(column);
    out.set(key, column);
  }
  if (added.length > 0) {
    const custom = group.columns.filter((c) => c.builtInType === null).length + added.length;
    if (custom > MAX_CUSTOM_COLUMNS) {
      throw new DomainError('INVALID_INPUT', `Lead group "${group.name}" would have ${custom} custom columns; at most ${MAX_CUSTOM_COLUMNS} are allowed.`, {
        field: 'variables',
        leadGroupId: group.id,
        max: MAX_CUSTOM_COLUMNS,
      });
    }
    await ctx.db.put('leadGroups', { ...group, columns: [...group.columns, ...added], updatedAt: nowIso(ctx) });
  }
  return out;
}

/** Adds one custom column by display name. An existing column with that name (case-insensitively)
 * is a refusal, INVALID_INPUT with `details.existing` (the column), so a typo never silently reuses
 * another column. Returns the new column (staged in ctx.db). */
export async function addCustomColumn(ctx: Ctx, leadGroupId: string, name: string): Promise<LeadGroupColumn> {
  const group = await loadGroup(ctx, leadGroupId);
  const existing = findColumn(group, name);
  if (existing) {
    throw new DomainError('INVALID_INPUT', `Lead group "${group.name}" already has a column named "${existing.name}".`, {
      field: 'name',
      leadGroupId: group.id,
      existing: { variableTypeId: existing.id, name: existing.name, builtInType: existing.builtInType },
    });
  }
  const column = (await ensureCustomColumns(ctx, leadGroupId, [name])).get(columnKey(name));
  if (!column) throw new DomainError('INTERNAL', `Column "${name}" was not created.`);
  return column;
}

/** Removes a custom column from the group and clears its value from the group's leads (staged in
 * ctx.db). Built-in columns cannot be removed (INVALID_INPUT); an unknown id is NOT_FOUND. The
 * lead-group rules refuse the write with COLUMN_IN_USE while a step's message uses the column.
 * Returns the removed column and how many leads held a value for it. */
export async function removeCustomColumn(ctx: Ctx, leadGroupId: string, variableTypeId: string): Promise<{ column: LeadGroupColumn; clearedValues: number }> {
  const group = await loadGroup(ctx, leadGroupId);
  const column = group.columns.find((c) => c.id === variableTypeId);
  if (!column) throw notFound('Column', variableTypeId);
  if (column.builtInType !== null) {
    throw new DomainError('INVALID_INPUT', `"${column.name}" is a built-in column (the lead's ${column.builtInType}); only custom columns can be removed.`, {
      field: 'variableTypeId',
      variableTypeId: column.id,
      builtInType: column.builtInType,
    });
  }
  const now = nowIso(ctx);
  await ctx.db.put('leadGroups', { ...group, columns: group.columns.filter((c) => c.id !== column.id), updatedAt: now });
  const { docs } = await ctx.db.query('leads', { where: { op: 'has', field: 'groupIds', value: group.id } });
  let clearedValues = 0;
  for (const lead of docs) {
    if (!(column.id in lead.variables)) continue;
    const variables: Lead['variables'] = { ...lead.variables };
    delete variables[column.id];
    await ctx.db.put('leads', { ...lead, variables, updatedAt: now });
    clearedValues++;
  }
  return { column, clearedValues };
}
