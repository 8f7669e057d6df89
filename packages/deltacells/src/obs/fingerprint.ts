/**
 * `obs_fingerprint`: the first 24 hex characters of SHA-256 over the UTF-8 bytes of Python's
 * `json.dumps({"schema": S, "tile_cells": [...], "shards": [...]}, sort_keys=True,
 * separators=(",", ":"))`, S being the exact text of `obs/schema.json` as a JSON string and
 * `shards` the lowercase hex SHA-256 of each shard. Python's default `ensure_ascii` escapes every
 * character outside printable ASCII as `\uXXXX`, which {@link pythonJsonString} reproduces, so
 * anyone can recompute the fingerprint with the standard library. Readers also accept the other
 * spellings of that JSON ({@link FingerprintSpelling}). Browser-safe (WebCrypto).
 */

/** `json.dumps(s)` of Python for a string: JSON.stringify plus `\uXXXX` for DEL and non-ASCII. */
export function pythonJsonString(s: string): string {
  return JSON.stringify(s).replace(
    /[^\x20-\x7e]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** Lowercase hex of bytes. */
export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i++) out += bytes[i]!.toString(16).padStart(2, "0");
  return out;
}

/** SHA-256 of `bytes` as lowercase hex (WebCrypto: Node 20 and browsers). */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  return toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>)));
}

/**
 * How the fingerprint's JSON is spelled. The spec says "canonical JSON (sorted keys)" and no
 * more; writers use Python's `separators=(",", ":")` with `ensure_ascii` (the strict form, which
 * this package writes), but Python's default separators (`", "` and `": "`) and UTF-8 left as it
 * is (`ensure_ascii=False`, RFC 8785, `JSON.stringify`) are readings of the same text.
 */
export interface FingerprintSpelling {
  /** `","` and `":"` (compact), or `", "` and `": "` (Python's defaults). */
  spaced: boolean;
  /** Characters outside printable ASCII as `\uXXXX` (Python's default), or left as they are. */
  ascii: boolean;
}

/** The form this package writes: compact separators, non-ASCII escaped. */
export const STRICT_SPELLING: FingerprintSpelling = { spaced: false, ascii: true };

/** Every spelling a reader accepts, the strict one first. */
const SPELLINGS: FingerprintSpelling[] = [
  STRICT_SPELLING,
  { spaced: true, ascii: true },
  { spaced: false, ascii: false },
  { spaced: true, ascii: false },
];

/** The canonical JSON the fingerprint hashes (keys sorted: schema, shards, tile_cells). */
export function fingerprintJson(
  schemaText: string,
  tileCells: number[],
  shardSha256: string[],
  spelling: FingerprintSpelling = STRICT_SPELLING,
): string {
  const str = spelling.ascii ? pythonJsonString : (s: string) => JSON.stringify(s);
  const [comma, colon] = spelling.spaced ? [", ", ": "] : [",", ":"];
  const shards = shardSha256.map((h) => str(h)).join(comma);
  return `{"schema"${colon}${str(schemaText)}${comma}"shards"${colon}[${shards}]${comma}"tile_cells"${colon}[${tileCells.join(comma)}]}`;
}

/** The 24-hex-character obs fingerprint of a schema text, the tiles' cells and the shards' hashes. */
export async function obsFingerprint(
  schemaText: string,
  tileCells: number[],
  shardSha256: string[],
  spelling: FingerprintSpelling = STRICT_SPELLING,
): Promise<string> {
  const json = fingerprintJson(schemaText, tileCells, shardSha256, spelling);
  return (await sha256Hex(new TextEncoder().encode(json))).slice(0, 24);
}

/**
 * Whether `recorded` is the fingerprint of this content in any accepted spelling (see
 * {@link FingerprintSpelling}); `strict` is the fingerprint this package would write, for messages.
 */
export async function checkFingerprint(
  recorded: string | undefined,
  schemaText: string,
  tileCells: number[],
  shardSha256: string[],
): Promise<{ matches: boolean; strict: string }> {
  let strict = "";
  for (const spelling of SPELLINGS) {
    const fp = await obsFingerprint(schemaText, tileCells, shardSha256, spelling);
    if (spelling === STRICT_SPELLING) strict = fp;
    if (fp === recorded) return { matches: true, strict };
  }
  return { matches: false, strict };
}
