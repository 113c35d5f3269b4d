/**
 * Text encodings of imported files. A file is UTF-8 when it says so with a byte-order mark or when
 * its bytes are valid UTF-8; otherwise it is taken as Windows-1252, what Excel and most Windows
 * CRMs write for Western European text ("Dupré"). UTF-16 files (Excel's "Unicode text") carry a BOM.
 * The user may choose another encoding. Uses TextDecoder, which Node and browsers both have.
 */

/** Encodings a user can choose (WHATWG Encoding Standard labels). */
export const TEXT_ENCODINGS = ['utf-8', 'windows-1252', 'iso-8859-15', 'macintosh', 'utf-16le', 'utf-16be'] as const;
export type TextEncodingName = (typeof TEXT_ENCODINGS)[number];

export const ENCODING_LABELS: Record<TextEncodingName, string> = {
  'utf-8': 'UTF-8 (Unicode)',
  'windows-1252': 'Windows-1252 (Western European, Excel on Windows)',
  'iso-8859-15': 'ISO-8859-15 (Latin-9)',
  macintosh: 'Mac Roman (old Excel for Mac)',
  'utf-16le': 'UTF-16 LE (Excel "Unicode text")',
  'utf-16be': 'UTF-16 BE',
};

export type Detected = { encoding: TextEncodingName; bom: boolean };

const startsWith = (bytes: Uint8Array, prefix: readonly number[]): boolean => prefix.every((b, i) => bytes[i] === b);

/** The encoding of a file's bytes: a BOM decides; else valid UTF-8 is UTF-8; else Windows-1252. */
export function detectEncoding(bytes: Uint8Array): Detected {
  return detect(bytes).detected;
}

/** Detection, with the text when checking UTF-8 validity already decoded it. */
function detect(bytes: Uint8Array): { detected: Detected; utf8?: string } {
  if (startsWith(bytes, [0xef, 0xbb, 0xbf])) return { detected: { encoding: 'utf-8', bom: true } };
  if (startsWith(bytes, [0xff, 0xfe])) return { detected: { encoding: 'utf-16le', bom: true } };
  if (startsWith(bytes, [0xfe, 0xff])) return { detected: { encoding: 'utf-16be', bom: true } };
  try {
    return { detected: { encoding: 'utf-8', bom: false }, utf8: new TextDecoder('utf-8', { fatal: true }).decode(bytes) };
  } catch {
    return { detected: { encoding: 'windows-1252', bom: false } };
  }
}

/** Decodes a file's bytes with the chosen encoding ('auto' or absent: detected). A BOM is dropped. */
export function decodeBytes(bytes: Uint8Array, encoding: TextEncodingName | 'auto' = 'auto'): { text: string } & Detected {
  const { detected, utf8 } = detect(bytes);
  const chosen = encoding === 'auto' ? detected.encoding : encoding;
  // TextDecoder drops the BOM of its own encoding (ignoreBOM false); a mismatched one stays visible.
  const text = chosen === 'utf-8' && utf8 !== undefined ? utf8 : new TextDecoder(chosen).decode(bytes);
  return { text, encoding: chosen, bom: detected.bom && detected.encoding === chosen };
}

/** The bytes of a base64 text (standard or URL alphabet, padding optional). */
export function base64ToBytes(b64: string): Uint8Array {
  const clean = b64.replace(/[\s]/g, '').replace(/-/g, '+').replace(/_/g, '/');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(clean)) throw new Error('is not base64 text');
  const bin = atob(clean);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
