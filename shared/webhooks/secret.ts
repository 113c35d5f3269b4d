/** Standard Webhooks' symmetric secrets: `whsec_` followed by the base64 of the key's bytes. The
 * receiver's library (`new Webhook(secret)`) takes this text as it is. */

export const SECRET_PREFIX = 'whsec_';

/** The secret's text for random key bytes (base64 without a Node Buffer: shared/ runs anywhere). */
export function webhookSecret(key: Uint8Array): string {
  let binary = '';
  for (const b of key) binary += String.fromCharCode(b);
  return `${SECRET_PREFIX}${btoa(binary)}`;
}
