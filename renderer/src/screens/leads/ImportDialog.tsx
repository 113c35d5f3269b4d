/** CSV import: pick a file and a list, check the detected encoding and delimiter, map the columns,
 * choose what happens to people already in the CRM, preview the counts with a dry run, import with
 * progress (cancellable between calls), then read each row's result by its spreadsheet row number. */
import { useMemo, useRef, useState } from 'react';
import { DELIMITER_LABELS, DELIMITERS } from '../../../../shared/import/csv.ts';
import type { Delimiter } from '../../../../shared/import/csv.ts';
import { ENCODING_LABELS, TEXT_ENCODINGS } from '../../../../shared/import/encoding.ts';
import type { TextEncodingName } from '../../../../shared/import/encoding.ts';
import { customColumnName, FIELD_LABELS, IMPORT_FIELDS, suggestMapping } from '../../../../shared/import/fields.ts';
import type { ImportTarget } from '../../../../shared/import/fields.ts';
import { MAX_IMPORT_ROWS } from '../../../../shared/import/file.ts';
import { Dialog } from '../../components/Dialog.tsx';
import { ErrorText } from '../../components/ErrorText.tsx';
import { errorText, useOp } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';
import { CODE_WORDS, emptyTotals, importInCalls, readFile } from './csv-import.ts';
import type { OnExisting, OnPossibleDuplicate, Progress, RowResult, Totals } from './csv-import.ts';

type Phase = { kind: 'idle' } | { kind: 'running'; dryRun: boolean; progress: Progress } | { kind: 'done'; dryRun: boolean; progress: Progress; cancelled: boolean; columnsCreated: string[] };

const MODES: { value: OnExisting; label: string; hint: string }[] = [
  { value: 'fill_empty', label: 'Fill empty fields', hint: 'keep what the CRM has; add what it lacks' },
  { value: 'update', label: 'Update', hint: 'values in the file replace the CRM\'s; empty cells change nothing' },
  { value: 'skip', label: 'Skip', hint: 'leave them as they are' },
];

const PROBLEM_CODES = new Set<RowResult['code']>(['POSSIBLE_DUPLICATE', 'CONFLICTING_MATCH', 'INVALID_EMAIL', 'INVALID_PROFILE_URL', 'INVALID_VALUE', 'FIELD_TOO_LONG', 'MISSING_IDENTITY', 'MALFORMED_ROW']);
/** Rows listed under "Only rows that need a look": the problems, and a file listing someone twice. */
const LOOK_CODES = new Set<RowResult['code']>([...PROBLEM_CODES, 'DUPLICATE_IN_FILE']);
const SHOWN = 500;

export function ImportDialog({ onClose, defaultGroupId }: { onClose: () => void; defaultGroupId?: string }) {
  const groups = useOp('leadGroups.getAll', {});
  const toast = useApp((s) => s.toast);
  const [groupId, setGroupId] = useState(defaultGroupId ?? '');
  const [picked, setPicked] = useState<{ name: string; bytes: Uint8Array } | null>(null);
  const [encoding, setEncoding] = useState<TextEncodingName | 'auto'>('auto');
  const [delimiter, setDelimiter] = useState<Delimiter | 'auto'>('auto');
  const [choices, setChoices] = useState<Record<string, ImportTarget>>({});
  const [onExisting, setOnExisting] = useState<OnExisting>('fill_empty');
  const [onPossible, setOnPossible] = useState<OnPossibleDuplicate>('report');
  const [phase, setPhase] = useState<Phase>({ kind: 'idle' });
  const [error, setError] = useState<string | null>(null);
  const [onlyProblems, setOnlyProblems] = useState(true);
  const cancel = useRef(false);

  const lists = groups.data?.leadGroups ?? [];
  const group = lists.find((g) => g.id === groupId) ?? lists[0];
  const customColumns = useMemo(() => (group?.columns ?? []).filter((c) => c.builtInType === null).map((c) => c.name), [group]);

  const read = useMemo(() => {
    if (!picked) return null;
    try {
      return { file: readFile(picked.bytes, encoding, delimiter), error: null };
    } catch (e) {
      return { file: null, error: `Could not read ${picked.name}: ${errorText(e)}` };
    }
  }, [picked, encoding, delimiter]);
  const file = read?.file ?? null;
  const suggested = useMemo(() => (file ? suggestMapping(file.headers, file.records.slice(0, 50).map((r) => r.cells), customColumns) : {}), [file, customColumns]);
  const mapping = useMemo(() => Object.fromEntries(Object.entries(suggested).map(([h, t]) => [h, choices[h] ?? t])), [suggested, choices]);
  const mapsSomething = Object.values(mapping).some((t) => t !== 'skip');
  const busy = phase.kind === 'running';

  async function onFile(f: File) {
    setError(null);
    setPhase({ kind: 'idle' });
    setChoices({});
    setEncoding('auto');
    setDelimiter('auto');
    setPicked({ name: f.name, bytes: new Uint8Array(await f.arrayBuffer()) });
  }

  async function start(dryRun: boolean, only?: { rows: ReadonlySet<number>; onPossible: OnPossibleDuplicate }) {
    if (!file || !group) return;
    setError(null);
    cancel.current = false;
    const total = only ? only.rows.size : file.records.length;
    const first = file.records.find((r) => !only || only.rows.has(r.row))?.row ?? null;
    setPhase({ kind: 'running', dryRun, progress: { done: 0, total, totals: emptyTotals(), results: [], next: first } });
    let last: Progress = { done: 0, total, totals: emptyTotals(), results: [], next: first };
    try {
      const out = await importInCalls({
        file, mapping, leadGroupId: group.id, onExisting, onPossibleDuplicate: only?.onPossible ?? onPossible, dryRun, only: only?.rows,
        isCancelled: () => cancel.current,
        onProgress: (p) => {
          last = p;
          setPhase({ kind: 'running', dryRun, progress: p });
        },
      });
      setPhase({ kind: 'done', dryRun, progress: out, cancelled: out.cancelled, columnsCreated: out.columnsCreated });
      if (!dryRun) {
        const t = out.totals;
        toast(out.cancelled
          ? `Import cancelled: ${out.done.toLocaleString()} of ${out.total.toLocaleString()} rows were imported.`
          : `Imported ${picked?.name ?? 'the file'}: ${t.created.toLocaleString()} new, ${t.updated.toLocaleString()} updated.`);
      }
    } catch (e) {
      setPhase({ kind: 'done', dryRun, progress: last, cancelled: true, columnsCreated: [] });
      setError(`${dryRun ? 'The preview' : 'The import'} stopped at row ${last.next ?? '?'}: ${errorText(e)}${!dryRun && last.done > 0 ? ` The ${last.done.toLocaleString()} rows before it were imported.` : ''}`);
    }
  }

  const done = phase.kind === 'done' ? phase : null;
  const imported = done && !done.dryRun;
  const possible = done ? done.progress.results.filter((r) => r.code === 'POSSIBLE_DUPLICATE') : [];
  const results = done ? done.progress.results.filter((r) => !onlyProblems || LOOK_CODES.has(r.code)) : [];

  return (
    <Dialog
      title="Import leads from CSV"
      wide
      onClose={busy ? () => undefined : onClose}
      footer={
        busy ? (
          <button className="btn" onClick={() => (cancel.current = true)}>Cancel import</button>
        ) : imported ? (
          <button className="btn primary" onClick={onClose}>Done</button>
        ) : (
          <>
            <button className="btn" onClick={onClose}>Cancel</button>
            <button className="btn" disabled={!file || !group || !mapsSomething} onClick={() => void start(true)}>Preview (dry run)</button>
            <button className="btn primary" disabled={!file || !group || !mapsSomething} onClick={() => void start(false)}>
              {file ? `Import ${file.records.length.toLocaleString()} rows` : 'Import'}
            </button>
          </>
        )
      }
    >
      <ErrorText error={groups.error?.message} />
      <div className="controls">
        <label className="field">
          <span>CSV file</span>
          <input className="input" type="file" accept=".csv,.txt,text/csv" aria-label="CSV file" disabled={busy || !!imported} onChange={(e) => { const f = e.target.files?.[0]; if (f) void onFile(f); }} />
        </label>
        <label className="field">
          <span>Into list</span>
          <select value={group?.id ?? ''} onChange={(e) => { setGroupId(e.target.value); setChoices({}); }} aria-label="Lead list" disabled={busy || !!imported}>
            {lists.map((g) => (
              <option key={g.id} value={g.id}>{g.name}</option>
            ))}
          </select>
        </label>
        {file && (
          <>
            <label className="field">
              <span>Encoding</span>
              <select aria-label="Encoding" value={encoding} disabled={busy || !!imported} onChange={(e) => setEncoding(e.target.value as TextEncodingName | 'auto')}>
                <option value="auto">Detect{encoding === 'auto' && file.encoding ? ` (${ENCODING_LABELS[file.encoding as TextEncodingName] ?? file.encoding})` : ''}</option>
                {TEXT_ENCODINGS.map((e) => (
                  <option key={e} value={e}>{ENCODING_LABELS[e]}</option>
                ))}
              </select>
            </label>
            <label className="field">
              <span>Delimiter</span>
              <select aria-label="Delimiter" value={delimiter} disabled={busy || !!imported} onChange={(e) => setDelimiter(e.target.value as Delimiter | 'auto')}>
                <option value="auto">Detect ({DELIMITER_LABELS[file.delimiter]})</option>
                {DELIMITERS.map((d) => (
                  <option key={d} value={d}>{DELIMITER_LABELS[d]}</option>
                ))}
              </select>
            </label>
          </>
        )}
      </div>
      <ErrorText error={read?.error} />
      {file && file.problems.length > 0 && <ErrorText error={`Row ${file.problems[0]?.row}: ${file.problems[0]?.message}.`} />}
      {file && (
        <p className="muted" data-testid="file-summary">
          {picked?.name}: {file.records.length.toLocaleString()} rows, {file.headers.length} columns, read as {ENCODING_LABELS[file.encoding as TextEncodingName] ?? file.encoding}
          {file.bom ? ' with a byte-order mark' : ''}, separated by {DELIMITER_LABELS[file.delimiter].toLowerCase()}
          {file.headerRow > 1 ? `; the header is on row ${file.headerRow}` : ''}.
          {file.records.length > MAX_IMPORT_ROWS ? ` It is sent in parts of ${MAX_IMPORT_ROWS.toLocaleString()} rows.` : ''}
        </p>
      )}
      {phase.kind !== 'idle' && (
        <div className="stack" style={{ marginTop: 10 }}>
          {phase.kind === 'running' && (
            <>
              <div className="progress" role="progressbar" aria-label="Import progress" aria-valuenow={phase.progress.done} aria-valuemax={phase.progress.total}>
                <div style={{ width: `${phase.progress.total ? (phase.progress.done / phase.progress.total) * 100 : 100}%` }} />
              </div>
              <span className="muted">{phase.dryRun ? 'Checking' : 'Importing'}… {phase.progress.done.toLocaleString()} of {phase.progress.total.toLocaleString()} rows</span>
            </>
          )}
          <TotalsView totals={phase.progress.totals} dryRun={phase.dryRun} />
          {done?.cancelled && !done.dryRun && !error && (
            <div className="notice warn">Cancelled: {done.progress.done.toLocaleString()} of {done.progress.total.toLocaleString()} rows were imported and stay in the CRM; the rest were not sent.</div>
          )}
          {done && done.columnsCreated.length > 0 && (
            <span className="muted">{done.dryRun ? 'Would add' : 'Added'} the column{done.columnsCreated.length === 1 ? '' : 's'} {done.columnsCreated.map((c) => `"${c}"`).join(', ')} to "{group?.name}".</span>
          )}
        </div>
      )}
      {file && !imported && (
        <>
          <table className="plain" aria-label="Column mapping">
            <thead>
              <tr><th>Column in the file</th><th>Example</th><th>Becomes</th></tr>
            </thead>
            <tbody>
              {file.headers.map((h, i) => {
                const target = mapping[h] ?? 'skip';
                const own = `custom:${customColumnName(h)}`;
                const customs = [...new Set([own, ...customColumns.map((c) => `custom:${c}`), ...(target.startsWith('custom:') ? [target] : [])])];
                return (
                  <tr key={h}>
                    <td>{h}</td>
                    <td className="muted">{file.records.find((r) => (r.cells[i] ?? '').trim() !== '')?.cells[i]?.slice(0, 60) ?? ''}</td>
                    <td>
                      <select aria-label={`Map ${h}`} value={target} disabled={busy} onChange={(e) => setChoices({ ...choices, [h]: e.target.value as ImportTarget })}>
                        <option value="skip">Don't import</option>
                        {IMPORT_FIELDS.map((f) => (
                          <option key={f} value={f}>{FIELD_LABELS[f]}</option>
                        ))}
                        {customs.map((c) => (
                          <option key={c} value={c}>{customColumns.includes(c.slice(7)) ? `Column: ${c.slice(7)}` : `New column: ${c.slice(7)}`}</option>
                        ))}
                      </select>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          <fieldset className="stack" style={{ border: 0, padding: 0, margin: '10px 0 0' }}>
            <legend>People already in the CRM (same lead id, profile URL or email)</legend>
            <div className="row wrap">
              {MODES.map((m) => (
                <label key={m.value} className="row" title={m.hint}>
                  <input type="radio" name="on-existing" value={m.value} checked={onExisting === m.value} disabled={busy} onChange={() => setOnExisting(m.value)} />
                  <span>{m.label} <span className="faint">({m.hint})</span></span>
                </label>
              ))}
            </div>
            <label className="field">
              <span>Same name and company, no shared email or URL</span>
              <select aria-label="Possible duplicates" value={onPossible} disabled={busy} onChange={(e) => setOnPossible(e.target.value as OnPossibleDuplicate)}>
                <option value="report">List them for me to decide</option>
                <option value="merge">Merge into the existing lead</option>
                <option value="create">Create a new lead anyway</option>
              </select>
            </label>
          </fieldset>
        </>
      )}
      {imported && possible.length > 0 && (
        <div className="notice warn row wrap" style={{ marginTop: 8 }}>
          <span className="grow">{possible.length} row{possible.length === 1 ? ' looks' : 's look'} like {possible.length === 1 ? 'a person' : 'people'} already in the CRM (same name and company) and {possible.length === 1 ? 'was' : 'were'} not imported.</span>
          <button className="btn small" onClick={() => void start(false, { rows: new Set(possible.map((r) => r.row)), onPossible: 'merge' })}>Merge into existing</button>
          <button className="btn small" onClick={() => void start(false, { rows: new Set(possible.map((r) => r.row)), onPossible: 'create' })}>Create as new leads</button>
        </div>
      )}
      {done && done.progress.results.length > 0 && (
        <div className="stack" style={{ marginTop: 8 }}>
          <label className="row">
            <input type="checkbox" checked={onlyProblems} onChange={(e) => setOnlyProblems(e.target.checked)} />
            <span>Only rows that need a look</span>
          </label>
          <table className="plain" aria-label="Row results">
            <thead>
              <tr><th style={{ width: 60 }}>Row</th><th style={{ width: 160 }}>Result</th><th>Details</th></tr>
            </thead>
            <tbody>
              {results.slice(0, SHOWN).map((r) => (
                <tr key={r.row} data-code={r.code}>
                  <td>{r.row}</td>
                  <td title={r.code}>{CODE_WORDS[r.code]}</td>
                  <td className={PROBLEM_CODES.has(r.code) ? 'error-cell' : undefined}>{r.message}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {results.length > SHOWN && <span className="muted">and {(results.length - SHOWN).toLocaleString()} more rows.</span>}
          {results.length === 0 && <span className="muted">Every row went in as it should.</span>}
        </div>
      )}
      <ErrorText error={error} />
    </Dialog>
  );
}

function TotalsView({ totals, dryRun }: { totals: Totals; dryRun: boolean }) {
  const items: [keyof Totals, string][] = [
    ['created', dryRun ? 'would be created' : 'created'],
    ['updated', dryRun ? 'would be updated' : 'updated'],
    ['unchanged', 'unchanged'],
    ['repeatedInFile', 'repeat an earlier row'],
    ['skipped', 'skipped'],
    ['possibleDuplicates', 'possible duplicates'],
    ['invalid', 'refused'],
  ];
  return (
    <div className="row wrap" data-testid={dryRun ? 'preview-totals' : 'import-totals'}>
      {dryRun && <strong>Preview:</strong>}
      {items.map(([k, label]) => (
        <span key={k} data-count={k}><strong>{totals[k].toLocaleString()}</strong> {label}</span>
      ))}
    </div>
  );
}
