/**
 * The {@link Tree} of an HDF5 file, read with h5wasm from a path (the file is not loaded whole),
 * in the calling thread. Node-only; the readers run it in a worker (hdf5-thread.ts).
 *
 * Every dataset's filter pipeline is checked before any read: h5wasm returns garbage without an
 * error for a filter it has no plugin for, and aborts the whole WebAssembly module on some read
 * failures, so nothing is read that is not known to decode.
 *
 * Every h5wasm call goes through {@link guarded}: a failure of HDF5 while listing a group or
 * reading a dataset is an error naming that object, never an empty group or missing member.
 */

import h5wasm, { type Dataset, type File as H5File, type Group as H5Group } from "h5wasm/node";
import { install_local_plugins } from "h5wasm-plugins";
import { AnndataError, objectIn, UnsupportedFilterError } from "./errors.js";
import { installLzfFix, lzfFixed } from "./h5wasm-lzf.js";
import { guarded, hdf5Reason, throwHdf5Errors } from "./hdf5-errors.js";
import type { CompoundField, ElementKind, Tree, TreeArray, TreeGroup, TreeNode } from "./tree.js";
import type { NumericValues } from "./types.js";

/** Rows of a string dataset read per h5wasm call (see readStrings). */
const STRING_SLICE_ROWS = 65_536;
/** Filters built into the HDF5 library: deflate, shuffle, fletcher32, nbit, scaleoffset. */
const BUILTIN_FILTERS = new Set([1, 2, 3, 5, 6]);
/** Lossless filters of the local h5wasm-plugins: bz2, lzf, blosc, lz4, bshuf, zstd, blosc2. */
const PLUGIN_FILTERS = new Set([307, 32000, 32001, 32004, 32008, 32015, 32026]);
const LZF = 32000;

let ready: Promise<void> | undefined;

/** Loads h5wasm once and puts the h5wasm-plugins folder on its plugin path (never /usr/local). */
function init(): Promise<void> {
  ready ??= h5wasm.ready.then((module) => {
    throwHdf5Errors(module);
    install_local_plugins(module);
    installLzfFix(module as unknown as Parameters<typeof installLzfFix>[0]);
  });
  return ready;
}

export interface Hdf5Options {
  /**
   * Whether filters that need h5wasm-plugins (lzf, blosc, ...) count as decodable. Tests turn this
   * off to check that such datasets are refused rather than read.
   */
  plugins?: boolean;
}

/**
 * Opens an HDF5 file read-only, read in this thread. Readers use {@link openHdf5} of
 * hdf5-thread.ts, which runs this in a worker under a watchdog.
 */
export async function openHdf5InThread(path: string, opts: Hdf5Options = {}): Promise<Tree> {
  await init();
  let file: H5File;
  try {
    file = new h5wasm.File(path, "r");
  } catch (cause) {
    const why = hdf5Reason(cause);
    throw new AnndataError(`${path}: not a readable HDF5 file${why ? `: ${why}` : ""}.`, {
      tag: "MalformedInput",
      object: path,
      cause,
    });
  }
  if (file.file_id < 0n) {
    throw new AnndataError(`${path}: not a readable HDF5 file.`, { tag: "MalformedInput", object: path });
  }
  return new Hdf5Tree(path, file, opts.plugins ?? true);
}

class Hdf5Tree implements Tree {
  private closed = false;
  constructor(
    readonly location: string,
    private readonly file: H5File,
    private readonly plugins: boolean,
  ) {}

  async get(path: string): Promise<TreeNode | undefined> {
    if (path === "") return new Hdf5Group(this.location, this.file, "");
    // walk down so that a missing intermediate group is "absent", never an HDF5 error
    let node: H5Group = this.file;
    const parts = path.split("/");
    for (let i = 0; i < parts.length; i++) {
      const name = parts[i] as string;
      const parent = parts.slice(0, i).join("/");
      const here = parts.slice(0, i + 1).join("/");
      const group = node;
      if (!guarded(this.location, parent, () => group.keys()).includes(name)) return undefined;
      const child = guarded(this.location, here, () => group.get(name));
      if (child instanceof h5wasm.Group) {
        node = child;
        continue;
      }
      if (child instanceof h5wasm.Dataset && i === parts.length - 1) {
        return guarded(this.location, path, () => new Hdf5Array(this.location, child, path, this.plugins));
      }
      return undefined;
    }
    return new Hdf5Group(this.location, node, path);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.file.close();
  }
}

function attrsOf(node: H5Group | Dataset): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, attr] of Object.entries(node.attrs)) out[name] = attr.value;
  return out;
}

class Hdf5Group implements TreeGroup {
  readonly kind = "group" as const;
  constructor(
    private readonly location: string,
    private readonly group: H5Group,
    readonly path: string,
  ) {}
  async attrs(): Promise<Record<string, unknown>> {
    return guarded(this.location, this.path, () => attrsOf(this.group));
  }
  async keys(): Promise<string[]> {
    return guarded(this.location, this.path, () => this.group.keys());
  }
}

/** h5wasm type codes (H5T_class_t). */
const H5T_INTEGER = 0;
const H5T_FLOAT = 1;
const H5T_STRING = 3;
const H5T_COMPOUND = 6;
const H5T_ENUM = 8;
const H5T_ARRAY = 10;

interface TypeMeta {
  type: number;
  signed?: boolean;
  size: number;
  vlen?: boolean;
  enum_type?: { members: Record<string, number> };
  /** The element type and shape of an H5T_ARRAY type. */
  array_type?: TypeMeta & { shape: number[] };
}

function fieldOf(m: TypeMeta & { name: string }): CompoundField {
  if (m.type === H5T_ARRAY && m.array_type) {
    const e = m.array_type;
    return { name: m.name, kind: kindOf(e), itemSize: e.size, shape: [...e.shape] };
  }
  return { name: m.name, kind: kindOf(m), itemSize: m.size };
}

function kindOf(meta: TypeMeta): ElementKind {
  switch (meta.type) {
    case H5T_INTEGER:
      return meta.signed ? "int" : "uint";
    case H5T_FLOAT:
      return "float";
    case H5T_STRING:
      return "string";
    case H5T_COMPOUND:
      return "compound";
    case H5T_ENUM: {
      // h5py stores numpy bools as an enum {FALSE: 0, TRUE: 1}
      const names = Object.keys(meta.enum_type?.members ?? {}).sort();
      return names.length === 2 && names[0] === "FALSE" && names[1] === "TRUE" ? "bool" : "int";
    }
    default:
      return "other";
  }
}

/** HDF5 type classes no reader here decodes, as a refusal names them. */
const UNREAD_CLASSES: Record<number, string> = {
  2: "HDF5 time",
  4: "HDF5 bitfield",
  5: "HDF5 opaque",
  7: "HDF5 reference",
  9: "HDF5 variable-length sequence",
  10: "HDF5 array",
};

/** The stored type of an element no reader decodes, in words; undefined for those read. */
function unreadType(meta: TypeMeta): string | undefined {
  const name = UNREAD_CLASSES[meta.type];
  if (name === undefined) return undefined;
  // h5py keeps numpy's datetime64 and timedelta64 as 8-byte opaque values (the numpy dtype in the
  // type's tag, which h5wasm does not expose)
  const h5py = meta.type === 5 && meta.size === 8 ? ": how h5py stores numpy datetime64 and timedelta64" : "";
  return `${name}, ${meta.size} bytes${h5py}`;
}

class Hdf5Array implements TreeArray {
  readonly kind = "array" as const;
  readonly shape: number[];
  readonly element: ElementKind;
  readonly itemSize: number;
  readonly fields?: CompoundField[];
  readonly dtype?: string;
  private checked = false;

  constructor(
    private readonly location: string,
    private readonly dataset: Dataset,
    readonly path: string,
    private readonly plugins: boolean,
  ) {
    const meta = dataset.metadata as unknown as TypeMeta & {
      shape: number[] | null;
      compound_type?: { members: (TypeMeta & { name: string })[] };
    };
    this.shape = meta.shape ?? [];
    this.element = kindOf(meta);
    this.itemSize = meta.size;
    const unread = unreadType(meta);
    if (unread !== undefined) this.dtype = unread;
    if (meta.compound_type) {
      this.fields = meta.compound_type.members.map(fieldOf);
    }
  }

  async attrs(): Promise<Record<string, unknown>> {
    return guarded(this.location, this.path, () => attrsOf(this.dataset));
  }

  /** Refuses, before any read, a dataset whose filters would decode to garbage or crash h5wasm. */
  private checkFilters(): void {
    if (this.checked) return;
    for (const f of this.dataset.filters) {
      if (BUILTIN_FILTERS.has(f.id)) continue;
      if (!PLUGIN_FILTERS.has(f.id)) {
        throw UnsupportedFilterError.of(
          this.location,
          this.path,
          f.id,
          f.name,
          "no decoder for this filter is available",
        );
      }
      if (!this.plugins) {
        throw UnsupportedFilterError.of(
          this.location,
          this.path,
          f.id,
          f.name,
          "HDF5 filter plugins are disabled",
        );
      }
      if (
        f.id === LZF &&
        !lzfFixed() &&
        this.element === "string" &&
        (this.dataset.metadata as { vlen?: boolean }).vlen
      ) {
        // the plugin's own lzf fails on variable-length strings (see h5wasm-lzf.ts) and the failed
        // read would abort the wasm module: only read them when our replacement filter is in place
        throw UnsupportedFilterError.of(
          this.location,
          this.path,
          f.id,
          f.name,
          "h5wasm-plugins cannot decode lzf-compressed variable-length strings",
        );
      }
    }
    this.checked = true;
  }

  private range(start: number | undefined, end: number | undefined): [number, number] {
    const n = this.shape[0] ?? 1;
    const s = start ?? 0;
    const e = end ?? n;
    if (!(s >= 0 && e <= n && s <= e)) {
      throw new AnndataError(
        `${this.location}: read of [${s}, ${e}) outside dataset ${this.path} of length ${n}.`,
        { tag: "MalformedInput", object: objectIn(this.location, this.path) },
      );
    }
    return [s, e];
  }

  async read(start?: number, end?: number): Promise<NumericValues> {
    return guarded(this.location, this.path, () => this.readNow(start, end));
  }

  async readStrings(start?: number, end?: number): Promise<string[]> {
    return guarded(this.location, this.path, () => this.readStringsNow(start, end));
  }

  async readCompound(): Promise<Map<string, string[] | NumericValues>> {
    return guarded(this.location, this.path, () => this.readCompoundNow());
  }

  private readNow(start?: number, end?: number): NumericValues {
    this.checkFilters();
    if (
      this.element !== "int" &&
      this.element !== "uint" &&
      this.element !== "float" &&
      this.element !== "bool"
    ) {
      throw new AnndataError(`${this.location}: dataset ${this.path} is not numeric.`, {
        tag: "MalformedInput",
        object: objectIn(this.location, this.path),
      });
    }
    if (this.shape.length === 0) return this.dataset.value as NumericValues;
    const [s, e] = this.range(start, end);
    if (s === e) return new Float64Array(0);
    const sel: [number, number][] = [[s, e]];
    for (let d = 1; d < this.shape.length; d++) sel.push([0, this.shape[d] as number]);
    const v = this.dataset.slice(sel);
    if (ArrayBuffer.isView(v)) return v as NumericValues;
    throw new AnndataError(`${this.location}: dataset ${this.path} did not read as numbers.`, {
      tag: "MalformedInput",
      object: objectIn(this.location, this.path),
    });
  }

  private readStringsNow(start?: number, end?: number): string[] {
    this.checkFilters();
    if (this.element !== "string") {
      throw new AnndataError(`${this.location}: dataset ${this.path} does not hold strings.`, {
        tag: "MalformedInput",
        object: objectIn(this.location, this.path),
      });
    }
    if (this.shape.length === 0) return [String(this.dataset.value)];
    const [s, e] = this.range(start, end);
    if (s === e) return [];
    // In slices: h5wasm holds a slice's variable-length strings in WebAssembly memory, which
    // never shrinks, so a million cell names read at once would keep ~100 MB for the whole run.
    const out = new Array<string>(e - s);
    const decoder = new TextDecoder();
    for (let a = s; a < e; a += STRING_SLICE_ROWS) {
      const b = Math.min(e, a + STRING_SLICE_ROWS);
      const v = this.dataset.slice([[a, b]]);
      const part = Array.isArray(v) ? v : [v];
      for (let i = 0; i < part.length; i++) {
        const x = part[i];
        out[a - s + i] = x instanceof Uint8Array ? decoder.decode(x) : String(x);
      }
    }
    return out;
  }

  private readCompoundNow(): Map<string, string[] | NumericValues> {
    this.checkFilters();
    const fields = this.fields;
    if (!fields) {
      throw new AnndataError(`${this.location}: dataset ${this.path} is not a compound (record) array.`, {
        tag: "MalformedInput",
        object: objectIn(this.location, this.path),
      });
    }
    const n = this.shape[0] ?? 0;
    const rows = (n === 0 ? [] : this.dataset.slice([[0, n]])) as unknown[][];
    const out = new Map<string, string[] | NumericValues>();
    fields.forEach((f, k) => {
      if (f.shape && f.kind !== "string") {
        // h5wasm gives each record's sub-array as (nested) JS arrays: flatten them, row-major
        out.set(
          f.name,
          numericColumn(
            f,
            rows.flatMap((r) => [r[k]].flat(f.shape?.length ?? 1)),
          ),
        );
      } else if (f.shape) {
        return; // sub-arrays of strings: no reader needs them
      } else if (f.kind === "string") {
        out.set(
          f.name,
          rows.map((r) => String(r[k])),
        );
      } else if (f.kind === "int" || f.kind === "uint" || f.kind === "float" || f.kind === "bool") {
        out.set(
          f.name,
          numericColumn(
            f,
            rows.map((r) => r[k]),
          ),
        );
      }
    });
    return out;
  }
}

/** A typed array of the field's own width, so that tables keep the source dtypes. */
function numericColumn(f: CompoundField, col: unknown[]): NumericValues {
  if (typeof col[0] === "bigint") return BigInt64Array.from(col as bigint[]);
  const nums = col as number[];
  if (f.kind === "bool") return Uint8Array.from(nums);
  if (f.kind === "float") return f.itemSize === 4 ? Float32Array.from(nums) : Float64Array.from(nums);
  if (f.kind === "int") {
    if (f.itemSize === 1) return Int8Array.from(nums);
    if (f.itemSize === 2) return Int16Array.from(nums);
    if (f.itemSize === 4) return Int32Array.from(nums);
  }
  if (f.kind === "uint") {
    if (f.itemSize === 1) return Uint8Array.from(nums);
    if (f.itemSize === 2) return Uint16Array.from(nums);
    if (f.itemSize === 4) return Uint32Array.from(nums);
  }
  return Float64Array.from(nums);
}
