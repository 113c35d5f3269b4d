/**
 * Types of the two mailauth functions the sender check uses that the package ships without
 * declarations (its DKIM key lookup and its DMARC policy discovery). Only what channels/dns-check.ts
 * reads is declared; the values are checked there before use.
 */
declare module 'mailauth/lib/tools.js' {
  import type { DNSResolver } from 'mailauth';

  export type PublicKeyRecord = { publicKey: unknown; rr: string; modulusLength?: number; keyType?: string; testing?: boolean };

  /** Fetches and validates the DKIM key record at `name` (selector._domainkey.domain); throws with
   * `code` ENOTFOUND/ENODATA when there is none, EINVALIDVAL (revoked or malformed), ESHORTKEY, ... */
  export function getPublicKey(type: 'DKIM', name: string, minBitLength: number, resolver: DNSResolver): Promise<PublicKeyRecord>;
}

declare module 'mailauth/lib/dmarc/get-dmarc-record.js' {
  import type { DNSResolver } from 'mailauth';

  export type DmarcRecord = {
    rr: string;
    p?: string;
    sp?: string;
    rua?: string;
    pct?: number;
    /** The record was found at the organizational domain rather than the domain itself. */
    isOrgRecord: boolean;
    recordDomain: string;
    orgDomain: string;
  };

  /** DMARC policy discovery (RFC 9989 4.10.1): the record that applies to `domain`, or false. */
  export default function getDmarcRecord(domain: string, resolver: DNSResolver): Promise<DmarcRecord | false>;
}
