/** What SigV4 signing needs of a hash library, synchronously (see `#sigv4`). */
export interface SyncSigningCrypto {
  /** HMAC-SHA256 of `data` (UTF-8) under `key`. */
  hmac(key: Uint8Array | string, data: string): Uint8Array;
  /** SHA-256 of `data` (UTF-8), lowercase hex. */
  sha256Hex(data: string): string;
}
