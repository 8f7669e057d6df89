/**
 * Zarr v2 record arrays (numpy structured dtypes), which zarrita cannot open: the obs/var tables
 * of AnnData zarr stores written before anndata 0.7. Only 1-d arrays of fixed-width fields
 * (bytes strings, little-endian numbers, bools, datetime64) compressed with blosc, zlib, gzip or
 * nothing.
 * Browser-safe.
 */

import { Blosc, GZip, Zlib } from "numcodecs";
import { parseDatetimeUnit } from "./datetime-text.js";
import { AnndataError, objectIn } from "./errors.js";
import type { CompoundField, ElementKind, TreeArray } from "./tree.js";
import type { NumericValues } from "./types.js";
import type { ZarrTreeStore } from "./zarr-tree.js";

interface Field extends CompoundField {
  offset: number;
  typestr: string;
}

interface V2Meta {
  shape: number[];
  chunks: number[];
  dtype: unknown;
  compressor: ({ id: string } & Record<string, unknown>) | null;
  filters: unknown;
  dimension_separator?: string;
}

/** The record array at `path`, or undefined when `path` is not a v2 array with a structured dtype. */
export async function openRecordArray(
  location: string,
  store: ZarrTreeStore,
  path: string,
): Promise<TreeArray | undefined> {
  const key = `/${path === "" ? "" : `${path}/`}.zarray` as `/${string}`;
  const bytes = await store.get(key);
  if (bytes === undefined) return undefined;
  let meta: V2Meta;
  try {
    meta = JSON.parse(new TextDecoder().decode(bytes)) as V2Meta;
  } catch {
    return undefined;
  }
  if (!Array.isArray(meta.dtype)) return undefined;
  const bad = (what: string) =>
    new AnndataError(`${location}: record array ${path}: ${what}.`, {
      tag: "Unsupported",
      object: objectIn(location, path),
    });
  if (meta.shape.length !== 1) throw bad("only 1-d record arrays are supported");
  if (meta.filters !== null && meta.filters !== undefined) throw bad("filters are not supported");
  const fields: Field[] = [];
  let offset = 0;
  for (const f of meta.dtype as unknown[]) {
    if (!Array.isArray(f) || f.length !== 2 || typeof f[0] !== "string" || typeof f[1] !== "string") {
      throw bad(`field ${JSON.stringify(f)} is not a plain (name, type) pair`);
    }
    const typestr = f[1];
    const dt = /^[<|]M8\[(\w+)\]$/.exec(typestr);
    const datetime = dt ? parseDatetimeUnit(dt[1]!) : undefined;
    if (datetime) {
      fields.push({ name: f[0], kind: "datetime", itemSize: 8, offset, typestr, datetime });
      offset += 8;
      continue;
    }
    const m = /^([<>|])([biufS])(\d+)$/.exec(typestr);
    if (!m || m[1] === ">") throw bad(`field type ${typestr} is not supported`);
    const size = Number(m[3]);
    const kind: ElementKind = { b: "bool", i: "int", u: "uint", f: "float", S: "string" }[
      m[2] as "b"
    ] as ElementKind;
    fields.push({ name: f[0], kind, itemSize: size, offset, typestr });
    offset += size;
  }
  return new RecordArray(location, store, path, meta, fields, offset);
}

class RecordArray implements TreeArray {
  readonly kind = "array" as const;
  readonly element = "compound" as const;
  readonly shape: number[];

  constructor(
    private readonly location: string,
    private readonly store: ZarrTreeStore,
    readonly path: string,
    private readonly meta: V2Meta,
    readonly fields: Field[],
    readonly itemSize: number,
  ) {
    this.shape = meta.shape;
  }

  async attrs(): Promise<Record<string, unknown>> {
    const b = await this.store.get(`/${this.path}/.zattrs`);
    return b === undefined ? {} : (JSON.parse(new TextDecoder().decode(b)) as Record<string, unknown>);
  }

  async read(): Promise<NumericValues> {
    throw this.notPlain();
  }

  async readStrings(): Promise<string[]> {
    throw this.notPlain();
  }

  private notPlain(): AnndataError {
    return new AnndataError(`${this.location}: ${this.path} is a record array, not a plain array.`, {
      tag: "MalformedInput",
      object: objectIn(this.location, this.path),
    });
  }

  private async decode(chunk: Uint8Array): Promise<Uint8Array> {
    const c = this.meta.compressor;
    if (c === null) return chunk;
    const { id, ...config } = c;
    const codec =
      id === "blosc"
        ? Blosc.fromConfig(config)
        : id === "zlib"
          ? Zlib.fromConfig(config)
          : id === "gzip"
            ? GZip.fromConfig(config)
            : undefined;
    if (codec === undefined) {
      throw new AnndataError(
        `${this.location}: record array ${this.path} uses compressor ${id}, which is not supported.`,
        { tag: "Unsupported", object: objectIn(this.location, this.path) },
      );
    }
    return codec.decode(chunk);
  }

  async readCompound(): Promise<Map<string, string[] | NumericValues>> {
    const n = this.shape[0] ?? 0;
    const per = this.meta.chunks[0] ?? n;
    const all = new Uint8Array(n * this.itemSize);
    for (let c = 0; c * per < n; c++) {
      const raw = await this.store.get(`/${this.path}/${c}`);
      const rows = Math.min(per, n - c * per);
      if (raw === undefined) continue; // a missing chunk is the fill value; zeros are ours
      const bytes = await this.decode(raw);
      if (bytes.length < rows * this.itemSize) {
        throw new AnndataError(`${this.location}: chunk ${c} of ${this.path} is too short.`, {
          tag: "MalformedInput",
          object: objectIn(this.location, this.path),
        });
      }
      all.set(bytes.subarray(0, rows * this.itemSize), c * per * this.itemSize);
    }
    const view = new DataView(all.buffer);
    const out = new Map<string, string[] | NumericValues>();
    const dec = new TextDecoder();
    for (const f of this.fields) {
      const at = (i: number) => i * this.itemSize + f.offset;
      if (f.kind === "string") {
        out.set(
          f.name,
          Array.from({ length: n }, (_, i) => {
            const b = all.subarray(at(i), at(i) + f.itemSize);
            const end = b.indexOf(0);
            return dec.decode(end < 0 ? b : b.subarray(0, end));
          }),
        );
        continue;
      }
      out.set(f.name, readField(view, n, f, at));
    }
    return out;
  }
}

function readField(view: DataView, n: number, f: Field, at: (i: number) => number): NumericValues {
  const { kind, itemSize } = f;
  if (kind === "float" && itemSize === 4)
    return Float32Array.from({ length: n }, (_, i) => view.getFloat32(at(i), true));
  if (kind === "float" && itemSize === 8)
    return Float64Array.from({ length: n }, (_, i) => view.getFloat64(at(i), true));
  if (kind === "bool" || (kind === "uint" && itemSize === 1))
    return Uint8Array.from({ length: n }, (_, i) => view.getUint8(at(i)));
  if (kind === "int" && itemSize === 1) return Int8Array.from({ length: n }, (_, i) => view.getInt8(at(i)));
  if (kind === "int" && itemSize === 2)
    return Int16Array.from({ length: n }, (_, i) => view.getInt16(at(i), true));
  if (kind === "int" && itemSize === 4)
    return Int32Array.from({ length: n }, (_, i) => view.getInt32(at(i), true));
  if ((kind === "int" || kind === "datetime") && itemSize === 8)
    return BigInt64Array.from({ length: n }, (_, i) => view.getBigInt64(at(i), true));
  if (kind === "uint" && itemSize === 2)
    return Uint16Array.from({ length: n }, (_, i) => view.getUint16(at(i), true));
  if (kind === "uint" && itemSize === 4)
    return Uint32Array.from({ length: n }, (_, i) => view.getUint32(at(i), true));
  return Float64Array.from({ length: n }, (_, i) => Number(view.getBigUint64(at(i), true)));
}
