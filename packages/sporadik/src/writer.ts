/**
 * Writing a store: the layouts first, the block last. Everything else declares something before it
 * is true (an array's `zarr.json` precedes its chunks); the block is written once every chunk is
 * durable, so a torn upload is a store without a block, refused by every reader.
 */
import { constructorOf, type DataType, dtypeOf, type NumericArray } from "./dtypes.js";
import { SporadikError } from "./errors.js";
import { declaredShapeOf, encodingOf, type Layout, layoutsByAxis, maximaOf, pathOf } from "./layout.js";
import { BLOCK_KEY, blockFor, ENCODING_VERSION, LAYOUTS_GROUP } from "./spec.js";
import { keyOf, normalizePrefix, type WritableStore } from "./store.js";
import {
  arrayMetadataText,
  type CodecMetadata,
  compressorFor,
  encodeChunk,
  groupMetadataText,
} from "./zarr.js";

/** Elements per chunk for four-byte values: ~128 KB, about one object-store request. */
export const DEFAULT_CHUNK = 32_768;

/** The bytes a chunk should hold, whatever the element width. */
export const TARGET_CHUNK_BYTES = DEFAULT_CHUNK * 4;

/** Options of {@link writeStore}. */
export interface WriteOptions {
  /** Elements per chunk for every array. Default: {@link TARGET_CHUNK_BYTES} worth, capped at the array. */
  chunk?: number;
  /** One uncompressed chunk per array, so `indptr` names exact byte ranges. Default false. */
  byteAddressable?: boolean;
  /**
   * Compress with zstd's content checksum on (`"checksum": true`), so every read verifies each
   * chunk it decodes (zarr-python and Python sporadik read such stores). Default false: the bytes
   * Python sporadik writes by default. Not with `byteAddressable`: a checksum covers a whole object,
   * and a byte-range read cannot verify it.
   */
  checksums?: boolean;
  /** Also write each layout's `maxima` (largest absolute value per slice). Default true. */
  maxima?: boolean;
  /** Where in the store the prefix is. Default: the store's root. */
  prefix?: string;
  /** Chunk writes in flight at once. Default 8. */
  concurrency?: number;
}

/** Refuses checksums on byte-addressable arrays, which range reads could never verify. */
export function checkChecksums(options: { checksums?: boolean; byteAddressable?: boolean }): void {
  if (options.checksums === true && options.byteAddressable === true) {
    throw new SporadikError(
      "checksums and byteAddressable cannot be combined: a checksum covers a whole object, and a byte-range read of part of it cannot verify it. Write a chunked store with checksums, or a byte-addressable one without.",
      { tag: "InvalidArgument", expected: "checksums or byteAddressable", found: "both" },
    );
  }
}

/** The chunk length written for an array of `dtype` and `length` elements, as zarr-python does. */
export function chunkFor(dtype: DataType, length: number): number {
  const chunk = Math.max(Math.floor(TARGET_CHUNK_BYTES / constructorOf(dtype).BYTES_PER_ELEMENT), 1);
  return length > 0 ? Math.min(chunk, length) : chunk;
}

const encoder = new TextEncoder();

function isAllZero(values: NumericArray): boolean {
  for (let i = 0; i < values.length; i++) if (values[i] !== 0 && values[i] !== 0n) return false;
  return true;
}

async function runLimited(tasks: (() => Promise<void>)[], limit: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const task = tasks[next++] as () => Promise<void>;
      await task();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
}

async function writeArray(
  store: WritableStore,
  path: string,
  values: NumericArray,
  options: WriteOptions,
): Promise<void> {
  const dtype = dtypeOf(values);
  const byteAddressable = options.byteAddressable === true;
  const chunk = Math.max(
    byteAddressable ? values.length : (options.chunk ?? chunkFor(dtype, values.length)),
    1,
  );
  const compressors: CodecMetadata[] = byteAddressable ? [] : [compressorFor(options.checksums === true)];
  await store.set(
    keyOf(path, "zarr.json"),
    encoder.encode(arrayMetadataText(dtype, values.length, chunk, compressors)),
  );
  const Ctor = constructorOf(dtype);
  const tasks: (() => Promise<void>)[] = [];
  for (let index = 0; index * chunk < values.length; index++) {
    tasks.push(async () => {
      const start = index * chunk;
      const end = Math.min(start + chunk, values.length);
      // Edge chunks are stored whole, padded with the fill value, as zarr v3 requires.
      let piece = values.subarray(start, end);
      if (piece.length < chunk) {
        const padded = new Ctor(chunk);
        padded.set(piece as never);
        piece = padded;
      }
      const key = keyOf(path, `c/${index}`);
      // Like zarr-python, a chunk that is all fill value is not stored (an old object there must
      // go), except in byte-addressable mode: there the object *is* the array a reader asks byte
      // ranges of, so it is always written (Python sporadik 1.1.1 leaves it out, and then cannot
      // read its own store). Nor in `data`: every element of it is a stored value, so a reader
      // refuses a missing `data` chunk as damage.
      if (!byteAddressable && !path.endsWith("/data") && isAllZero(piece)) {
        await store.delete?.(key);
        return;
      }
      await store.set(key, await encodeChunk(piece, compressors));
    });
  }
  await runLimited(tasks, options.concurrency ?? 8);
}

async function writeLayout(
  store: WritableStore,
  root: string,
  layout: Layout,
  options: WriteOptions,
): Promise<void> {
  const group = `${root ? `${root}/` : ""}${pathOf(layout)}`;
  const attributes = {
    "encoding-type": encodingOf(layout),
    "encoding-version": ENCODING_VERSION,
    shape: declaredShapeOf(layout),
  };
  await store.set(keyOf(group, "zarr.json"), encoder.encode(groupMetadataText(attributes)));
  const arrays: [string, NumericArray][] = [
    ["data", layout.data],
    ["indices", layout.indices],
    ["indptr", layout.indptr],
  ];
  if (options.maxima !== false) arrays.push(["maxima", maximaOf(layout.data, layout.indptr)]);
  for (const [name, values] of arrays) await writeArray(store, `${group}/${name}`, values, options);
}

/**
 * Write an array's layouts as a sporadik store, the block last.
 *
 * Every layout is checked first (one per axis, one shape, consistent arrays), so a refusal leaves the
 * store untouched. The root is then written without a block, so a store interrupted from here on is
 * refused as incomplete rather than read as zeros; the block lands after every chunk write resolved.
 *
 * @returns the block that was written.
 */
export async function writeStore(
  store: WritableStore,
  layouts: Layout | readonly Layout[],
  options: WriteOptions = {},
): Promise<ReturnType<typeof blockFor>> {
  const byAxis = layoutsByAxis(layouts);
  if (options.chunk !== undefined && !(Number.isSafeInteger(options.chunk) && options.chunk >= 1)) {
    throw new SporadikError(`chunk must be a positive whole number of elements, not ${options.chunk}.`, {
      tag: "InvalidArgument",
      expected: "a positive whole number",
      found: options.chunk,
    });
  }
  checkChecksums(options);
  const root = normalizePrefix(options.prefix);
  const shape = (byAxis.values().next().value as Layout).shape;
  await store.set(keyOf(root, "zarr.json"), encoder.encode(groupMetadataText({})));
  const layoutsRoot = root ? `${root}/${LAYOUTS_GROUP}` : LAYOUTS_GROUP;
  await store.set(keyOf(layoutsRoot, "zarr.json"), encoder.encode(groupMetadataText({})));
  for (const axis of [...byAxis.keys()].sort((a, b) => a - b)) {
    await writeLayout(store, root, byAxis.get(axis) as Layout, options);
  }
  const block = blockFor(shape, byAxis);
  await store.set(keyOf(root, "zarr.json"), encoder.encode(groupMetadataText({ [BLOCK_KEY]: block })));
  return block;
}
