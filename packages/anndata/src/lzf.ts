/**
 * LZF decompression (the liblzf format used by h5py's lzf filter, HDF5 filter 32000), written
 * from the format: a stream of literal runs (control byte < 32: copy control + 1 bytes) and back
 * references (length in the top 3 bits, 7 meaning "plus the next byte"; distance from the low 5
 * bits and the next byte). Browser-safe.
 */

import { AnndataError } from "./errors.js";

/** The refusal of a damaged LZF stream. */
function malformed(why: string): AnndataError {
  return new AnndataError(`lzf: ${why}`, { tag: "MalformedInput" });
}

/** Decompresses `input`; `sizeHint` is the expected output size (grown when too small). */
export function lzfDecompress(input: Uint8Array, sizeHint: number): Uint8Array {
  let out = new Uint8Array(Math.max(64, sizeHint));
  let op = 0;
  let ip = 0;
  const n = input.length;
  const ensure = (extra: number) => {
    if (op + extra <= out.length) return;
    const grown = new Uint8Array(Math.max(op + extra, out.length * 2));
    grown.set(out.subarray(0, op));
    out = grown;
  };
  while (ip < n) {
    const ctrl = input[ip++] as number;
    if (ctrl < 32) {
      const len = ctrl + 1;
      if (ip + len > n) throw malformed("literal run past the end of the input");
      ensure(len);
      out.set(input.subarray(ip, ip + len), op);
      ip += len;
      op += len;
      continue;
    }
    let len = ctrl >> 5;
    if (len === 7) {
      if (ip >= n) throw malformed("truncated back reference");
      len += input[ip++] as number;
    }
    if (ip >= n) throw malformed("truncated back reference");
    const ref = op - ((ctrl & 0x1f) << 8) - 1 - (input[ip++] as number);
    if (ref < 0) throw malformed("back reference before the start of the output");
    len += 2;
    ensure(len);
    // byte by byte: source and destination may overlap (runs)
    for (let k = 0; k < len; k++) out[op + k] = out[ref + k] as number;
    op += len;
  }
  return out.subarray(0, op);
}
