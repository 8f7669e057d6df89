/**
 * CRC-32 (zlib / IEEE 802.3, reflected polynomial 0xEDB88320), the checksum of a tile's bytes
 * `[64, total_size)`. Slice-by-8 tables: eight table lookups per 8 input bytes, several times
 * faster than the byte-at-a-time loop in V8. Node 20 has no built-in CRC-32, hence this.
 */

const TABLES = buildTables();

function buildTables(): Uint32Array {
  const t = new Uint32Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  for (let n = 0; n < 256; n++) {
    let c = t[n]!;
    for (let k = 1; k < 8; k++) {
      c = t[c & 0xff]! ^ (c >>> 8);
      t[k * 256 + n] = c >>> 0;
    }
  }
  return t;
}

/** Continues a CRC-32 (`crc` = the value returned for the preceding bytes, 0 to start). */
export function crc32(bytes: Uint8Array, crc = 0): number {
  const t = TABLES;
  let c = ~crc;
  let i = 0;
  const n = bytes.length;
  const end8 = n - (n & 7);
  for (; i < end8; i += 8) {
    const a = (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24)) ^ c;
    const b = bytes[i + 4]! | (bytes[i + 5]! << 8) | (bytes[i + 6]! << 16) | (bytes[i + 7]! << 24);
    c =
      t[1792 + (a & 0xff)]! ^
      t[1536 + ((a >>> 8) & 0xff)]! ^
      t[1280 + ((a >>> 16) & 0xff)]! ^
      t[1024 + (a >>> 24)]! ^
      t[768 + (b & 0xff)]! ^
      t[512 + ((b >>> 8) & 0xff)]! ^
      t[256 + ((b >>> 16) & 0xff)]! ^
      t[b >>> 24]!;
  }
  for (; i < n; i++) c = t[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

/**
 * The CRC-32 of `A || B` from `crc32(A)`, `crc32(B)` and `B`'s length. Appending `lenB` bytes
 * multiplies the CRC register by x^(8 lenB) modulo the CRC polynomial; that power is built from
 * a table of x^(2^k) by square-and-multiply, so a combine costs a few dozen polynomial products.
 * Lets workers checksum disjoint parts of a tile in parallel.
 */
export function crc32Combine(crcA: number, crcB: number, lenB: number): number {
  if (lenB <= 0) return crcA >>> 0;
  // The register's update is linear: a zero register stays zero whatever is appended.
  if (crcA === 0) return crcB >>> 0;
  return (multModP(xPow8n(lenB), crcA) ^ crcB) >>> 0;
}

/** a * b modulo the (reflected) CRC-32 polynomial; bit 31 is x^0. */
function multModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ 0xedb88320 : b >>> 1;
  }
  return p >>> 0;
}

/** X2N[k] = x^(2^k) mod P. */
const X2N = (() => {
  const t = new Uint32Array(32);
  let p = 0x40000000; // x^1
  for (let k = 0; k < 32; k++) {
    t[k] = p;
    p = multModP(p, p);
  }
  return t;
})();

/** x^(8 n) mod P. */
function xPow8n(n: number): number {
  let p = 0x80000000; // x^0
  let k = 3;
  while (n > 0) {
    if (n % 2) p = multModP(X2N[k & 31]!, p);
    n = Math.floor(n / 2);
    k++;
  }
  return p;
}
