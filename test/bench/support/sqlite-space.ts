/**
 * Where the bytes of a desktop's SQLite file are (electron/backend/storage/sqlite/): every table and
 * index by SQLite's dbstat virtual table (compiled into better-sqlite3: ENABLE_DBSTAT_VTAB), named by
 * the storage instance it belongs to (the registry `instances` maps `d<n>` tables to
 * `<collection>-<version>`; FTS5 shadow tables `d<n>_fts_*` and member tables `d<n>_m_*` count under
 * their documents table). Opened read-only, on a closed file (its owner holds an exclusive lock).
 */
import Database from 'better-sqlite3';

export type SpaceRow = { instance: string; object: string; kind: 'table' | 'index' | 'text index' | 'member table' | 'file'; bytes: number };

export function spaceOf(path: string): { fileBytes: number; rows: SpaceRow[] } {
  const db = new Database(path, { readonly: true });
  try {
    const instances = new Map(db.prepare<[], { name: string; tbl: string }>('SELECT name, tbl FROM instances').all().map((r) => [r.tbl, r.name]));
    const types = new Map(db.prepare<[], { name: string; type: string; tbl_name: string }>('SELECT name, type, tbl_name FROM sqlite_schema').all().map((r) => [r.name, r]));
    const pageSize = Number(db.pragma('page_size', { simple: true }));
    const fileBytes = Number(db.pragma('page_count', { simple: true })) * pageSize;
    const rows: SpaceRow[] = [];
    for (const r of db.prepare<[], { name: string; bytes: number }>('SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name').all()) {
      const schema = types.get(r.name);
      const base = /^(d\d+)(_fts|_m_)/.exec(r.name);
      let instance = 'file';
      let kind: SpaceRow['kind'] = 'file';
      if (base?.[1] && instances.has(base[1])) {
        instance = instances.get(base[1]) ?? base[1];
        kind = base[2] === '_fts' ? 'text index' : 'member table';
      } else if (schema && instances.has(schema.tbl_name)) {
        instance = instances.get(schema.tbl_name) ?? schema.tbl_name;
        kind = schema.type === 'index' ? 'index' : 'table';
      }
      rows.push({ instance, object: r.name, kind, bytes: r.bytes });
    }
    const free = Number(db.pragma('freelist_count', { simple: true })) * pageSize;
    if (free > 0) rows.push({ instance: 'file', object: 'free pages', kind: 'file', bytes: free });
    rows.sort((a, b) => b.bytes - a.bytes);
    return { fileBytes, rows };
  } finally {
    db.close();
  }
}

/** Lines for a report: the file, then per instance its total and each object of at least `minShare`
 * of the file, in bytes per lead. */
export function spaceLines(path: string, leads: number, minShare = 0.005): string[] {
  const { fileBytes, rows } = spaceOf(path);
  const perLead = (b: number): string => `${Math.round(b / leads)} B`;
  const byInstance = new Map<string, number>();
  for (const r of rows) byInstance.set(r.instance, (byInstance.get(r.instance) ?? 0) + r.bytes);
  const out = [`file ${(fileBytes / 1e6).toFixed(1)} MB = ${perLead(fileBytes)} a lead (target <= 2,500 B: ${fileBytes / leads <= 2500 ? 'target met' : 'target NOT met'})`];
  for (const [instance, bytes] of [...byInstance].sort((a, b) => b[1] - a[1])) {
    if (bytes < minShare * fileBytes) continue;
    const parts = rows.filter((r) => r.instance === instance && r.bytes >= minShare * fileBytes).map((r) => `${r.object} (${r.kind}) ${perLead(r.bytes)}`);
    out.push(`  ${instance}: ${perLead(bytes)} a lead${parts.length > 0 ? `: ${parts.join(', ')}` : ''}`);
  }
  return out;
}

if (process.argv[1]?.endsWith('sqlite-space.ts') && process.argv[2]) {
  for (const l of spaceLines(process.argv[2], Number(process.argv[3] ?? 1))) process.stdout.write(`${l}\n`);
}
