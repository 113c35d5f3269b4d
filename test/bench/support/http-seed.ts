/**
 * Filling a benchmark's sync server as a team fills it, over its HTTP API: leads through
 * `campaigns.leads.import` in the calls the desktop's import dialog sends (the file read with
 * shared/import, cut by the dialog's own planCalls: at most 5,000 rows a call), and the work done on
 * them afterwards (stages, tags, scores) as a desktop's pushes of the edited leads. Used by the
 * server, desktop and pull-count benchmarks, so none of them writes the database behind the server's
 * back (a bulk insert leaves other statistics, caches and dead rows than a team's use does).
 */
import { planCalls } from '../../../renderer/src/screens/leads/import-calls.ts';
import { toCsv } from '../../../shared/import/csv.ts';
import { suggestMapping } from '../../../shared/import/fields.ts';
import { readCsvText } from '../../../shared/import/file.ts';
import { COLLECTIONS } from '../../../shared/model/index.ts';
import type { Lead } from '../../../shared/model/index.ts';
import { MAX_PULL_LIMIT } from '../../../shared/wire/replication.ts';

/** A generated file: its header and row i (0-based) as cells, `rows` rows in all. */
export type GeneratedFile = { headers: readonly string[]; row: (i: number) => string[]; rows: number };

export type ImportOptions = {
  /** What the user picked for rows that share a name and company with a lead but no email or
   * profile URL (the dialog's choice; default 'report', the operation's default). */
  onPossibleDuplicate?: 'report' | 'create';
};

/** Rows read and planned at a time: a 1M-row file read whole would hold a gigabyte here. The calls
 * are the same as for the whole file, as no person has two rows in these files. */
const SLAB = 50_000;

/**
 * The import dialog's calls for `file` into the list `leadGroupId`, as JSON bodies (renderer's
 * csv-import.ts): the file read as CSV text, its columns mapped as suggested from the first 50 rows,
 * only the mapped columns sent, rows numbered as the spreadsheet numbers them (header = 1), new
 * people's fields filled ('fill_empty'). Made lazily, a slab of rows at a time.
 */
export function* importCalls(file: GeneratedFile, leadGroupId: string, opts: ImportOptions = {}): Generator<string> {
  const sample = Array.from({ length: Math.min(50, file.rows) }, (_, i) => file.row(i));
  const mapping = suggestMapping([...file.headers], sample);
  const sent = Object.fromEntries(file.headers.flatMap((h) => ((mapping[h] ?? 'skip') === 'skip' ? [] : [[h, mapping[h]]])));
  for (let at = 0; at < file.rows; at += SLAB) {
    const cells = Array.from({ length: Math.min(SLAB, file.rows - at) }, (_, k) => file.row(at + k));
    const read = readCsvText(toCsv([...file.headers], cells));
    // Row numbers of the whole file, not of the slab.
    const slab = { ...read, records: read.records.map((r) => ({ ...r, row: r.row + at })) };
    for (const call of planCalls(slab, mapping)) {
      yield JSON.stringify({
        leadGroupId,
        rows: call.rows,
        rowNumbers: call.rowNumbers,
        mapping: sent,
        onExisting: 'fill_empty',
        onPossibleDuplicate: opts.onPossibleDuplicate ?? 'report',
        dryRun: false,
      });
    }
  }
}

export type ImportRun = {
  calls: number;
  seconds: number;
  /** Leads created, in row order. */
  leadIds: string[];
  /** Calls answered with an error (each printed with its answer). */
  failed: number;
  slowest: number;
  slowestCall: number;
};

/** Posts the calls one after the other, as the dialog does (each waits for the one before). */
export async function postImportCalls(url: string, apiKey: string, calls: Iterable<string>, opts: { label: string; verbose?: boolean }): Promise<ImportRun> {
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const leadIds: string[] = [];
  let n = 0;
  let failed = 0;
  let slowest = 0;
  let slowestCall = 0;
  const started = performance.now();
  for (const body of calls) {
    n++;
    const t = performance.now();
    const res = await fetch(`${url}/campaigns.leads.import`, { method: 'POST', headers, body });
    const out = (await res.json()) as { results?: { code: string; leadId?: string }[] };
    const seconds = (performance.now() - t) / 1000;
    if (seconds > slowest) {
      slowest = seconds;
      slowestCall = n;
    }
    if (!res.ok || !out.results) {
      failed++;
      process.stdout.write(`[${opts.label}] import call ${n} answered ${res.status}: ${JSON.stringify(out).slice(0, 300)}\n`);
      continue;
    }
    for (const r of out.results) if (r.code === 'CREATED' && r.leadId) leadIds.push(r.leadId);
    if (opts.verbose) process.stdout.write(`[${opts.label}] import call ${n}: ${seconds.toFixed(2)} s\n`);
  }
  return { calls: n, seconds: (performance.now() - started) / 1000, leadIds, failed, slowest, slowestCall };
}

/** Imports the whole file and refuses to go on unless every row made a lead (a benchmark's seed). */
export async function importAll(url: string, apiKey: string, leadGroupId: string, file: GeneratedFile, label: string): Promise<ImportRun> {
  const run = await postImportCalls(url, apiKey, importCalls(file, leadGroupId, { onPossibleDuplicate: 'create' }), { label, verbose: process.env.BENCH_VERBOSE === '1' });
  if (run.failed > 0 || run.leadIds.length !== file.rows) {
    throw new Error(`[${label}] the import made ${run.leadIds.length} leads of ${file.rows} rows (${run.failed} failed calls)`);
  }
  return run;
}

/** Rows a desktop's push carries at most here (the API takes 1,000; the app sends 100). */
const PUSH_ROWS = 500;

/**
 * The team's work on the workspace's leads reaching the server as a desktop sends it: every lead
 * pulled (GET /replication/leads/pull, as a desktop's sync) and, where `edit` returns a changed
 * lead, pushed with the state it was pulled in (POST /replication/leads/push), where the server
 * checks it with the shared rules as it checks any desktop's writes. `edit` gets the leads in the
 * order they were written. Returns how many leads were pushed; any refusal or conflict throws.
 */
export async function pushLeadEdits(url: string, apiKey: string, edit: (lead: Lead, n: number) => Lead | null): Promise<number> {
  const headers = { authorization: `Bearer ${apiKey}`, 'x-schema-version': String(COLLECTIONS.leads.schema.version) };
  const pushed = new Set<string>();
  let checkpoint: unknown = null;
  let seen = 0;
  for (;;) {
    const q = new URLSearchParams({ limit: String(MAX_PULL_LIMIT) });
    if (checkpoint) q.set('checkpoint', JSON.stringify(checkpoint));
    const res = await fetch(`${url}/replication/leads/pull?${q.toString()}`, { headers });
    if (!res.ok) throw new Error(`pull answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    const page = (await res.json()) as { documents: (Lead & { _deleted: boolean })[]; checkpoint: unknown };
    // Our own pushes come after every lead written before them: the first of them ends the pass.
    const fresh = page.documents.filter((d) => !pushed.has(d.id));
    const rows: { assumedMasterState: unknown; newDocumentState: unknown }[] = [];
    for (const doc of fresh) {
      if (doc._deleted) continue;
      const { _deleted, ...lead } = doc;
      const next = edit(lead, seen++);
      if (next) rows.push({ assumedMasterState: doc, newDocumentState: { ...next, _deleted: false } });
    }
    for (let at = 0; at < rows.length; at += PUSH_ROWS) {
      const part = rows.slice(at, at + PUSH_ROWS);
      const r = await fetch(`${url}/replication/leads/push`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(part) });
      const conflicts = (await r.json()) as unknown[];
      if (!r.ok || !Array.isArray(conflicts) || conflicts.length > 0) throw new Error(`push answered ${r.status}: ${JSON.stringify(conflicts).slice(0, 300)}`);
      for (const row of part) pushed.add((row.newDocumentState as { id: string }).id);
    }
    checkpoint = page.checkpoint;
    if (fresh.length < page.documents.length || page.documents.length < MAX_PULL_LIMIT) return pushed.size;
  }
}
