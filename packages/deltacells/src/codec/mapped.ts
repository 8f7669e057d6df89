/**
 * Memory of a file that other threads and processes map too: the training loader's batches in a
 * file another process reads without a copy (`LoaderOptions.sharedBatches`). Node-API cannot make
 * a SharedArrayBuffer over foreign memory, so each thread maps the file itself (the native
 * kernel's `mapFile`; every mapping of one file shows the same pages). A typed array over such
 * memory cannot be posted to a pool's worker as it is (its ArrayBuffer would be copied): it
 * travels as a {@link MappedView}, which the worker turns into a view of its own mapping.
 */
import { DeltacellsError } from "../errors.js";
import { nativeKernel } from "./native.js";

/** A file mapped whole by every thread that writes or reads it. */
export interface MappedFile {
  /** Unique to this file (random): a descriptor number is reused once closed, an id never. */
  id: string;
  /** The open descriptor (read and write), valid in every thread of the process. */
  fd: number;
  /** Bytes mapped, from offset 0. */
  length: number;
}

/** A typed array over a {@link MappedFile}, as sent to another thread. */
export interface MappedView {
  file: MappedFile;
  kind: "int32" | "float32";
  byteOffset: number;
  length: number;
}

/** This thread's mappings, by file id; a few kept (a loader maps one file). */
const mappings = new Map<string, ArrayBuffer>();
const KEEP = 8;
/** The file behind each of this thread's mappings. */
const files = new WeakMap<ArrayBuffer, MappedFile>();

/** The native kernel, or why shared batch memory cannot work without it. */
function kernelOrRefuse() {
  const kernel = nativeKernel();
  if (kernel === undefined)
    throw new DeltacellsError(
      "shared batch memory needs the native kernel (Node with the built addon), which is not in use here",
      { tag: "UnsupportedHost", field: "sharedBatches", expected: "the native kernel", found: "none" },
    );
  return kernel;
}

/** Makes the file `fd` at least `bytes` long (its pages are allocated when it is first mapped). */
export function sizeMappedFile(fd: number, bytes: number): void {
  try {
    kernelOrRefuse().reserveFile(fd, bytes);
  } catch (err) {
    if (err instanceof DeltacellsError) throw err;
    throw new DeltacellsError(
      `cannot size the shared batch file (descriptor ${fd}) to ${bytes} bytes: ${(err as Error).message}`,
      {
        tag: "UnsupportedHost",
        field: "sharedBatches",
        found: (err as Error).message,
        cause: err,
      },
    );
  }
}

/** `file` mapped into this thread (once; later calls return the same ArrayBuffer). */
export function mapFile(file: MappedFile): ArrayBuffer {
  const held = mappings.get(file.id);
  if (held !== undefined) return held;
  const kernel = kernelOrRefuse();
  let buffer: ArrayBuffer;
  try {
    buffer = kernel.mapFile(file.fd, 0, file.length);
  } catch (err) {
    throw new DeltacellsError(
      `cannot map the shared batch file (descriptor ${file.fd}, ${file.length} bytes): ${(err as Error).message}`,
      { tag: "UnsupportedHost", field: "sharedBatches", found: (err as Error).message, cause: err },
    );
  }
  mappings.set(file.id, buffer);
  files.set(buffer, file);
  // The oldest mapping goes (unmapped once nothing refers to it); mapped again if asked for.
  if (mappings.size > KEEP) mappings.delete(mappings.keys().next().value!);
  return buffer;
}

/**
 * The pages of `[offset, offset + length)` of `file` allocated and mapped writable now (before the
 * decoders write them): no room is this error, not a SIGBUS in the first process to write a page.
 */
export function allocateMapped(file: MappedFile, offset: number, length: number): void {
  try {
    kernelOrRefuse().allocateMapped(file.fd, mapFile(file), offset, length);
  } catch (err) {
    if (err instanceof DeltacellsError) throw err;
    const full = (err as { code?: string }).code === "ENOSPC";
    throw new DeltacellsError(
      `cannot allocate ${length} bytes of shared batch memory (descriptor ${file.fd}): ${(err as Error).message}${full ? "; the memory it lives in is full: use fewer slots or smaller batches, or free memory" : ""}`,
      {
        tag: "UnsupportedHost",
        field: "sharedBatches",
        expected: `${length} bytes`,
        found: (err as Error).message,
        cause: err,
      },
    );
  }
}

/** The file `array` is a view of, in this thread's mapping of it, or undefined. */
export function mappedFileOf(array: ArrayBufferView): MappedFile | undefined {
  return array.buffer instanceof ArrayBuffer ? files.get(array.buffer) : undefined;
}

/** `array` as a {@link MappedView} when it is over a mapped file, else undefined. */
export function describeMapped(array: Int32Array | Float32Array): MappedView | undefined {
  const file = mappedFileOf(array);
  if (file === undefined) return undefined;
  const kind = array instanceof Float32Array ? "float32" : "int32";
  return { file, kind, byteOffset: array.byteOffset, length: array.length };
}

/** The typed array `view` describes, over this thread's mapping of its file. */
export function viewOfMapped(view: MappedView): Int32Array | Float32Array {
  const buffer = mapFile(view.file);
  return view.kind === "float32"
    ? new Float32Array(buffer, view.byteOffset, view.length)
    : new Int32Array(buffer, view.byteOffset, view.length);
}
