/** One field of a lead, edited in place: click (or Enter on it) to edit, Enter or leaving the field
 * saves through campaigns.leads.update, Escape cancels. The saved value stays on screen until the
 * live lead shows it, so it never flashes back to the old one; a refusal restores it and says why. */
import { useEffect, useState } from 'react';
import { ErrorText } from '../../components/ErrorText.tsx';
import { errorText } from '../../lib/ops.ts';

export function EditableField(props: { label: string; value: string; save: (value: string) => Promise<unknown>; placeholder?: string; children?: React.ReactNode }) {
  const { label, value, save } = props;
  const [draft, setDraft] = useState<string | null>(null);
  const [pending, setPending] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  // The live lead caught up with the save (or changed otherwise): show it again.
  useEffect(() => setPending(null), [value]);

  async function commit(next: string) {
    setDraft(null);
    const v = next.trim();
    if (v === (pending ?? value)) return;
    setError(null);
    setPending(v);
    try {
      await save(v);
    } catch (e) {
      setPending(null);
      setError(errorText(e));
    }
  }

  const shown = pending ?? value;
  return (
    <>
      <dt>{label}</dt>
      <dd>
        {draft === null ? (
          <span
            className="editable"
            role="button"
            tabIndex={0}
            aria-label={`Edit ${label}`}
            title="Click to edit"
            onClick={() => setDraft(shown)}
            onKeyDown={(e) => {
              if (e.key === 'Enter') {
                e.preventDefault();
                setDraft(shown);
              }
            }}
            data-saving={pending !== null ? 'yes' : undefined}
          >
            {shown || <span className="faint">{props.placeholder ?? '—'}</span>}
          </span>
        ) : (
          <input
            className="input small"
            aria-label={label}
            autoFocus
            value={draft}
            onChange={(e) => setDraft(e.target.value)}
            onBlur={() => void commit(draft)}
            onKeyDown={(e) => {
              if (e.key === 'Enter') void commit(draft);
              if (e.key === 'Escape') {
                e.stopPropagation();
                setDraft(null);
              }
            }}
          />
        )}
        {props.children}
        <ErrorText error={error} />
      </dd>
    </>
  );
}
