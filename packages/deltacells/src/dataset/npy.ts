/**
 * The smallest part of numpy's `.npy` format (version 1.0) we need: a 1-D little-endian int32
 * array. Written by hand so that `numpy.load` reads `gene_order.npy` with no pickle and no surprises.
 */
import { DeltacellsError } from "../errors.js";

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // "\x93NUMPY"
/** Whether typed arrays are little-endian here (as on every platform Node and browsers run on). */
const LITTLE_ENDIAN = new Uint8Array(Int32Array.of(1).buffer)[0] === 1;

/** Encode a 1-D int32 array as a `.npy` v1.0 file. */
export function encodeNpyInt32(values: Int32Array): Uint8Array {
  let header = `{'descr': '<i4', 'fortran_order': False, 'shape': (${values.length},), }`;
  // magic(6) + version(2) + header length(2) + header + "\n" must be a multiple of 64.
  const unpadded = 10 + header.length + 1;
  header += " ".repeat((64 - (unpadded % 64)) % 64);
  header += "\n";
  const out = new Uint8Array(10 + header.length + values.length * 4);
  out.set(MAGIC, 0);
  out[6] = 1;
  out[7] = 0;
  new DataView(out.buffer).setUint16(8, header.length, true);
  for (let i = 0; i < header.length; i++) out[10 + i] = header.charCodeAt(i);
  const body = new DataView(out.buffer, 10 + header.length);
  for (let i = 0; i < values.length; i++) body.setInt32(i * 4, values[i]!, true);
  return out;
}

/** Decode a 1-D `.npy` int32 (little-endian) array, refusing anything else. */
export function decodeNpyInt32(bytes: Uint8Array, object: string): Int32Array {
  const fail = (what: string, found?: unknown) =>
    new DeltacellsError(`${object} is not a 1-D little-endian int32 .npy array: ${what}`, {
      tag: "FormatError",
      object,
      expected: "1-D <i4 .npy",
      found,
    });
  if (bytes.length < 10 || MAGIC.some((b, i) => bytes[i] !== b)) throw fail("bad magic");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const major = bytes[6]!;
  const headerLen = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const start = major === 1 ? 10 : 12;
  if (major < 1 || major > 3 || start + headerLen > bytes.length) throw fail("bad header", major);
  const header = new TextDecoder().decode(bytes.subarray(start, start + headerLen));
  if (!/'descr':\s*'<i4'/.test(header)) throw fail("dtype is not <i4", header);
  if (/'fortran_order':\s*True/.test(header)) throw fail("fortran order", header);
  const shape = /'shape':\s*\((\d+),?\)/.exec(header);
  if (!shape) throw fail("shape is not 1-D", header);
  const n = Number(shape[1]);
  const body = start + headerLen;
  if (bytes.length - body !== n * 4) throw fail("body size does not match shape", bytes.length - body);
  const out = new Int32Array(n);
  if (LITTLE_ENDIAN) {
    // One copy of the bytes: a loop of DataView reads runs once per process, unoptimised (~5-20 ms
    // for a genome's 30,000+ genes, on the way to a stream's first batch).
    new Uint8Array(out.buffer).set(bytes.subarray(body, body + n * 4));
    return out;
  }
  const bodyView = new DataView(bytes.buffer, bytes.byteOffset + body, n * 4);
  for (let i = 0; i < n; i++) out[i] = bodyView.getInt32(i * 4, true);
  return out;
}
