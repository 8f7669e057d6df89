/**
 * A string column held as UTF-8 bytes and offsets from planning until its rows are written: a
 * million barcodes take ~18 MB this way against ~40-60 MB as JS strings in an array, and the
 * source's strings can be collected as soon as the plan is made. Browser-safe.
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Immutable UTF-8 storage of `(string | null)[]` with row-range access. */
export class Utf8Strings {
  private constructor(
    readonly length: number,
    private readonly bytes: Uint8Array,
    /** Row `i` is `bytes[offsets[i] .. offsets[i + 1])`; float64 so that columns over 4 GiB still fit. */
    private readonly offsets: Float64Array,
    /** 1 where the value is missing; undefined when none is. */
    private readonly nulls: Uint8Array | undefined,
    /** Every byte is ASCII: a range decodes once and is cut by byte offsets. */
    private readonly ascii: boolean,
  ) {}

  /** Copies `values` into UTF-8 storage. */
  static from(values: ArrayLike<string | null>): Utf8Strings {
    const n = values.length;
    const offsets = new Float64Array(n + 1);
    let nulls: Uint8Array | undefined;
    let bytes = new Uint8Array(Math.max(64, n * 16));
    let end = 0;
    let ascii = true;
    for (let i = 0; i < n; i++) {
      const s = values[i];
      if (s === null || s === undefined) {
        nulls ??= new Uint8Array(n);
        nulls[i] = 1;
      } else {
        // UTF-8 needs at most 3 bytes per UTF-16 unit
        if (end + s.length * 3 > bytes.length) {
          const grown = new Uint8Array(Math.max(bytes.length * 2, end + s.length * 3));
          grown.set(bytes.subarray(0, end));
          bytes = grown;
        }
        const { written } = encoder.encodeInto(s, bytes.subarray(end));
        if (ascii && written !== s.length) ascii = false;
        end += written;
      }
      offsets[i + 1] = end;
    }
    return new Utf8Strings(n, bytes.slice(0, end), offsets, nulls, ascii);
  }

  /** Rows `[a, b)` as JS strings, null for missing. */
  slice(a: number, b: number): (string | null)[] {
    const { offsets, bytes, nulls } = this;
    const out = new Array<string | null>(b - a);
    const base = offsets[a]!;
    const text = this.ascii ? decoder.decode(bytes.subarray(base, offsets[b]!)) : "";
    for (let i = a; i < b; i++) {
      if (nulls?.[i]) out[i - a] = null;
      else if (this.ascii) out[i - a] = text.slice(offsets[i]! - base, offsets[i + 1]! - base);
      else out[i - a] = decoder.decode(bytes.subarray(offsets[i]!, offsets[i + 1]!));
    }
    return out;
  }
}
