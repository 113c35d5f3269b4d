/**
 * Unsubscribe tokens: what a campaign email's List-Unsubscribe header carries (in the one-click URL
 * and in the subject of its mailto:), so the lead can be found and the request trusted without an
 * API key.
 *
 * A token is base64url of: version (1 byte) | workspace id | sender id | lead id (16 bytes each, the
 * UUIDs' bytes) | HMAC-SHA256 of the rest, first 16 bytes: 87 characters. The HMAC key is the
 * sender's own `unsubscribeKey` (senders document): whichever host sends the email (the owner's
 * desktop or the sync server's runner) has the sender document, so it can sign; the sync server has
 * it too, so it can verify a one-click request; a forged or altered token fails. No expiry: an
 * unsubscribe link must keep working long after the email (the law in most places says at least 30
 * days; we say always). The version byte lets a later format or key scheme live beside this one.
 *
 * Web Crypto (globalThis.crypto.subtle, in Node and in browsers): shared/ has no crypto module.
 */
import type { RandomBytes } from '../context.ts';

export const UNSUBSCRIBE_TOKEN_VERSION = 1;

/** Who a token unsubscribes, from which sender's emails, in which workspace. */
export type UnsubscribeClaim = { workspaceId: string; sdrProfileId: string; leadId: string };

const MAC_BYTES = 16;
const ID_BYTES = 16;
const BODY_BYTES = 1 + 3 * ID_BYTES;
const TOKEN_BYTES = BODY_BYTES + MAC_BYTES;
/** Separates these MACs from any other use of the same key. */
const CONTEXT = new TextEncoder().encode('outreach-crm unsubscribe\n');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** How many random bytes a sender's key holds (256 bits). */
export const UNSUBSCRIBE_KEY_BYTES = 32;

/**
 * A new sender's key: 256 bits from the host's random bytes, as 64 lowercase hex characters (the
 * text keys made before had too: two random UUIDs without their dashes, so those keep verifying).
 * Never from ids: a UUIDv7 carries the time it was made and fewer random bits.
 */
export function newUnsubscribeKey(randomBytes: RandomBytes): string {
  const bytes = randomBytes(UNSUBSCRIBE_KEY_BYTES);
  if (bytes.length !== UNSUBSCRIBE_KEY_BYTES) throw new Error(`The host gave ${bytes.length} random bytes for an unsubscribe key, not ${UNSUBSCRIBE_KEY_BYTES}.`);
  return hexOf(bytes);
}

const hexOf = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');

function uuidBytes(id: string): Uint8Array | null {
  if (!UUID.test(id)) return null;
  const hex = id.replace(/-/g, '');
  const out = new Uint8Array(ID_BYTES);
  for (let i = 0; i < ID_BYTES; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

function bytesUuid(b: Uint8Array): string {
  const hex = hexOf(b);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

function toBase64Url(b: Uint8Array): string {
  let s = '';
  for (const x of b) s += String.fromCharCode(x);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The bytes of a base64url text, or null when it is not the one text those bytes encode to: the
 * last character of 87 holds 2 bits no byte uses, which a decoder ignores, so 4 spellings would
 * decode to one token (a changed character that changes nothing must not verify either). */
function fromBase64Url(s: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]+$/.test(s)) return null;
  try {
    const bin = atob(s.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (s.length % 4)) % 4));
    const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
    return toBase64Url(bytes) === s ? bytes : null;
  } catch {
    return null;
  }
}

async function mac(key: string, body: Uint8Array): Promise<Uint8Array> {
  const k = await crypto.subtle.importKey('raw', new TextEncoder().encode(key), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const data = new Uint8Array(CONTEXT.length + body.length);
  data.set(CONTEXT, 0);
  data.set(body, CONTEXT.length);
  return new Uint8Array(await crypto.subtle.sign('HMAC', k, data)).slice(0, MAC_BYTES);
}

/** The token for a claim, or null when an id is not a UUID (no such document exists here). */
export async function signUnsubscribeToken(key: string, claim: UnsubscribeClaim): Promise<string | null> {
  if (!key) return null;
  const body = new Uint8Array(BODY_BYTES);
  body[0] = UNSUBSCRIBE_TOKEN_VERSION;
  const ids = [claim.workspaceId, claim.sdrProfileId, claim.leadId];
  for (let i = 0; i < ids.length; i++) {
    const b = uuidBytes(ids[i] ?? '');
    if (!b) return null;
    body.set(b, 1 + i * ID_BYTES);
  }
  const out = new Uint8Array(TOKEN_BYTES);
  out.set(body, 0);
  out.set(await mac(key, body), BODY_BYTES);
  return toBase64Url(out);
}

/** What a token claims, unverified (to find the sender whose key verifies it), or null when it is
 * not a token of a version we know. */
export function readUnsubscribeToken(token: string): UnsubscribeClaim | null {
  const b = token.length === Math.ceil((TOKEN_BYTES * 4) / 3) ? fromBase64Url(token) : null;
  if (!b || b.length !== TOKEN_BYTES || b[0] !== UNSUBSCRIBE_TOKEN_VERSION) return null;
  return {
    workspaceId: bytesUuid(b.slice(1, 1 + ID_BYTES)),
    sdrProfileId: bytesUuid(b.slice(1 + ID_BYTES, 1 + 2 * ID_BYTES)),
    leadId: bytesUuid(b.slice(1 + 2 * ID_BYTES, BODY_BYTES)),
  };
}

/** The claim when the token was signed with this key and nothing in it was changed, else null. */
export async function verifyUnsubscribeToken(key: string, token: string): Promise<UnsubscribeClaim | null> {
  const claim = readUnsubscribeToken(token);
  const b = claim && key ? fromBase64Url(token) : null;
  if (!claim || !b) return null;
  const expected = await mac(key, b.slice(0, BODY_BYTES));
  let diff = 0;
  // Constant time: how much of a forged MAC was right must not show in the answer's timing.
  for (let i = 0; i < MAC_BYTES; i++) diff |= (expected[i] ?? 0) ^ (b[BODY_BYTES + i] ?? 0);
  return diff === 0 ? claim : null;
}

/** The subject of the List-Unsubscribe mailto: and how a mail to the sender is recognised as one. */
export const unsubscribeSubject = (token: string): string => `unsubscribe ${token}`;

/** The token of an unsubscribe mail's subject ("unsubscribe <token>", perhaps behind "Re:"/"Fwd:"). */
export function tokenInSubject(subject: string): string | null {
  const m = /^\s*(?:(?:re|fwd?|aw|wg|tr)\s*:\s*)*unsubscribe\s+([A-Za-z0-9_-]{80,100})\s*$/i.exec(subject);
  return m?.[1] ?? null;
}

/** The one-click URL of a token under the sync server's public address. */
export function unsubscribeUrl(publicUrl: string, token: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/unsubscribe/${token}`;
}
