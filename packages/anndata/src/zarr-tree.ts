/**
 * The {@link Tree} of a zarr v2 or v3 hierarchy, read with zarrita from a zarrita-style store.
 * Browser-safe: the caller brings the store (a local folder, HTTP, ...).
 */

import * as zarr from "zarrita";
import { InputError, objectIn } from "./errors.js";
import type { ElementKind, Tree, TreeArray, TreeGroup, TreeNode } from "./tree.js";
import type { NumericValues } from "./types.js";
import { openRecordArray } from "./zarr-records.js";

/** What zarrita needs from a store: `get("/a/b")` resolving to the bytes or undefined. */
export interface ZarrReadable {
  get(key: `/${string}`): Promise<Uint8Array | undefined>;
  /** Names of the children of a group (zarr metadata does not list them); optional. */
  children?(path: string): Promise<string[]>;
}

/** Opens the zarr hierarchy rooted at `store`; `location` names it in errors. */
export function openZarrTree(location: string, store: ZarrReadable): Tree {
  return new ZarrTree(location, store);
}

class ZarrTree implements Tree {
  private readonly root: zarr.Location<ZarrReadable>;
  constructor(
    readonly location: string,
    private readonly store: ZarrReadable,
  ) {
    this.root = zarr.root(store);
  }

  async get(path: string): Promise<TreeNode | undefined> {
    const record = await openRecordArray(this.location, this.store, path);
    if (record !== undefined) return record;
    let node: zarr.Array<zarr.DataType, ZarrReadable> | zarr.Group<ZarrReadable>;
    try {
      node = await zarr.open(path === "" ? this.root : this.root.resolve(path));
    } catch (cause) {
      if (cause instanceof Error && cause.name === "NotFoundError") return undefined;
      if (cause instanceof Error && /not found/i.test(cause.message)) return undefined;
      throw new InputError(`${this.location}: cannot open zarr node ${path}: ${String(cause)}`, {
        tag: "MalformedInput",
        object: objectIn(this.location, path),
        cause,
      });
    }
    if (node instanceof zarr.Group) return new ZarrGroup(node, path);
    return new ZarrArray(this.location, node, path);
  }

  async close(): Promise<void> {}
}

class ZarrGroup implements TreeGroup {
  readonly kind = "group" as const;
  constructor(
    private readonly group: zarr.Group<ZarrReadable>,
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

  constructor(
    private readonly location: string,
    private readonly array: zarr.Array<zarr.DataType, ZarrReadable>,
    readonly path: string,
  ) {
    this.shape = array.shape;
    this.chunkRows = array.chunks[0];
    this.element = kindOf(array.dtype);
    this.itemSize = Number(/\d+/.exec(array.dtype)?.[0] ?? 8) / 8;
  }

  async attrs(): Promise<Record<string, unknown>> {
    return { ...this.array.attrs };
  }

  private selection(start: number | undefined, end: number | undefined): (zarr.Slice | null)[] {
    const n = this.shape[0] ?? 0;
    const s = start ?? 0;
    const e = end ?? n;
    if (!(s >= 0 && e <= n && s <= e)) {
      throw new InputError(
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
      if (cause instanceof InputError) throw cause;
      throw new InputError(`${this.location}: cannot read zarr array ${this.path}: ${String(cause)}`, {
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
    throw new InputError(`${this.location}: zarr array ${this.path} is not numeric.`, {
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
    throw new InputError(`${this.location}: zarr array ${this.path} does not hold strings.`, {
      tag: "MalformedInput",
      object: objectIn(this.location, this.path),
    });
  }

  async readCompound(): Promise<Map<string, string[] | NumericValues>> {
    throw new InputError(`${this.location}: zarr array ${this.path}: record arrays are not supported here.`, {
      tag: "Unsupported",
      object: objectIn(this.location, this.path),
    });
  }
}
