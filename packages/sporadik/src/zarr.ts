/**
 * The small part of zarr v3 sporadik needs: 1-D arrays in a regular chunk grid, bytes + optional
 * bytes-to-bytes codecs (zstd by default), and groups with attributes. Metadata is written as the
 * same text zarr-python 3 writes, so a store written here and one written there are the same files.
 * Codecs come from zarrita's registry (numcodecs' WebAssembly zstd), which runs in a browser too,
 * unless a caller plugs in a {@link Decompressor} (the Node entry plugs in a native zstd).
 */
import { registry } from "zarrita";
import { crc32c } from "./crc32c.js";
import { constructorOf, type DataType, isDataType, isFloat, type NumericArray } from "./dtypes.js";
import { DecodeWorkerError, LayoutError, SporadikError } from "./errors.js";
import { hasZstdChecksum, withZstdChecksum } from "./zstd-checksum.js";

/** One codec entry of an array's metadata. */
export interface CodecMetadata {
  name: string;
  configuration?: Record<string, unknown>;
}

/** zarr-python 3's default compressor for numeric arrays, spelled as it writes it. */
export const DEFAULT_COMPRESSOR: CodecMetadata = {
  name: "zstd",
  configuration: { level: 0, checksum: false },
};

/**
 * zarr's zstd with its content checksum on (`--checksums`): every frame ends with the checksum of
 * its decoded bytes, which zstd verifies while decoding. Spelled as zarr-python writes
 * `ZstdCodec(level=0, checksum=True)`.
 */
export const CHECKSUMMED_COMPRESSOR: CodecMetadata = {
  name: "zstd",
  configuration: { level: 0, checksum: true },
};

/** The compressor of a chunked array: zarr's default, or the same with zstd's content checksum. */
export function compressorFor(checksums: boolean): CodecMetadata {
  return checksums ? CHECKSUMMED_COMPRESSOR : DEFAULT_COMPRESSOR;
}

/** Whether `meta` is zstd with its content checksum on. */
export function isChecksummedZstd(meta: CodecMetadata | undefined): boolean {
  return meta?.name === "zstd" && meta.configuration?.checksum === true;
}

/**
 * Whether every chunk of the array carries a checksum its reader verifies: a trailing `crc32c`,
 * or zstd's content checksum as the compressor applied last.
 */
export function isChecksummed(info: ArrayInfo): boolean {
  const last = info.compressors[info.compressors.length - 1];
  return last?.name === "crc32c" || isChecksummedZstd(last);
}

const BYTES_CODEC: CodecMetadata = { name: "bytes", configuration: { endian: "little" } };

/** What a reader needs to know about one 1-D array, all read off its `zarr.json`. */
export interface ArrayInfo {
  /** The array's key prefix in the store, without leading or trailing `/`. */
  readonly path: string;
  readonly dtype: DataType;
  readonly length: number;
  readonly chunk: number;
  readonly fillValue: number;
  /** The bytes-to-bytes codecs after `bytes`, in encoding order (empty = uncompressed). */
  readonly compressors: readonly CodecMetadata[];
  /** How chunk keys are spelled: `c/0`, `c.0` or `0`. */
  readonly chunkKey: (index: number) => string;
}

/** How many chunks an array is cut into. */
export function chunkCount(info: ArrayInfo): number {
  return Math.ceil(info.length / info.chunk);
}

/** Whether an array's stored object is its raw little-endian buffer: one chunk, no compressor. */
export function isByteAddressable(info: ArrayInfo): boolean {
  return info.compressors.length === 0 && chunkCount(info) <= 1;
}

/** A group's `zarr.json`, as zarr-python 3 writes it. */
export function groupMetadataText(attributes: Record<string, unknown>): string {
  return JSON.stringify({ attributes, zarr_format: 3, node_type: "group" }, null, 2);
}

/** A 1-D array's `zarr.json`, as zarr-python 3 writes it (key order, indentation, `0.0` fills). */
export function arrayMetadataText(
  dtype: DataType,
  length: number,
  chunk: number,
  compressors: readonly CodecMetadata[],
): string {
  const text = JSON.stringify(
    {
      shape: [length],
      data_type: dtype,
      chunk_grid: { name: "regular", configuration: { chunk_shape: [chunk] } },
      chunk_key_encoding: { name: "default", configuration: { separator: "/" } },
      fill_value: 0,
      codecs: [BYTES_CODEC, ...compressors],
      attributes: {},
      zarr_format: 3,
      node_type: "array",
      storage_transformers: [],
    },
    null,
    2,
  );
  // Python's json writes a float zero as `0.0`; keep the text identical, not merely equivalent.
  return isFloat(dtype) ? text.replace('"fill_value": 0,', '"fill_value": 0.0,') : text;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function fillValueOf(raw: unknown, where: string): number {
  if (raw === null || raw === undefined) return 0;
  if (typeof raw === "number") return raw;
  if (raw === "NaN") return Number.NaN;
  if (raw === "Infinity") return Number.POSITIVE_INFINITY;
  if (raw === "-Infinity") return Number.NEGATIVE_INFINITY;
  throw new LayoutError(
    `${where} declares fill_value ${JSON.stringify(raw)}, which is not a number this reader can fill missing chunks with.`,
    { object: where },
  );
}

/**
 * Parse a 1-D array's `zarr.json`, refusing anything this reader would decode wrongly (another
 * rank, an unknown data type, sharding, big-endian bytes) rather than returning wrong numbers.
 */
export function parseArrayMetadata(meta: unknown, path: string): ArrayInfo {
  const where = `/${path}/zarr.json`;
  const refuse = (what: string): never => {
    throw new LayoutError(
      `${where}: ${what}. sporadik layouts are 1-D zarr v3 arrays in a regular chunk grid with bytes (+ compressor) codecs; rewrite the store with a sporadik writer.`,
      { object: where },
    );
  };
  if (!isObject(meta) || meta.zarr_format !== 3 || meta.node_type !== "array") {
    return refuse("is not a zarr v3 array");
  }
  const shape = meta.shape;
  if (!Array.isArray(shape) || shape.length !== 1 || !Number.isSafeInteger(shape[0]) || shape[0] < 0) {
    return refuse(`has shape ${JSON.stringify(shape)}, not one non-negative length`);
  }
  if (!isDataType(meta.data_type))
    return refuse(`has data_type ${JSON.stringify(meta.data_type)}, which is not numeric`);
  const grid = meta.chunk_grid;
  const chunkShape =
    isObject(grid) && isObject(grid.configuration) ? grid.configuration.chunk_shape : undefined;
  if (!isObject(grid) || grid.name !== "regular" || !Array.isArray(chunkShape) || chunkShape.length !== 1) {
    return refuse("has no regular 1-D chunk grid");
  }
  const chunk = chunkShape[0];
  if (!Number.isSafeInteger(chunk) || chunk < 1)
    return refuse(`has chunk shape ${JSON.stringify(chunkShape)}`);
  const keyEncoding = isObject(meta.chunk_key_encoding) ? meta.chunk_key_encoding : { name: "default" };
  const separator = isObject(keyEncoding.configuration) ? keyEncoding.configuration.separator : undefined;
  let chunkKey: (index: number) => string;
  if (keyEncoding.name === "default") {
    const sep = separator ?? "/";
    if (sep !== "/" && sep !== ".") return refuse(`has chunk key separator ${JSON.stringify(sep)}`);
    chunkKey = (index) => `c${sep}${index}`;
  } else if (keyEncoding.name === "v2") {
    chunkKey = (index) => `${index}`;
  } else {
    return refuse(`has chunk key encoding ${JSON.stringify(keyEncoding.name)}`);
  }
  const codecs = meta.codecs;
  if (!Array.isArray(codecs) || codecs.length === 0) return refuse("has no codecs");
  const [first, ...rest] = codecs as unknown[];
  if (!isObject(first) || first.name !== "bytes") {
    return refuse(
      `starts its codecs with ${JSON.stringify(isObject(first) ? first.name : first)}, not "bytes"`,
    );
  }
  const endian = isObject(first.configuration) ? first.configuration.endian : undefined;
  if (endian === "big" && constructorOf(meta.data_type).BYTES_PER_ELEMENT > 1) {
    return refuse("stores big-endian bytes");
  }
  const compressors: CodecMetadata[] = [];
  for (const codec of rest) {
    if (!isObject(codec) || typeof codec.name !== "string") return refuse("has a malformed codec entry");
    if (codec.name === "sharding_indexed" || codec.name === "transpose") {
      return refuse(`uses the ${codec.name} codec`);
    }
    compressors.push({
      name: codec.name,
      ...(isObject(codec.configuration) ? { configuration: codec.configuration } : {}),
    });
  }
  return {
    path,
    dtype: meta.data_type,
    length: shape[0],
    chunk,
    fillValue: fillValueOf(meta.fill_value, where),
    compressors,
    chunkKey,
  };
}

/** A bytes-to-bytes codec: what a compressor named in array metadata must do. */
export interface BytesCodec {
  encode(data: Uint8Array): Uint8Array | Promise<Uint8Array>;
  decode(data: Uint8Array): Uint8Array | Promise<Uint8Array>;
}

const codecCache = new Map<string, Promise<BytesCodec>>();

/**
 * crc32c that checks the checksum: zarrita's only strips the 4 bytes, so a damaged chunk of an
 * uncompressed array would read as wrong numbers without an error.
 */
const CHECKED_CRC32C = {
  fromConfig: (): BytesCodec => ({
    encode(data: Uint8Array): Uint8Array {
      const out = new Uint8Array(data.length + 4);
      out.set(data);
      new DataView(out.buffer).setUint32(data.length, crc32c(data), true);
      return out;
    },
    decode(data: Uint8Array): Uint8Array {
      if (data.length < 4) throw new Error(`${data.length} bytes cannot hold a crc32c checksum`);
      const body = data.subarray(0, data.length - 4);
      const stored = new DataView(data.buffer, data.byteOffset + body.length, 4).getUint32(0, true);
      const actual = crc32c(body);
      if (stored !== actual) {
        throw new Error(`crc32c is 0x${actual.toString(16)}, the chunk says 0x${stored.toString(16)}`);
      }
      return body;
    },
  }),
};
/** A bytes-to-bytes codec from zarrita's registry, built once per configuration. */
function codecFor(meta: CodecMetadata): Promise<BytesCodec> {
  const cacheKey = JSON.stringify(meta);
  let codec = codecCache.get(cacheKey);
  if (codec === undefined) {
    const load = registry.get(meta.name);
    if (load === undefined) {
      return Promise.reject(
        new SporadikError(
          `The codec "${meta.name}" is not one zarrita knows, so chunks compressed with it cannot be decoded here. Rewrite the store with zstd (the zarr v3 default).`,
        ),
      );
    }
    // zarrita's loaders return a promise (numcodecs' WebAssembly codecs) or the class itself
    // (gzip, zlib, crc32c, shuffle, ...): resolve either.
    codec = Promise.resolve(meta.name === "crc32c" ? CHECKED_CRC32C : load()).then(
      // zarrita's registry entries take (configuration, chunk metadata); numcodecs' ignore the second.
      (entry) =>
        (entry as { fromConfig(config: unknown, meta: unknown): BytesCodec }).fromConfig(
          { ...meta.configuration, id: meta.name },
          undefined,
        ),
    );
    codecCache.set(cacheKey, codec);
  }
  return codec;
}

/** Encode one chunk's elements (already padded to the chunk length) into its stored bytes. */
export async function encodeChunk(
  values: NumericArray,
  compressors: readonly CodecMetadata[],
): Promise<Uint8Array> {
  let bytes = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  for (const meta of compressors) {
    const encoded = await (await codecFor(meta)).encode(bytes);
    // numcodecs' WebAssembly zstd takes no checksum setting: the checksum is added to its frame.
    bytes = isChecksummedZstd(meta) ? withZstdChecksum(encoded, bytes) : encoded;
  }
  return bytes;
}

/**
 * Decodes a chunk compressed with one named bytes-to-bytes codec, in place of zarrita's registry
 * entry for it (a native zstd in Node, say). It writes the decoded bytes into `into`, which is
 * exactly as long as a whole chunk decodes to, and returns how many it wrote; anything but
 * `into.byteLength` is damage, and so is an error thrown for bytes that do not decode. Synchronous
 * or not, as the decoder is. `wave` is how many chunks the read this one belongs to decodes, so a
 * decoder can spread a large wave over threads and keep a small one where it is.
 */
export type Decompressor = (
  stored: Uint8Array,
  into: Uint8Array,
  configuration: Readonly<Record<string, unknown>>,
  wave?: number,
) => number | Promise<number>;

/** Decompressors by codec name; a codec not named here is decoded through zarrita's registry. */
export type Decompressors = Readonly<Record<string, Decompressor | undefined>>;

function chunkWhere(info: ArrayInfo, index: number): string {
  return `/${info.path}/${info.chunkKey(index)}`;
}

function undecodable(info: ArrayInfo, index: number, name: string, cause: unknown): LayoutError {
  const where = chunkWhere(info, index);
  // zstd's own words for a content checksum that does not match (native and WebAssembly builds).
  if (name === "zstd" && /checksum/i.test(String((cause as Error | undefined)?.message ?? cause))) {
    return new LayoutError(
      `${where} fails its zstd content checksum: its bytes changed after they were written. Rewrite the store, or copy it again from where it was written.`,
      { object: where, cause },
    );
  }
  return new LayoutError(
    `${where} cannot be decoded with ${name}: the object is damaged or was written with another codec. Rewrite the store.`,
    { object: where, cause },
  );
}

function wrongLength(info: ArrayInfo, index: number, found: number, expected: number): LayoutError {
  const where = chunkWhere(info, index);
  return new LayoutError(
    `${where} decodes to ${found} bytes, but a chunk of ${info.chunk} ${info.dtype} is ${expected}. The object is damaged or belongs to another array; rewrite the store.`,
    { object: where },
  );
}

/** `stored` without its trailing crc32c, refused unless the checksum matches. */
function checkedCrc32c(stored: Uint8Array, info: ArrayInfo, index: number): Uint8Array {
  const where = chunkWhere(info, index);
  if (stored.byteLength < 4) {
    throw new LayoutError(
      `${where} is ${stored.byteLength} bytes, too short to hold the crc32c checksum its array declares: the object is damaged. Rewrite the store.`,
      { object: where },
    );
  }
  const body = stored.subarray(0, stored.byteLength - 4);
  const declared = new DataView(stored.buffer, stored.byteOffset + body.byteLength, 4).getUint32(0, true);
  const actual = crc32c(body);
  if (declared !== actual) {
    throw new LayoutError(
      `${where} fails its crc32c checksum (0x${actual.toString(16)}, the object says 0x${declared.toString(16)}): its bytes changed after they were written. Rewrite the store, or copy it again from where it was written.`,
      { object: where, expected: declared, found: actual },
    );
  }
  return body;
}

/**
 * Decode one stored chunk's bytes into its typed array, checking it holds a whole chunk and every
 * checksum its array declares: a trailing `crc32c` over the stored bytes (checked here, before
 * anything decodes them), and zstd's content checksum (`checksum: true`, verified by zstd itself;
 * a frame that does not announce one is refused, since it would decode unchecked). An array whose
 * one compressor (after a `crc32c`) `decompressors` names is decoded straight into `into()` (a
 * buffer of exactly one decoded chunk, a fresh one by default); anything else goes through
 * zarrita's registry (WebAssembly, so it runs in a browser too).
 */
export async function decodeChunk(
  stored: Uint8Array,
  info: ArrayInfo,
  index: number,
  decompressors?: Decompressors,
  into: (bytes: number) => Uint8Array = (bytes) => new Uint8Array(bytes),
  wave = 1,
): Promise<NumericArray> {
  const Ctor = constructorOf(info.dtype);
  const expected = info.chunk * Ctor.BYTES_PER_ELEMENT;
  let compressors = info.compressors;
  let bytes = stored;
  if (compressors.length > 0 && compressors[compressors.length - 1]?.name === "crc32c") {
    bytes = checkedCrc32c(bytes, info, index);
    compressors = compressors.slice(0, -1);
  }
  const outer = compressors[compressors.length - 1];
  if (isChecksummedZstd(outer) && !hasZstdChecksum(bytes)) {
    const where = chunkWhere(info, index);
    throw new LayoutError(
      `${where} is not a zstd frame with a content checksum, which its array declares: the object is damaged (a frame without one would decode unchecked). Rewrite the store.`,
      { object: where },
    );
  }
  const only = compressors.length === 1 ? (compressors[0] as CodecMetadata) : undefined;
  const plugged = only === undefined ? undefined : decompressors?.[only.name];
  if (only !== undefined && plugged !== undefined) {
    const target = into(expected);
    let written: number;
    try {
      written = await plugged(bytes, target, only.configuration ?? {}, wave);
    } catch (cause) {
      // A worker that could not run is this process's fault, not the object's.
      if (cause instanceof DecodeWorkerError) throw cause;
      throw undecodable(info, index, only.name, cause);
    }
    if (written !== expected) throw wrongLength(info, index, written, expected);
    return new Ctor(target.buffer, target.byteOffset, info.chunk);
  }
  for (let k = compressors.length - 1; k >= 0; k--) {
    const meta = compressors[k] as CodecMetadata;
    let codec: BytesCodec;
    try {
      codec = await codecFor(meta);
    } catch (cause) {
      // the codec itself is the problem: name the array that uses it
      const where = `/${info.path}`;
      throw new LayoutError(`${where}: ${(cause as Error).message}`, { object: where, cause });
    }
    try {
      bytes = await codec.decode(bytes);
    } catch (cause) {
      throw undecodable(info, index, meta.name, cause);
    }
  }
  if (bytes.byteLength !== expected) throw wrongLength(info, index, bytes.byteLength, expected);
  return typedView(bytes, Ctor);
}

/** A typed array over `bytes`, copying only when the bytes are not aligned for the element width. */
export function typedView(
  bytes: Uint8Array,
  Ctor: {
    new (buffer: ArrayBufferLike, byteOffset?: number, length?: number): NumericArray;
    readonly BYTES_PER_ELEMENT: number;
  },
): NumericArray {
  const width = Ctor.BYTES_PER_ELEMENT;
  const aligned = bytes.byteOffset % width === 0 ? bytes : bytes.slice();
  return new Ctor(aligned.buffer, aligned.byteOffset, aligned.byteLength / width);
}
