/**
 * `obs_fingerprint`: the first 24 hex characters of SHA-256 over the UTF-8 bytes of Python's
 * `json.dumps({"schema": S, "tile_cells": [...], "shards": [...]}, sort_keys=True,
 * separators=(",", ":"))`, S being the exact text of `obs/schema.json` as a JSON string and
 * `shards` the lowercase hex SHA-256 of each shard. Python's default `ensure_ascii` escapes every
 * character outside printable ASCII as `\uXXXX`, which {@link pythonJsonString} reproduces, so
 * anyone can recompute the fingerprint with the standard library. Browser-safe (WebCrypto).
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

/** The canonical JSON the fingerprint hashes (keys sorted: schema, shards, tile_cells). */
export function fingerprintJson(schemaText: string, tileCells: number[], shardSha256: string[]): string {
  const shards = shardSha256.map((h) => pythonJsonString(h)).join(",");
  return `{"schema":${pythonJsonString(schemaText)},"shards":[${shards}],"tile_cells":[${tileCells.join(",")}]}`;
}

/** The 24-hex-character obs fingerprint of a schema text, the tiles' cells and the shards' hashes. */
export async function obsFingerprint(
  schemaText: string,
  tileCells: number[],
  shardSha256: string[],
): Promise<string> {
  const json = fingerprintJson(schemaText, tileCells, shardSha256);
  return (await sha256Hex(new TextEncoder().encode(json))).slice(0, 24);
}
