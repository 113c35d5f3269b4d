/** Merge fields: `{{Display Name|fallback}}` in message text. A campaign's merge fields are the
 * columns of its lead group (built-in lead fields and custom variables). */
import type { Lead, LeadGroup, LeadGroupColumn } from './model/index.ts';

export type MergeFieldRef = { name: string; fallback: string | null; raw: string; index: number };

const MERGE_FIELD = /\{\{\s*([^{}|]*?)\s*(?:\|([^{}]*))?\}\}/g;

/** Every merge field written in `text`, in order. */
export function parseMergeFields(text: string): MergeFieldRef[] {
  const out: MergeFieldRef[] = [];
  for (const m of text.matchAll(MERGE_FIELD)) {
    out.push({ name: m[1] ?? '', fallback: m[2] ?? null, raw: m[0], index: m.index ?? 0 });
  }
  return out;
}

/** Display names are matched exactly (the specification: "the exact display name"). */
export function columnByName(group: LeadGroup, name: string): LeadGroupColumn | undefined {
  return group.columns.find((c) => c.name === name);
}

/** Merge fields in `text` that name nothing in the group's columns. */
export function unknownMergeFields(text: string, group: LeadGroup): string[] {
  const unknown = parseMergeFields(text).filter((r) => !columnByName(group, r.name)).map((r) => r.name);
  return [...new Set(unknown)];
}

/** The value of a column for a lead: the built-in field, or the custom variable by column id. */
export function columnValue(lead: Lead, column: LeadGroupColumn): string {
  if (column.builtInType) {
    const v = (lead as Record<string, unknown>)[column.builtInType];
    return typeof v === 'string' ? v : v === null || v === undefined ? '' : String(v);
  }
  return lead.variables[column.id] ?? '';
}

/** Renders `text` for a lead: each field becomes the lead's value, else its fallback, else ''. */
export function renderMergeFields(text: string, lead: Lead, group: LeadGroup): string {
  return text.replace(MERGE_FIELD, (_raw, name: string, fallback: string | undefined) => {
    const column = columnByName(group, name.trim());
    const value = column ? columnValue(lead, column).trim() : '';
    return value !== '' ? value : (fallback ?? '');
  });
}
