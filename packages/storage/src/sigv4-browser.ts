/** `#sigv4` outside Node: no synchronous hash here; aws4fetch signs with WebCrypto. */
import type { SyncSigningCrypto } from "./sigv4-crypto.js";

export const syncSigningCrypto: SyncSigningCrypto | undefined = undefined;
