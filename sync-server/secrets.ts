/** Node implementation of the Secrets port; it lives in channels/secret-codec.ts, which the desktop
 * backend imports too (neither host imports the other). */
export { hashApiKey, nodeSecrets, randomBase62 } from '../channels/secret-codec.ts';
