/**
 * zstd's content checksum (the codec's `checksum: true`): the low 32 bits of XXH64 (seed 0) of a
 * frame's decoded bytes, stored after its last block and announced by bit 2 of the frame header
 * descriptor. zstd verifies it while decoding (the native library, numcodecs' WebAssembly build and
 * Python's numcodecs alike); this module lets a writer without a native zstd add it to a frame the
 * WebAssembly codec wrote without one, and lets a reader see whether a frame carries one.
 * Browser-safe.
 *
 * XXH64 is computed on 32-bit halves: a 64-bit lane is a `hi, lo` pair of unsigned 32-bit numbers.
 */

const MAGIC = 0xfd2fb528;
/** Bit of the frame header descriptor (byte 4) saying a content checksum ends the frame. */
const CHECKSUM_FLAG = 0x04;

// The five XXH64 primes, as hi/lo halves.
const P1H = 0x9e3779b1;
const P1L = 0x85ebca87;
const P2H = 0xc2b2ae3d;
const P2L = 0x27d4eb4f;
const P3H = 0x165667b1;
const P3L = 0x9e3779f9;
const P4H = 0x85ebca77;
const P4L = 0xc2b2ae63;
const P5H = 0x27d4eb2f;
const P5L = 0x165667c5;

// The result of the last 64-bit operation, to avoid allocating a pair per step.
let H = 0;
let L = 0;

function add(ah: number, al: number, bh: number, bl: number): void {
  const lo = al + bl;
  L = lo >>> 0;
  H = (ah + bh + (lo > 0xffffffff ? 1 : 0)) >>> 0;
}

/** `a * b` modulo 2^64. */
function mul(ah: number, al: number, bh: number, bl: number): void {
  const a0 = al & 0xffff;
  const a1 = al >>> 16;
  const b0 = bl & 0xffff;
  const b1 = bl >>> 16;
  // al * bl exactly, from 16-bit pieces (every partial sum stays below 2^53).
  const mid = a1 * b0 + a0 * b1;
  const low = a0 * b0 + (mid % 65536) * 65536;
  const high = a1 * b1 + Math.floor(mid / 65536) + Math.floor(low / 4294967296);
  L = low >>> 0;
  H = (high + Math.imul(ah, bl) + Math.imul(al, bh)) >>> 0;
}

/** `(h, l)` rotated left by `r` bits, 0 < r < 32. */
function rotl(h: number, l: number, r: number): void {
  H = ((h << r) | (l >>> (32 - r))) >>> 0;
  L = ((l << r) | (h >>> (32 - r))) >>> 0;
}

/** One XXH64 round: `acc + lane * P2`, rotated by 31, times P1. */
function round(acch: number, accl: number, inh: number, inl: number): void {
  mul(inh, inl, P2H, P2L);
  add(acch, accl, H, L);
  rotl(H, L, 31);
  mul(H, L, P1H, P1L);
}

/** `(h ^ (H, L))` rotated left by `r`, times `m`, plus `a`: how a lane or the tail joins the hash. */
function mixIn(h: number, l: number, r: number, mh: number, ml: number, ah: number, al: number): void {
  rotl((h ^ H) >>> 0, (l ^ L) >>> 0, r);
  mul(H, L, mh, ml);
  add(H, L, ah, al);
}

/** The low 32 bits of XXH64 (seed 0) of `bytes`: zstd's content checksum. */
export function xxh64Low32(bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = bytes.byteLength;
  let p = 0;
  let hh: number;
  let hl: number;
  if (n >= 32) {
    // The four lanes start at seed + P1 + P2, seed + P2, seed and seed - P1.
    add(P1H, P1L, P2H, P2L);
    let v1h = H;
    let v1l = L;
    let v2h = P2H;
    let v2l = P2L;
    let v3h = 0;
    let v3l = 0;
    // -P1 mod 2^64
    let v4h = ~P1H >>> 0;
    let v4l = ((~P1L >>> 0) + 1) >>> 0;
    if (v4l === 0) v4h = (v4h + 1) >>> 0;
    for (; p + 32 <= n; p += 32) {
      round(v1h, v1l, view.getUint32(p + 4, true), view.getUint32(p, true));
      v1h = H;
      v1l = L;
      round(v2h, v2l, view.getUint32(p + 12, true), view.getUint32(p + 8, true));
      v2h = H;
      v2l = L;
      round(v3h, v3l, view.getUint32(p + 20, true), view.getUint32(p + 16, true));
      v3h = H;
      v3l = L;
      round(v4h, v4l, view.getUint32(p + 28, true), view.getUint32(p + 24, true));
      v4h = H;
      v4l = L;
    }
    rotl(v1h, v1l, 1);
    let sh = H;
    let sl = L;
    rotl(v2h, v2l, 7);
    add(sh, sl, H, L);
    sh = H;
    sl = L;
    rotl(v3h, v3l, 12);
    add(sh, sl, H, L);
    sh = H;
    sl = L;
    rotl(v4h, v4l, 18);
    add(sh, sl, H, L);
    hh = H;
    hl = L;
    for (const [vh, vl] of [
      [v1h, v1l],
      [v2h, v2l],
      [v3h, v3l],
      [v4h, v4l],
    ] as const) {
      round(0, 0, vh, vl);
      hh = (hh ^ H) >>> 0;
      hl = (hl ^ L) >>> 0;
      mul(hh, hl, P1H, P1L);
      add(H, L, P4H, P4L);
      hh = H;
      hl = L;
    }
  } else {
    hh = P5H;
    hl = P5L;
  }
  // + length (below 2^53: its high half is what is above 2^32)
  add(hh, hl, Math.floor(n / 4294967296), n >>> 0);
  hh = H;
  hl = L;
  for (; p + 8 <= n; p += 8) {
    round(0, 0, view.getUint32(p + 4, true), view.getUint32(p, true));
    mixIn(hh, hl, 27, P1H, P1L, P4H, P4L);
    hh = H;
    hl = L;
  }
  if (p + 4 <= n) {
    mul(0, view.getUint32(p, true), P1H, P1L);
    mixIn(hh, hl, 23, P2H, P2L, P3H, P3L);
    hh = H;
    hl = L;
    p += 4;
  }
  for (; p < n; p++) {
    mul(0, bytes[p] as number, P5H, P5L);
    hh = (hh ^ H) >>> 0;
    hl = (hl ^ L) >>> 0;
    rotl(hh, hl, 11);
    mul(H, L, P1H, P1L);
    hh = H;
    hl = L;
  }
  // Avalanche: h ^= h >> 33; h *= P2; h ^= h >> 29; h *= P3; h ^= h >> 32.
  hl = (hl ^ (hh >>> 1)) >>> 0;
  mul(hh, hl, P2H, P2L);
  hh = H;
  hl = L;
  hl = (hl ^ ((hl >>> 29) | (hh << 3))) >>> 0;
  hh = (hh ^ (hh >>> 29)) >>> 0;
  mul(hh, hl, P3H, P3L);
  hh = H;
  hl = L;
  return (hl ^ hh) >>> 0;
}

/** Whether `frame` starts a zstd frame (its magic number). */
function isZstdFrame(frame: Uint8Array): boolean {
  return (
    frame.byteLength >= 5 && new DataView(frame.buffer, frame.byteOffset, 4).getUint32(0, true) === MAGIC
  );
}

/** Whether `frame` is a zstd frame whose header announces a content checksum. */
export function hasZstdChecksum(frame: Uint8Array): boolean {
  return isZstdFrame(frame) && ((frame[4] as number) & CHECKSUM_FLAG) !== 0;
}

/**
 * `frame` (one zstd frame without a checksum, as numcodecs' WebAssembly zstd writes it) with the
 * checksum of `content`, its decoded bytes, announced in its header and appended: the frame zstd
 * writes with its checksum flag on.
 */
export function withZstdChecksum(frame: Uint8Array, content: Uint8Array): Uint8Array {
  if (!isZstdFrame(frame) || hasZstdChecksum(frame)) {
    throw new Error("a checksum can only be added to one zstd frame that has none");
  }
  const out = new Uint8Array(frame.byteLength + 4);
  out.set(frame);
  out[4] = (out[4] as number) | CHECKSUM_FLAG;
  new DataView(out.buffer).setUint32(frame.byteLength, xxh64Low32(content), true);
  return out;
}
