/** Escaping for HTML written as text (pages the servers answer, the web host's first screen). */

/** Text between tags: `&`, `<` and `>` cannot start markup or an entity. */
export const escapeHtmlText = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A quoted attribute value, or text anywhere: also both quotes, so it cannot close the value. */
export const escapeHtml = (s: string): string => escapeHtmlText(s).replace(/"/g, '&quot;').replace(/'/g, '&#39;');
