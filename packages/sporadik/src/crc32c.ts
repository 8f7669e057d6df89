/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of zarr v3's crc32c codec.
 * Table-driven, one table built on first use. Browser-safe.
 */

let table: Uint32Array | undefined;

function tableOf(): Uint32Array {
  if (table) return table;
  table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
}

/** The CRC-32C of `bytes`, as an unsigned 32-bit number. */
export function crc32c(bytes: Uint8Array): number {
  const t = tableOf();
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = (t[(c ^ (bytes[i] as number)) & 0xff] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
