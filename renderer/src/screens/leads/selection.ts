/** Which leads are selected: explicit ids, or "every lead matching the filter" minus exclusions
 * (what the bulk operations call a filter selection). Immutable: every change returns a new one. */
import type { LeadFilters } from '../../state/app-store.ts';

export class Selection {
  private constructor(
    readonly mode: 'ids' | 'all',
    private readonly ids: ReadonlySet<string>,
    private readonly excluded: ReadonlySet<string>,
  ) {}

  static none(): Selection {
    return new Selection('ids', new Set(), new Set());
  }

  static allMatching(): Selection {
    return new Selection('all', new Set(), new Set());
  }

  has(id: string): boolean {
    return this.mode === 'ids' ? this.ids.has(id) : !this.excluded.has(id);
  }

  get isEmpty(): boolean {
    return this.mode === 'ids' && this.ids.size === 0;
  }

  /** Selected ids (ids mode only). */
  get idList(): string[] {
    return [...this.ids];
  }

  get excludedList(): string[] {
    return [...this.excluded];
  }

  /** How many are selected; in "all" mode it is unknown until counted, so null. */
  get size(): number | null {
    return this.mode === 'ids' ? this.ids.size : null;
  }

  toggle(id: string): Selection {
    return this.withAll([id], !this.has(id));
  }

  withAll(ids: readonly string[], on: boolean): Selection {
    if (this.mode === 'ids') {
      const next = new Set(this.ids);
      for (const id of ids) {
        if (on) next.add(id);
        else next.delete(id);
      }
      return new Selection('ids', next, new Set());
    }
    const next = new Set(this.excluded);
    for (const id of ids) {
      if (on) next.delete(id);
      else next.add(id);
    }
    return new Selection('all', new Set(), next);
  }

  clear(): Selection {
    return Selection.none();
  }
}

/** The bulk operations' scope and selection for this selection under these filters. */
export function bulkTarget(sel: Selection, f: LeadFilters) {
  const scope = f.campaignId ? ({ kind: 'campaign', campaignId: f.campaignId } as const) : ({ kind: 'workspace' } as const);
  const selection =
    sel.mode === 'ids'
      ? ({ mode: 'ids', leadIds: sel.idList } as const)
      : ({
          mode: 'filter',
          tagId: f.tagId !== 'all' ? f.tagId : undefined,
          query: f.query.trim() || undefined,
          pipelineStage: f.pipelineStage || undefined,
          excludeLeadIds: sel.excludedList.length > 0 ? sel.excludedList : undefined,
        } as const);
  return { scope, selection };
}

/** The search input of these filters (without paging). */
export function searchInput(f: LeadFilters) {
  return {
    query: f.query.trim() || undefined,
    campaignId: f.campaignId || undefined,
    tagId: f.tagId,
    pipelineStage: f.pipelineStage || undefined,
    sortBy: f.sortBy,
    sortOrder: f.sortOrder,
  };
}
