/**
 * The {@link Tree} of a zarr v2 or v3 hierarchy, read with zarrita from a zarrita-style store.
 * Browser-safe: the caller brings the store (a local folder, HTTP, ...).
 */

import * as zarr from "zarrita";
import type { DatetimeUnit } from "./datetime-text.js";
import { AnndataError, objectIn } from "./errors.js";
import type { ElementKind, Tree, TreeArray, TreeGroup, TreeNode } from "./tree.js";
import type { NumericValues } from "./types.js";
import { int64View, readArrayMeta, type ZarrArrayMeta } from "./zarr-dtype.js";
import { openRecordArray } from "./zarr-records.js";

/**
 * What zarrita needs from a store to read a tree: `get("/a/b")` (`ZarrReadable` of
 * @deltacells/storage, keys starting with `/`), and where the store can, a group's children.
 */
export interface ZarrTreeStore {
  get(key: `/${string}`): Promise<Uint8Array | undefined>;
  /** Names of the children of a group (zarr metadata does not list them); optional. */
  children?(path: string): Promise<string[]>;
}

/** Opens the zarr hierarchy rooted at `store`; `location` names it in errors. */
export function openZarrTree(location: string, store: ZarrTreeStore): Tree {
  return new ZarrTree(location, store);
}

/** The metadata documents of zarr v2 and v3, which several readers of one node each ask for. */
const METADATA = /(^|\/)(\.zarray|\.zgroup|\.zattrs|zarr\.json)$/;

/**
 * `store` with each metadata document fetched once: the record-array check, zarrita and the
 * data type check read the same `.zarray` or `zarr.json`, and over HTTP each read is a request.
 */
function onceMetadata(store: ZarrTreeStore): ZarrTreeStore {
  const seen = new Map<string, Promise<Uint8Array | undefined>>();
  return {
    get: (key) => {
      if (!METADATA.test(key)) return store.get(key);
      let p = seen.get(key);
      if (!p) {
        p = store.get(key);
        p.catch(() => seen.delete(key)); // a failed read is tried again
        seen.set(key, p);
      }
      return p;
    },
    ...(store.children ? { children: (path: string) => store.children!(path) } : {}),
  };
}

class ZarrTree implements Tree {
  private readonly root: zarr.Location<ZarrTreeStore>;
  private readonly store: ZarrTreeStore;
  constructor(
    readonly location: string,
    store: ZarrTreeStore,
  ) {
    this.store = onceMetadata(store);
    this.root = zarr.root(this.store);
  }

  async get(path: string): Promise<TreeNode | undefined> {
    const record = await openRecordArray(this.location, this.store, path);
    if (record !== undefined) return record;
    let node: zarr.Array<zarr.DataType, ZarrTreeStore> | zarr.Group<ZarrTreeStore>;
    try {
      node = await zarr.open(path === "" ? this.root : this.root.resolve(path));
    } catch (cause) {
      // An array of a data type zarrita does not know fails to open (as "not found" in v2): its
      // metadata says what it is, read only now so that the usual nodes cost no extra request.
      const meta = await readArrayMeta(this.store, path);
      if (meta !== undefined) return this.openUnknown(meta, path, cause);
      if (cause instanceof Error && cause.name === "NotFoundError") return undefined;
      if (cause instanceof Error && /not found/i.test(cause.message)) return undefined;
      throw new AnndataError(`${this.location}: cannot open zarr node ${path}: ${String(cause)}`, {
        tag: "MalformedInput",
        object: objectIn(this.location, path),
        cause,
      });
    }
    if (node instanceof zarr.Group) return new ZarrGroup(node, path);
    return new ZarrArray(this.location, node, path);
  }

  /** A datetime64 array read as its int64 counts; any other data type zarrita refused, named. */
  private async openUnknown(meta: ZarrArrayMeta, path: string, cause: unknown): Promise<TreeArray> {
    if (meta.datetime === undefined) return new UnreadableArray(this.location, this.store, path, meta, cause);
    const location = zarr.root(int64View(this.store, meta)).resolve(path);
    const array =
      meta.version === 2
        ? await zarr.open.v2(location, { kind: "array" })
        : await zarr.open.v3(location, { kind: "array" });
    return new ZarrArray(this.location, array, path, meta);
  }

  async close(): Promise<void> {}
}

class ZarrGroup implements TreeGroup {
  readonly kind = "group" as const;
  constructor(
    private readonly group: zarr.Group<ZarrTreeStore>,
    readonly path: string,
  ) {}
  async attrs(): Promise<Record<string, unknown>> {
    return { ...this.group.attrs };
  }
  async keys(): Promise<string[]> {
    // zarr has no listing in its metadata (v2 consolidated metadata aside): ask the store if it can
    const store = this.group.store;
    return store.children ? store.children(this.path) : [];
  }
}

function kindOf(dtype: string): ElementKind {
  if (dtype.startsWith("int")) return "int";
  if (dtype.startsWith("uint")) return "uint";
  if (dtype.startsWith("float")) return "float";
  if (dtype === "bool") return "bool";
  if (dtype === "string" || dtype === "v2:object" || dtype.startsWith("v2:U") || dtype.startsWith("v2:S"))
    return "string";
  return "other";
}

class ZarrArray implements TreeArray {
  readonly kind = "array" as const;
  readonly shape: number[];
  readonly element: ElementKind;
  readonly itemSize: number;
  readonly chunkRows: number | undefined;

  readonly datetime?: DatetimeUnit;
  readonly dtype?: string;

  constructor(
    private readonly location: string,
    private readonly array: zarr.Array<zarr.DataType, ZarrTreeStore>,
    readonly path: string,
    /** The metadata of a datetime64 array, which `array` reads as int64. */
    datetime?: ZarrArrayMeta,
  ) {
    this.shape = array.shape;
    this.chunkRows = array.chunks[0];
    this.element = datetime ? "datetime" : kindOf(array.dtype);
    this.itemSize = Number(/\d+/.exec(array.dtype)?.[0] ?? 8) / 8;
    if (datetime?.datetime) {
      this.datetime = datetime.datetime;
      this.dtype = datetime.dtype;
    }
  }

  async attrs(): Promise<Record<string, unknown>> {
    return { ...this.array.attrs };
  }

  private selection(start: number | undefined, end: number | undefined): (zarr.Slice | null)[] {
    const n = this.shape[0] ?? 0;
    const s = start ?? 0;
    const e = end ?? n;
    if (!(s >= 0 && e <= n && s <= e)) {
      throw new AnndataError(
        `${this.location}: read of [${s}, ${e}) outside array ${this.path} of length ${n}.`,
        { tag: "MalformedInput", object: objectIn(this.location, this.path) },
      );
    }
    return [zarr.slice(s, e), ...this.shape.slice(1).map(() => null)];
  }

  private async raw(start?: number, end?: number): Promise<unknown> {
    try {
      if (this.shape.length === 0) return (await zarr.get(this.array)).data;
      return (await zarr.get(this.array, this.selection(start, end))).data;
    } catch (cause) {
      if (cause instanceof AnndataError) throw cause;
      throw new AnndataError(`${this.location}: cannot read zarr array ${this.path}: ${String(cause)}`, {
        tag: "MalformedInput",
        object: objectIn(this.location, this.path),
        cause,
      });
    }
  }

  async read(start?: number, end?: number): Promise<NumericValues> {
    const data = await this.raw(start, end);
    if (data instanceof zarr.BoolArray) {
      return new Uint8Array(data.buffer, data.byteOffset, data.length).slice();
    }
    if (data instanceof BigUint64Array) return Float64Array.from(data, Number);
    if (ArrayBuffer.isView(data)) return data as NumericValues;
    if (typeof data === "number") return Float64Array.of(data);
    if (typeof data === "bigint") return BigInt64Array.of(data);
    throw new AnndataError(`${this.location}: zarr array ${this.path} is not numeric.`, {
      tag: "MalformedInput",
      object: objectIn(this.location, this.path),
    });
  }

  async readStrings(start?: number, end?: number): Promise<string[]> {
    const data = await this.raw(start, end);
    if (Array.isArray(data)) return data.map(String);
    if (data instanceof zarr.ByteStringArray || data instanceof zarr.UnicodeStringArray) {
      return Array.from({ length: data.length }, (_, i) => data.get(i));
    }
    if (typeof data === "string") return [data];
    throw new AnndataError(`${this.location}: zarr array ${this.path} does not hold strings.`, {
      tag: "MalformedInput",
      object: objectIn(this.location, this.path),
    });
  }

  async readCompound(): Promise<Map<string, string[] | NumericValues>> {
    throw new AnndataError(
      `${this.location}: zarr array ${this.path}: record arrays are not supported here.`,
      {
        tag: "Unsupported",
        object: objectIn(this.location, this.path),
      },
    );
  }
}

/** An array whose data type no reader here decodes: its shape and data type, and refusals naming it. */
class UnreadableArray implements TreeArray {
  readonly kind = "array" as const;
  readonly element = "other" as const;
  readonly itemSize = 0;
  readonly shape: number[];
  readonly dtype: string;

  constructor(
    private readonly location: string,
    private readonly store: ZarrTreeStore,
    readonly path: string,
    private readonly meta: ZarrArrayMeta,
    private readonly cause: unknown,
  ) {
    this.shape = meta.shape;
    this.dtype = meta.dtype;
  }

  async attrs(): Promise<Record<string, unknown>> {
    if (this.meta.version === 3) return { ...((this.meta.json.attributes as object | undefined) ?? {}) };
    const bytes = await this.store.get(`/${this.path}/.zattrs`);
    try {
      return bytes === undefined
        ? {}
        : (JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>);
    } catch {
      return {};
    }
  }

  private refuse(): AnndataError {
    return new AnndataError(
      `${this.location}: zarr array ${this.path} holds ${this.dtype}, a data type this reader cannot decode.`,
      {
        tag: "Unsupported",
        object: objectIn(this.location, this.path),
        found: this.dtype,
        cause: this.cause,
      },
    );
  }

  async read(): Promise<NumericValues> {
    throw this.refuse();
  }

  async readStrings(): Promise<string[]> {
    throw this.refuse();
  }

  async readCompound(): Promise<Map<string, string[] | NumericValues>> {
    throw this.refuse();
  }
}
