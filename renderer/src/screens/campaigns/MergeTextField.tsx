/** A message text (or subject) with a merge-field picker that offers only the campaign's fields and
 * inserts `{{Field|}}` where the caret is, leaving the caret in the fallback. */
import { useEffect, useRef, useState } from 'react';
import { insertMergeField } from './step-validation.ts';

type Props = {
  label: string;
  value: string;
  onChange: (value: string) => void;
  fields: readonly { name: string; kind: string }[];
  multiline?: boolean;
  rows?: number;
  placeholder?: string;
  invalid?: boolean;
  maxHint?: number;
  disabled?: boolean;
};

export function MergeTextField(props: Props) {
  const ref = useRef<HTMLTextAreaElement & HTMLInputElement>(null);
  const [open, setOpen] = useState(false);
  const [caret, setCaret] = useState<number | null>(null);
  const box = useRef<HTMLDivElement>(null);

  useEffect(() => {
    if (caret === null || !ref.current) return;
    ref.current.focus();
    ref.current.setSelectionRange(caret, caret);
    setCaret(null);
  }, [caret]);

  useEffect(() => {
    if (!open) return;
    const close = (e: MouseEvent) => {
      if (box.current && !box.current.contains(e.target as Node)) setOpen(false);
    };
    window.addEventListener('mousedown', close);
    return () => window.removeEventListener('mousedown', close);
  }, [open]);

  function insert(name: string) {
    const el = ref.current;
    const start = el?.selectionStart ?? props.value.length;
    const end = el?.selectionEnd ?? start;
    const r = insertMergeField(props.value, name, start, end);
    props.onChange(r.text);
    setCaret(r.caret);
    setOpen(false);
  }

  const common = {
    ref,
    value: props.value,
    'aria-label': props.label,
    'aria-invalid': props.invalid || undefined,
    placeholder: props.placeholder,
    disabled: props.disabled,
    className: `input${props.invalid ? ' invalid' : ''}`,
    onChange: (e: React.ChangeEvent<HTMLTextAreaElement | HTMLInputElement>) => props.onChange(e.target.value),
  };
  return (
    <div className="merge-field">
      <div className="row">
        <span className="field-label grow">{props.label}</span>
        {props.maxHint !== undefined && (
          <span className={`counter${props.value.length > props.maxHint ? ' over' : ''}`}>{props.value.length}/{props.maxHint}</span>
        )}
        <div className="picker" ref={box}>
          <button type="button" className="btn small" aria-haspopup="listbox" aria-expanded={open} onClick={() => setOpen(!open)} disabled={props.disabled} aria-label={`Insert a merge field into ${props.label}`}>
            {'{{ }}'} Insert field ▾
          </button>
          {open && (
            <ul role="listbox" className="picker-menu" aria-label="Merge fields of this campaign">
              {props.fields.length === 0 && <li className="faint">This campaign's lead list has no columns.</li>}
              {props.fields.map((f) => (
                <li key={f.name} role="option" aria-selected={false} tabIndex={0} onClick={() => insert(f.name)} onKeyDown={(e) => e.key === 'Enter' && insert(f.name)}>
                  <span>{f.name}</span>
                  <span className="faint">{f.kind === 'builtIn' ? 'built-in' : 'custom'}</span>
                </li>
              ))}
            </ul>
          )}
        </div>
      </div>
      {props.multiline ? <textarea {...common} rows={props.rows ?? 4} /> : <input {...common} type="text" />}
    </div>
  );
}
