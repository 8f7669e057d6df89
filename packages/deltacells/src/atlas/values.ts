/**
 * Moving column values between types as the merged schemas promise: numbers into the promoted
 * type (exact: the promotion only widens), categories into a global vocabulary.
 */
type Writable = ArrayLike<number | bigint> & { [i: number]: number | bigint };

/** `out[o + i] = src[a + i]` for `i < b - a`, converted to `out`'s element type. */
export function copyNumeric(
  src: ArrayLike<number | bigint>,
  a: number,
  b: number,
  out: Writable,
  o: number,
): void {
  const big = out instanceof BigInt64Array || out instanceof BigUint64Array;
  const srcBig = src instanceof BigInt64Array || src instanceof BigUint64Array;
  if (
    big === srcBig &&
    ArrayBuffer.isView(src) &&
    Object.getPrototypeOf(src) === Object.getPrototypeOf(out)
  ) {
    (out as unknown as Int32Array).set((src as unknown as Int32Array).subarray(a, b), o);
    return;
  }
  for (let i = a; i < b; i++) {
    const v = src[i]!;
    out[o + i - a] = big ? (typeof v === "bigint" ? v : BigInt(v)) : Number(v);
  }
}

/**
 * The map from an input's category codes to a global vocabulary's: `map[c]` is the global code
 * of the input's category `c` (every one of them is in the vocabulary by construction).
 */
export function vocabularyMap(categories: string[], global: Map<string, number>): Int32Array {
  return Int32Array.from(categories, (c) => global.get(c) ?? -1);
}

/** A vocabulary's positions by category. */
export function positions(vocabulary: string[]): Map<string, number> {
  const out = new Map<string, number>();
  vocabulary.forEach((c, i) => {
    out.set(c, i);
  });
  return out;
}
