/**
 * Seeded randomness for the loader's shuffles. Every permutation is a pure function of the seed,
 * the epoch and where it is used (the tile order, or one rank's shuffle buffer), so any rank can
 * recompute any part of an epoch's plan without reading data: that is what makes resuming and
 * sharding exact.
 */

/** A 32-bit hash step (murmur3's finalizer): spreads every input bit over the output. */
function mix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A 32-bit state from a list of non-negative safe integers (a seed up to 2^53 keeps all its bits). */
function hashWords(words: readonly number[]): number {
  let h = 0x9e3779b9;
  for (const w of words) {
    const lo = w >>> 0;
    const hi = Math.floor(w / 4294967296) >>> 0;
    h = mix32(h ^ mix32(lo + 0x7f4a7c15));
    h = mix32(h ^ mix32(hi + 0x2545f491));
  }
  return h;
}

/**
 * sfc32 (Chris Doty-Humphrey's small fast counter generator, 128-bit state), seeded from a hash of
 * `words`: uniform floats in [0, 1).
 */
export function seededRandom(words: readonly number[]): () => number {
  let a = hashWords([...words, 1]);
  let b = hashWords([...words, 2]);
  let c = hashWords([...words, 3]);
  let d = 1;
  const next = () => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t;
  };
  for (let i = 0; i < 12; i++) next(); // discard the first outputs, as its author recommends
  // 53 random bits, so that `random() * n` is unbiased far beyond any realistic n.
  return () => (next() * 2097152 + (next() >>> 11)) / 9007199254740992;
}

/** Shuffles `a` in place (Fisher-Yates) with `random`. */
export function shuffleInPlace(a: Int32Array, random: () => number): Int32Array {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const t = a[i]!;
    a[i] = a[j]!;
    a[j] = t;
  }
  return a;
}

/** `0 .. n-1` in order. */
export function identity(n: number, into?: Int32Array): Int32Array {
  const a = into && into.length >= n ? into.subarray(0, n) : new Int32Array(n);
  for (let i = 0; i < n; i++) a[i] = i;
  return a;
}
