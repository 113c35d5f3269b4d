/** RFC 9562 UUIDv7 as the hosts write it (shared/ids.ts): version 7 in the 13th hex digit, variant
 * 10 in the 17th. */
export const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
