/** CSV import: pick a file and a list, map its columns, see duplicates, import with progress; rows
 * the import refuses are listed with their line number and reason while the rest go in. */
import Papa from 'papaparse';
import { useEffect, useMemo, useState } from 'react';
import { Dialog } from '../../components/Dialog.tsx';
import { ErrorText } from '../../components/ErrorText.tsx';
import { errorText, run, useOp } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';
import { duplicatesInFile, guessTarget, LEAD_FIELDS, toImportLead } from './csv-import.ts';
import type { Target } from './csv-import.ts';

const BATCH = 250;

type Parsed = { fileName: string; headers: string[]; rows: Record<string, string>[] };
type RowError = { line: number; message: string };
type Outcome = { created: number; duplicates: number; errors: RowError[]; skippedInFile: number };

const targetKey = (t: Target) => (t.kind === 'field' ? `field:${t.field}` : t.kind === 'custom' ? `custom:${t.column}` : 'ignore');
const parseKey = (k: string): Target => {
  if (k.startsWith('field:')) return { kind: 'field', field: k.slice(6) as Extract<Target, { kind: 'field' }>['field'] };
  if (k.startsWith('custom:')) return { kind: 'custom', column: k.slice(7) };
  return { kind: 'ignore' };
};

export function ImportDialog({ onClose }: { onClose: () => void }) {
  const groups = useOp('leadGroups.getAll', {});
  const toast = useApp((s) => s.toast);
  const [groupId, setGroupId] = useState('');
  const [parsed, setParsed] = useState<Parsed | null>(null);
  const [parseError, setParseError] = useState<string | null>(null);
  const [mapping, setMapping] = useState<Record<string, Target>>({});
  const [skipDups, setSkipDups] = useState(true);
  const [progress, setProgress] = useState<{ done: number; total: number } | null>(null);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const [error, setError] = useState<string | null>(null);

  const lists = groups.data?.leadGroups ?? [];
  const group = lists.find((g) => g.id === groupId) ?? lists[0];
  const customColumns = useMemo(() => (group?.columns ?? []).filter((c) => c.builtInType === null).map((c) => c.name), [group]);

  // Another list has other columns: drop mappings to columns it lacks, and guess again what was left out.
  useEffect(() => {
    setMapping((m) => Object.fromEntries(Object.entries(m).map(([h, t]) => {
      if (t.kind === 'field') return [h, t];
      if (t.kind === 'custom' && customColumns.includes(t.column)) return [h, t];
      return [h, guessTarget(h, customColumns)];
    })));
  }, [customColumns]);

  function onFile(file: File) {
    setParseError(null);
    setOutcome(null);
    Papa.parse<Record<string, string>>(file, {
      header: true,
      skipEmptyLines: 'greedy',
      complete: (res) => {
        const headers = (res.meta.fields ?? []).filter((h) => h.trim() !== '');
        if (headers.length === 0) {
          setParseError(`${file.name} has no header row: the first line must name the columns.`);
          return;
        }
        const fatal = res.errors.find((e) => e.type === 'Delimiter' || e.type === 'Quotes');
        if (fatal) setParseError(`Line ${(fatal.row ?? 0) + 2}: ${fatal.message}. The rows around it may be read wrongly.`);
        setParsed({ fileName: file.name, headers, rows: res.data });
        setMapping(Object.fromEntries(headers.map((h) => [h, guessTarget(h, customColumns)])));
      },
      error: (e) => setParseError(`Could not read ${file.name}: ${e.message}`),
    });
  }

  const leads = useMemo(() => (parsed ? parsed.rows.map((r) => toImportLead(r, mapping)) : []), [parsed, mapping]);
  const dups = useMemo(() => duplicatesInFile(leads), [leads]);
  const mappedSomething = Object.values(mapping).some((t) => t.kind !== 'ignore');

  async function startImport() {
    if (!group || !parsed) return;
    setError(null);
    const indexes = leads.map((_, i) => i).filter((i) => !(skipDups && dups.has(i)));
    const result: Outcome = { created: 0, duplicates: 0, errors: [], skippedInFile: leads.length - indexes.length };
    setProgress({ done: 0, total: indexes.length });
    try {
      for (let start = 0; start < indexes.length; start += BATCH) {
        const batch = indexes.slice(start, start + BATCH);
        const r = await run('campaigns.leads.create', { leadGroupId: group.id, leads: batch.map((i) => leads[i] ?? {}) });
        result.created += r.created;
        result.duplicates += r.duplicates;
        // Line numbers as in a spreadsheet: the header is line 1.
        for (const e of r.errors) result.errors.push({ line: (batch[e.index] ?? 0) + 2, message: e.message });
        setProgress({ done: Math.min(indexes.length, start + batch.length), total: indexes.length });
      }
      setOutcome(result);
      toast(`Imported ${result.created.toLocaleString()} new lead${result.created === 1 ? '' : 's'} from ${parsed.fileName}.`);
    } catch (e) {
      setOutcome(result);
      setError(`The import stopped: ${errorText(e)} Rows before this point were imported.`);
    }
  }

  const importing = progress !== null && outcome === null && error === null;
  return (
    <Dialog
      title="Import leads from CSV"
      wide
      onClose={onClose}
      footer={
        outcome ? (
          <button className="btn primary" onClick={onClose}>Done</button>
        ) : (
          <>
            <button className="btn" onClick={onClose} disabled={importing}>Cancel</button>
            <button className="btn primary" disabled={!parsed || !group || !mappedSomething || importing} onClick={() => void startImport()}>
              {importing ? 'Importing…' : parsed ? `Import ${(leads.length - (skipDups ? dups.size : 0)).toLocaleString()} rows` : 'Import'}
            </button>
          </>
        )
      }
    >
      <ErrorText error={groups.error?.message} />
      <div className="controls">
        <label className="field">
          <span>CSV file (first line names the columns)</span>
          <input className="input" type="file" accept=".csv,text/csv" aria-label="CSV file" disabled={importing} onChange={(e) => { const f = e.target.files?.[0]; if (f) onFile(f); }} />
        </label>
        <label className="field">
          <span>Into list</span>
          <select value={group?.id ?? ''} onChange={(e) => setGroupId(e.target.value)} aria-label="Lead list" disabled={importing}>
            {lists.map((g) => (
              <option key={g.id} value={g.id}>{g.name}</option>
            ))}
          </select>
        </label>
      </div>
      <ErrorText error={parseError} />
      {parsed && !outcome && (
        <>
          <h3>Columns of {parsed.fileName} ({parsed.rows.length.toLocaleString()} rows)</h3>
          <table className="plain" aria-label="Column mapping">
            <thead>
              <tr><th>Column in the file</th><th>Example</th><th>Becomes</th></tr>
            </thead>
            <tbody>
              {parsed.headers.map((h) => (
                <tr key={h}>
                  <td>{h}</td>
                  <td className="muted">{parsed.rows.find((r) => r[h])?.[h] ?? ''}</td>
                  <td>
                    <select aria-label={`Map ${h}`} value={targetKey(mapping[h] ?? { kind: 'ignore' })} onChange={(e) => setMapping({ ...mapping, [h]: parseKey(e.target.value) })}>
                      <option value="ignore">Don't import</option>
                      {LEAD_FIELDS.map((f) => (
                        <option key={f.field} value={`field:${f.field}`}>{f.label}</option>
                      ))}
                      {customColumns.map((c) => (
                        <option key={c} value={`custom:${c}`}>Column: {c}</option>
                      ))}
                    </select>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {dups.size > 0 && (
            <label className="row notice warn">
              <input type="checkbox" checked={skipDups} onChange={(e) => setSkipDups(e.target.checked)} />
              <span>{dups.size} row{dups.size === 1 ? ' repeats' : 's repeat'} a person listed earlier in the file (same profile URL or email), e.g. line {([...dups.keys()][0] ?? 0) + 2}. Skip them.</span>
            </label>
          )}
          <p className="muted">People already in your CRM (same profile URL, else same email) are not duplicated: they are linked to the list and counted as already there.</p>
        </>
      )}
      {progress && (
        <div className="stack">
          <div className="progress" role="progressbar" aria-valuenow={progress.done} aria-valuemax={progress.total}><div style={{ width: `${progress.total ? (progress.done / progress.total) * 100 : 100}%` }} /></div>
          <span className="muted">{progress.done.toLocaleString()} of {progress.total.toLocaleString()} rows sent</span>
        </div>
      )}
      {outcome && (
        <div className="stack" data-testid="import-outcome">
          <div className="notice ok">
            Imported <strong>{outcome.created.toLocaleString()}</strong> new lead{outcome.created === 1 ? '' : 's'}; {outcome.duplicates.toLocaleString()} already in the CRM
            {outcome.skippedInFile > 0 ? `; ${outcome.skippedInFile} repeated rows skipped` : ''}; {outcome.errors.length} row{outcome.errors.length === 1 ? '' : 's'} refused.
          </div>
          {outcome.errors.length > 0 && (
            <table className="plain" aria-label="Refused rows">
              <thead>
                <tr><th style={{ width: 70 }}>Line</th><th>Why it was not imported</th></tr>
              </thead>
              <tbody>
                {outcome.errors.slice(0, 200).map((e) => (
                  <tr key={e.line}><td>{e.line}</td><td className="error-cell">{e.message}</td></tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
      )}
      <ErrorText error={error} />
    </Dialog>
  );
}
