/**
 * The new part of a reply: the text above the quoted earlier message and the signature. Mail
 * clients quote in their user's language, so the attribution lines of English, German, French and
 * Spanish clients (Gmail, Outlook, Apple Mail, Thunderbird) end the new text, as do `>` quotes,
 * Outlook's header block and separator, and mobile footers. One function, used where replies arrive
 * (channels/inbound-mail.ts) and where their label is guessed (label.ts).
 */

/** A line that starts the quoted history: everything from it on is the earlier conversation. */
const QUOTE_START: readonly RegExp[] = [
  /^>/,
  /^-{2,}\s*(original message|urspr[üu]ngliche nachricht|message d'origine|mensaje original)\s*-{2,}/i,
  /^_{10,}\s*$/,
  // Attribution lines: "On <date>, <name> wrote:" and its translations.
  /^On .{4,200} wrote:\s*$/i,
  // Gmail wraps a long attribution: "On Mon, ... Ada Lovelace <" / "ada@example.com> wrote:".
  /^.{0,200}\bwrote:\s*$/i,
  /^Am .{4,200} schrieb .{1,200}:\s*$/i,
  /^.{0,200}\bschrieb\s*:\s*$/i,
  /^Le .{4,200} a [ée]crit\s*:\s*$/i,
  /^El .{4,200} escribi[óo]\s*:\s*$/i,
  /^.{0,200}\bescribi[óo]\s*:\s*$/i,
];

/** Outlook's header block of the quoted message ("From: ..." then "Sent: ..."), in the four
 * languages; "From: Ada" alone is a sentence, so the next line must be the date. */
const OUTLOOK_FROM = /^(from|von|de)\s*:\s*\S/i;
const OUTLOOK_DATE = /^(sent|date|gesendet|datum|envoy[ée]|enviado|fecha)\s*:/i;

/** A line that starts the signature or a client footer: dropped with what follows. */
const SIGNATURE_START: readonly RegExp[] = [
  /^--\s*$/,
  /^(sent from my|get outlook for|von meinem .{1,40} gesendet|gesendet von meinem|envoy[ée] de mon|enviado desde mi)\b/i,
];

/** The text above the quoted history and signature, trimmed; the whole text when that leaves nothing. */
export function withoutQuotedHistory(text: string): string {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const trimmed = line.trim();
    if (SIGNATURE_START.some((r) => r.test(trimmed))) break;
    if (QUOTE_START.some((r) => r.test(trimmed))) break;
    if (OUTLOOK_FROM.test(trimmed) && OUTLOOK_DATE.test((lines[i + 1] ?? '').trim())) break;
    out.push(line);
  }
  const fresh = out.join('\n').trim();
  return fresh || text.trim();
}
