/** What is wrong with a step being written, judged as the user types, with the same helpers the
 * campaign rules use (shared/merge-fields.ts, the readiness checks). The operation still has the last
 * word: whatever slips through is refused on save, and its reason is shown. */
import { parseMergeFields } from '../../../../shared/merge-fields.ts';
import { CONDITION_TESTS, CONNECTION_NOTE_MAX_LENGTH } from '../../../../shared/model/common.ts';
import type { StepType, VoiceNoteMode } from '../../../../shared/model/common.ts';
import { STEP_CAPABILITY } from '../../../../shared/rules/readiness.ts';

export type VariantDraft = { id?: string; name: string; text: string; subject: string };

export type StepDraft = {
  type: StepType;
  content: string;
  subject: string;
  waitTimeSeconds: number;
  sendCondition: string;
  stopIfSkipped: boolean;
  emailThreading: 'new_thread' | 'same_thread';
  voiceNote: { mode: VoiceNoteMode; recordingId: string };
  variants: VariantDraft[];
  variantMode: 'default' | 'random' | 'round_robin';
  defaultVariantId: string | null;
};

export type DraftField = 'content' | 'subject' | 'variants' | 'wait' | 'condition' | 'voice' | 'senders';
export type DraftProblem = { field: DraftField; message: string; variant?: number };

export type SenderAbilities = { name: string; capabilities: readonly string[]; premium: boolean };

export const MESSAGE_TYPES: readonly StepType[] = ['SEND_MESSAGE', 'CONNECTION_REQUEST', 'INMAIL', 'EMAIL'];
export const hasText = (type: StepType): boolean => MESSAGE_TYPES.includes(type);
export const hasSubject = (type: StepType): boolean => type === 'INMAIL' || type === 'EMAIL';

const CAPABILITY_WORDS: Record<string, string> = {
  message: 'messages',
  connection_request: 'connection requests',
  inmail: 'InMails',
  email: 'emails',
  profile_visit: 'profile visits',
  reaction: 'reactions',
  voice_note: 'voice notes',
};

/** Edit distance with adjacent swaps (optimal string alignment), case-insensitive: how far a typo is. */
export function typoDistance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  const d: number[][] = Array.from({ length: x.length + 1 }, (_, i) => Array.from({ length: y.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  const at = (i: number, j: number): number => d[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= x.length; i++) {
    for (let j = 1; j <= y.length; j++) {
      const cost = x[i - 1] === y[j - 1] ? 0 : 1;
      let v = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && x[i - 1] === y[j - 2] && x[i - 2] === y[j - 1]) v = Math.min(v, at(i - 2, j - 2) + 1);
      const row = d[i];
      if (row) row[j] = v;
    }
  }
  return at(x.length, y.length);
}

/** The field the user probably meant: same name but for case, or at most two typos away. */
function nearest(name: string, fields: readonly string[]): string | undefined {
  let best: { f: string; dist: number } | undefined;
  for (const f of fields) {
    const dist = typoDistance(name, f);
    if (dist <= Math.min(2, Math.floor(f.length / 3)) && (!best || dist < best.dist)) best = { f, dist };
  }
  return best?.f;
}

/** Merge fields in `text` that are not among the campaign's fields, and braces that never close. */
export function mergeFieldProblems(text: string, fields: readonly string[]): string[] {
  const out: string[] = [];
  const refs = parseMergeFields(text);
  const unknown = [...new Set(refs.filter((r) => !fields.includes(r.name)).map((r) => r.name))];
  for (const name of unknown) {
    const close = nearest(name, fields);
    out.push(
      `{{${name}}} is not a merge field of this campaign${close ? ` (did you mean {{${close}}}? names must match exactly)` : ''}. It would be sent as an empty value, so it is refused. Use one of: ${fields.join(', ')}.`,
    );
  }
  const opened = (text.match(/\{\{/g) ?? []).length;
  if (opened > refs.length) out.push('A merge field is not closed: write it as {{Display name|fallback}}.');
  return out;
}

/** Every problem of the draft; an empty list means the operation should accept it. */
export function draftProblems(d: StepDraft, fields: readonly string[], senders: readonly SenderAbilities[]): DraftProblem[] {
  const out: DraftProblem[] = [];
  if (hasText(d.type)) {
    for (const m of mergeFieldProblems(d.content, fields)) out.push({ field: 'content', message: m });
    for (const m of mergeFieldProblems(d.subject, fields)) out.push({ field: 'subject', message: m });
    d.variants.forEach((v, i) => {
      for (const m of [...mergeFieldProblems(v.text, fields), ...mergeFieldProblems(v.subject, fields)]) out.push({ field: 'variants', message: `Variant “${v.name || i + 1}”: ${m}`, variant: i });
      if (!v.name.trim()) out.push({ field: 'variants', message: `Variant ${i + 1} needs a name.`, variant: i });
    });
  }
  if (d.type === 'CONNECTION_REQUEST') {
    const longest = Math.max(d.content.length, ...d.variants.map((v) => v.text.length));
    if (longest > CONNECTION_NOTE_MAX_LENGTH) {
      out.push({ field: 'content', message: `A connection note fits ${CONNECTION_NOTE_MAX_LENGTH} characters; this one has ${longest}. Shorten it.` });
    }
  }
  if (d.type === 'EMAIL' && d.subject.trim() === '') out.push({ field: 'subject', message: 'An email needs a subject.' });
  if (d.type === 'WAIT' && !(d.waitTimeSeconds > 0)) out.push({ field: 'wait', message: 'A wait needs a length above zero.' });
  if (d.type === 'CONDITION' && !(CONDITION_TESTS as readonly string[]).includes(d.sendCondition)) out.push({ field: 'condition', message: 'Choose what the condition tests.' });
  if (d.voiceNote.mode === 'recorded' && !d.voiceNote.recordingId.trim()) out.push({ field: 'voice', message: 'A pre-recorded voice note needs a recording from the library (its id).' });

  // Every sender of the campaign must be able to perform the step.
  const capability = STEP_CAPABILITY[d.type];
  for (const s of senders) {
    if (capability && !s.capabilities.includes(capability)) {
      out.push({ field: 'senders', message: `${s.name} cannot send ${CAPABILITY_WORDS[capability] ?? capability}; remove the sender from the campaign or choose another step.` });
    }
    if (d.type === 'INMAIL' && !s.premium) out.push({ field: 'senders', message: `${s.name} cannot send InMails: InMail needs a Premium account.` });
    if (d.type === 'SEND_MESSAGE' && d.voiceNote.mode !== 'none' && !s.capabilities.includes('voice_note')) {
      out.push({ field: 'senders', message: `${s.name}'s channel cannot send voice notes.` });
    }
  }
  return out;
}

/** Inserts `{{name|}}` at the caret of `text` and says where the caret goes (inside the fallback). */
export function insertMergeField(text: string, name: string, start: number, end: number): { text: string; caret: number } {
  const token = `{{${name}|}}`;
  const next = text.slice(0, start) + token + text.slice(end);
  return { text: next, caret: start + token.length - 2 };
}
