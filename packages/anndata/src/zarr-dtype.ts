/**
 * zarr arrays zarrita cannot open, read off their metadata: numpy `datetime64` arrays (v2 dtype
 * `<M8[ns]`, v3 data type `numpy.datetime64`), which are int64 counts of a unit and are opened
 * as such through metadata rewritten to int64, and any other data type zarrita does not know
 * (timedelta64, complex ...), which becomes a node that names its data type, so a reader can
 * refuse it by name instead of finding nothing there. Browser-safe.
 */

import { type DatetimeUnit, parseDatetimeUnit, unitText } from "./datetime-text.js";
import type { ZarrTreeStore } from "./zarr-tree.js";

/** An array's own metadata document, as stored. */
export interface ZarrArrayMeta {
  version: 2 | 3;
  /** The store key of the document (`/obs/when/.zarray`, `/obs/when/zarr.json`). */
  key: `/${string}`;
  json: Record<string, unknown>;
  shape: number[];
  /** The data type as numpy names it: `datetime64[ns]`, `timedelta64[s]`, `complex128`. */
  dtype: string;
  /** The unit of a datetime64 array. */
  datetime?: DatetimeUnit;
}

const NUMPY_KINDS: Record<string, string> = {
  m: "timedelta64",
  c: "complex",
  f: "float",
  i: "int",
  u: "uint",
};

/** A v2 dtype string in numpy's words: `<M8[ns]` is datetime64[ns], `<c16` complex128. */
function v2Name(dtype: string): { name: string; unit?: string } {
  const m = /^[<>|=]?([a-zA-Z])(\d*)(?:\[([^\]]+)\])?$/.exec(dtype);
  if (!m) return { name: dtype };
  const [, kind, size, unit] = m;
  if (kind === "M") return { name: `datetime64${unit ? `[${unit}]` : ""}`, ...(unit ? { unit } : {}) };
  if (kind === "m") return { name: `timedelta64${unit ? `[${unit}]` : ""}` };
  const base = NUMPY_KINDS[kind!];
  return { name: base && size ? `${base}${Number(size) * 8}` : dtype };
}

/** A v3 data type in numpy's words: `numpy.datetime64` with unit ns is datetime64[ns]. */
function v3Name(dataType: unknown): { name: string; unit?: string } {
  if (typeof dataType === "string") return { name: dataType };
  const t = dataType as { name?: unknown; configuration?: { unit?: unknown; scale_factor?: unknown } } | null;
  const name = typeof t?.name === "string" ? t.name : JSON.stringify(dataType);
  const match = /^numpy\.(datetime64|timedelta64)$/.exec(name);
  const unit = t?.configuration?.unit;
  if (!match || typeof unit !== "string") return { name };
  const scale = t?.configuration?.scale_factor;
  const text = `${typeof scale === "number" && scale !== 1 ? scale : ""}${unit}`;
  return { name: `${match[1]}[${text}]`, ...(match[1] === "datetime64" ? { unit: text } : {}) };
}

async function readJson(
  store: ZarrTreeStore,
  key: `/${string}`,
): Promise<Record<string, unknown> | undefined> {
  const bytes = await store.get(key);
  if (bytes === undefined) return undefined;
  try {
    const json = JSON.parse(new TextDecoder().decode(bytes)) as unknown;
    return json !== null && typeof json === "object" ? (json as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The metadata of the array at `path`, or undefined when no array's metadata is there. */
export async function readArrayMeta(store: ZarrTreeStore, path: string): Promise<ZarrArrayMeta | undefined> {
  const prefix = path === "" ? "" : `${path}/`;
  const v2Key = `/${prefix}.zarray` as const;
  const v3Key = `/${prefix}zarr.json` as const;
  const v2 = await readJson(store, v2Key);
  const v3 = v2 === undefined ? await readJson(store, v3Key) : undefined;
  const json = v2 ?? v3;
  if (json === undefined || (v3 !== undefined && json.node_type !== "array")) return undefined;
  const { name, unit } = v2 ? v2Name(String(json.dtype)) : v3Name(json.data_type);
  const datetime = unit === undefined ? undefined : parseDatetimeUnit(unit);
  return {
    version: v2 ? 2 : 3,
    key: v2 ? v2Key : v3Key,
    json,
    shape: Array.isArray(json.shape) ? json.shape.map(Number) : [],
    // numpy's spelling of the unit: `10s`, `us`
    dtype: datetime ? `datetime64[${unitText(datetime)}]` : name,
    ...(datetime ? { datetime } : {}),
  };
}

/** The int64 twin of a datetime64 array's metadata: the same chunks of the same counts. */
function asInt64(meta: ZarrArrayMeta): Uint8Array {
  const json = { ...meta.json };
  if (meta.version === 2) json.dtype = String(json.dtype).startsWith(">") ? ">i8" : "<i8";
  else json.data_type = "int64";
  // A missing chunk reads as the fill value: NaT (-2^63, exact as a double) unless it is a count.
  if (typeof json.fill_value !== "number" || !Number.isInteger(json.fill_value)) json.fill_value = -(2 ** 63);
  return new TextEncoder().encode(JSON.stringify(json));
}

/** `store` with the metadata of one datetime64 array read as int64 (everything else as stored). */
export function int64View(store: ZarrTreeStore, meta: ZarrArrayMeta): ZarrTreeStore {
  const bytes = asInt64(meta);
  return {
    get: (key) => (key === meta.key ? Promise.resolve(bytes) : store.get(key)),
    ...(store.children ? { children: (p: string) => store.children!(p) } : {}),
  };
}
