/** Leads: filters, the virtualized table, bulk actions on the selection, a new lead by hand (`n`),
 * CSV import and export. */
import { Suspense, useEffect, useMemo, useState, useSyncExternalStore } from 'react';
import { ErrorText } from '../../components/ErrorText.tsx';
import { lazyChunk } from '../../lib/lazy-chunk.ts';
import { useOp } from '../../lib/ops.ts';
import { useCampaigns } from '../../lib/workspace-data.ts';
import { leadCountInput } from '../../lib/workspace-inputs.ts';
import { inTextField, useWindowKeydown } from '../../lib/window-keys.ts';
import { useApp } from '../../state/app-store.ts';
import { BulkBar } from './BulkBar.tsx';
import { exportLeadsCsv } from './csv-export.ts';
import type { BulkAction } from './BulkBar.tsx';
import { LeadFiltersBar } from './LeadFiltersBar.tsx';
import { openLeadPager } from './lead-pager.ts';
import type { LeadPager } from './lead-pager.ts';
import { leadCountText } from './columns.ts';
import { ColumnChooser, LeadsTable } from './LeadsTable.tsx';
import { searchInput, Selection } from './selection.ts';

// The dialogs (CSV parsing among them) are not needed to show the table.
const BulkStageDialog = lazyChunk(() => import('./BulkStageDialog.tsx').then((m) => m.BulkStageDialog));
const BulkTagDialog = lazyChunk(() => import('./BulkTagDialog.tsx').then((m) => m.BulkTagDialog));
const ChangeSenderDialog = lazyChunk(() => import('./ChangeSenderDialog.tsx').then((m) => m.ChangeSenderDialog));
const EnrollDialog = lazyChunk(() => import('./EnrollDialog.tsx').then((m) => m.EnrollDialog));
const ImportDialog = lazyChunk(() => import('./ImportDialog.tsx').then((m) => m.ImportDialog));
const NewLeadDialog = lazyChunk(() => import('./NewLeadDialog.tsx').then((m) => m.NewLeadDialog));

export function LeadsScreen() {
  const filters = useApp((s) => s.filters);
  const intent = useApp((s) => s.intent);
  const setIntent = useApp((s) => s.setIntent);
  const toast = useApp((s) => s.toast);
  const input = useMemo(() => searchInput(filters), [filters]);
  // Created in an effect (not a memo) so its subscriptions end exactly when the view lets go of it.
  const [pager, setPager] = useState<LeadPager | null>(null);
  useEffect(() => {
    const p = openLeadPager(input);
    setPager(p);
    return () => p.dispose();
  }, [input]);
  const [selection, setSelection] = useState(Selection.none());
  const [dialog, setDialog] = useState<BulkAction | 'import' | 'new' | null>(null);
  const [exporting, setExporting] = useState<string | null>(null);
  const [exportError, setExportError] = useState<string | null>(null);

  // A new filter is a new list: a selection made in the old one would act on people not shown.
  useEffect(() => setSelection(Selection.none()), [input]);

  async function runExport() {
    setExportError(null);
    setExporting('Exporting…');
    try {
      const n = await exportLeadsCsv(input, (done) => setExporting(`Exporting… ${done.toLocaleString()} leads`));
      toast(`Exported ${n.toLocaleString()} leads to CSV.`);
    } catch (e) {
      setExportError(`Export failed: ${(e as Error).message}`);
    } finally {
      setExporting(null);
    }
  }

  // `n`: a new lead, unless the user is typing or a dialog is open (like the app's other letters).
  useWindowKeydown((e) => {
    if (e.key !== 'n' || e.ctrlKey || e.metaKey || e.altKey || inTextField(e.target) || document.querySelector('[role="dialog"]')) return;
    e.preventDefault();
    setDialog('new');
  });

  useEffect(() => {
    if (intent === 'import-csv') setDialog('import');
    if (intent === 'export-csv') void runExport();
    if (intent) setIntent(null);
    // runExport reads the current input; only the intent triggers it.
  }, [intent]);

  if (!pager) return <></>;
  return <LeadsView pager={pager} selection={selection} setSelection={setSelection} dialog={dialog} setDialog={setDialog} exporting={exporting} exportError={exportError} runExport={runExport} />;
}

function LeadsView(props: {
  pager: LeadPager;
  selection: Selection;
  setSelection: (s: Selection) => void;
  dialog: BulkAction | 'import' | 'new' | null;
  setDialog: (d: BulkAction | 'import' | 'new' | null) => void;
  exporting: string | null;
  exportError: string | null;
  runExport: () => Promise<void>;
}) {
  const { pager, selection, setSelection, dialog, setDialog, exporting, exportError, runExport } = props;
  const filters = useApp((s) => s.filters);
  const go = useApp((s) => s.go);
  useSyncExternalStore(pager.subscribe, pager.getVersion);
  const { campaignId } = searchInput(filters);
  // Leads made or imported while a campaign is shown go to its list by default.
  const { campaigns } = useCampaigns();
  const campaignGroupId = campaigns.find((c) => c.id === campaignId)?.leadGroupId;
  // The exact size of the view, kept live; until it answers, what has loaded so far.
  const total = useOp('campaigns.leads.count', leadCountInput(filters)).data?.count;
  return (
    <>
      <div className="screen-header">
        <h1>Leads</h1>
        <span className="sub" data-testid="leads-count" data-loaded={pager.loadedCount} data-more={pager.hasMore ? 'yes' : 'no'}>
          {leadCountText(total, pager)}
        </span>
        <div className="grow" />
        <ColumnChooser />
        <button className="btn" onClick={() => setDialog('new')} title="New lead (n)">New lead</button>
        <button className="btn" onClick={() => setDialog('import')}>Import CSV</button>
        <button className="btn" onClick={() => void runExport()} disabled={exporting !== null}>{exporting ?? 'Export CSV'}</button>
        <button className="btn" onClick={() => go('duplicates')} title="Leads of one person, to merge (g d)">Duplicates</button>
      </div>
      <LeadFiltersBar />
      {exportError && <div style={{ margin: '0 16px 10px' }}><ErrorText error={exportError} /></div>}
      {!selection.isEmpty && <BulkBar selection={selection} pager={pager} onSelection={setSelection} onAction={setDialog} />}
      <LeadsTable pager={pager} selection={selection} onSelection={setSelection} />
      <Suspense fallback={null}>
        {dialog === 'import' && <ImportDialog onClose={() => setDialog(null)} defaultGroupId={campaignGroupId} />}
        {dialog === 'new' && <NewLeadDialog onClose={() => setDialog(null)} defaultGroupId={campaignGroupId} />}
        {dialog === 'enroll' && <EnrollDialog selection={selection} filters={filters} onClose={() => setDialog(null)} onDone={() => setSelection(Selection.none())} />}
        {dialog === 'sender' && <ChangeSenderDialog selection={selection} filters={filters} onClose={() => setDialog(null)} onDone={() => setSelection(Selection.none())} />}
        {dialog === 'tag' && <BulkTagDialog selection={selection} filters={filters} pager={pager} onClose={() => setDialog(null)} />}
        {dialog === 'stage' && <BulkStageDialog selection={selection} filters={filters} pager={pager} onClose={() => setDialog(null)} />}
      </Suspense>
    </>
  );
}
