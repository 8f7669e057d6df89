/**
 * The obs sidecar's names and `obs/schema.json` (spec: "Obs (optional per-cell metadata)"): the
 * store keys, the four column kinds and the Arrow types each may have, and a parser that refuses
 * a schema a reader could misread.
 */
import { DeltacellsError } from "../errors.js";
import { firstBytesOfText } from "../first-bytes.js";

export const OBS_SCHEMA_KEY = "obs/schema.json";
export const OBS_SCHEMA_FORMAT = "deltacells-obs";
export const OBS_SCHEMA_VERSION = 1;
/** Tiles (row groups) per shard unless the writer is told otherwise. */
export const DEFAULT_OBS_TILES_PER_FILE = 1000;
/** Categorical columns with a larger vocabulary are stored as strings. */
export const DEFAULT_MAX_CATEGORIES = 20_000;

/** The store key of obs shard `s` (`obs/obs_0003.parquet`). */
export function obsShardKey(s: number): string {
  return `obs/obs_${String(s).padStart(4, "0")}.parquet`;
}

export type ObsKind = "category" | "numeric" | "bool" | "string";

/** Arrow type names as pyarrow prints them (`float` is float32). */
export type ObsArrowType =
  | "int8"
  | "int16"
  | "int32"
  | "int64"
  | "uint8"
  | "uint16"
  | "uint32"
  | "uint64"
  | "float"
  | "double"
  | "bool"
  | "string";

/** One column of `obs/schema.json`. */
export interface ObsColumnSchema {
  name: string;
  kind: ObsKind;
  arrow_type: ObsArrowType;
  /** The global vocabulary of a `category` column (code i means categories[i]); null otherwise. */
  categories: string[] | null;
}

export interface ObsSchema {
  format: typeof OBS_SCHEMA_FORMAT;
  version: typeof OBS_SCHEMA_VERSION;
  columns: ObsColumnSchema[];
}

/** The numeric Arrow types, which `numeric` columns (and category codes) have. */
export type ObsNumericType = Exclude<ObsArrowType, "bool" | "string">;

type NumericArrayCtor = new (n: number) => ArrayLike<number | bigint> & { [i: number]: number | bigint };

/** The typed array holding each numeric Arrow type (int64 and uint64: BigInts). */
const TYPED_ARRAY = {
  int8: Int8Array,
  int16: Int16Array,
  int32: Int32Array,
  int64: BigInt64Array,
  uint8: Uint8Array,
  uint16: Uint16Array,
  uint32: Uint32Array,
  uint64: BigUint64Array,
  float: Float32Array,
  double: Float64Array,
} as unknown as Record<ObsNumericType, NumericArrayCtor>;

function isNumericType(t: string): t is ObsNumericType {
  return Object.hasOwn(TYPED_ARRAY, t);
}

/**
 * The values of a numeric column of Arrow type `type` in that type's typed array: null and
 * undefined become 0 (the column's null mask says which), int64/uint64 become BigInts. A typed
 * array of that type already (it holds no nulls) is returned as it is.
 */
export function numericValues(type: ObsNumericType, values: ArrayLike<unknown>): ArrayLike<number | bigint> {
  const Ctor = TYPED_ARRAY[type];
  if (values instanceof (Ctor as unknown as typeof Int8Array)) return values as ArrayLike<number>;
  const out = new Ctor(values.length);
  const big = type === "int64" || type === "uint64";
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null || v === undefined) continue;
    out[i] = big ? BigInt(v as number | bigint) : Number(v);
  }
  return out;
}

/** A zeroed typed array of `n` values of the numeric Arrow type `type` (int64/uint64: BigInts). */
export function newNumericArray(
  type: ObsNumericType,
  n: number,
): ArrayLike<number | bigint> & { [i: number]: number | bigint } {
  return new TYPED_ARRAY[type](n);
}

/** The code type of a vocabulary of `n` categories (code -1 must fit too). */
export function categoryCodeType(n: number): "int8" | "int16" | "int32" {
  return n <= 127 ? "int8" : n <= 32767 ? "int16" : "int32";
}

/** Whether `arrowType` is allowed for `kind` (and, for categories, the vocabulary size). */
function typeFits(c: ObsColumnSchema): boolean {
  switch (c.kind) {
    case "category":
      return Array.isArray(c.categories) && c.arrow_type === categoryCodeType(c.categories.length);
    case "numeric":
      return isNumericType(c.arrow_type) && c.categories === null;
    case "bool":
      return c.arrow_type === "bool" && c.categories === null;
    case "string":
      return c.arrow_type === "string" && c.categories === null;
    default:
      return false;
  }
}

/** Parse and check `obs/schema.json`; `object` names it in errors. */
export function parseObsSchema(text: string, object: string): ObsSchema {
  const bad = (message: string, found?: unknown) =>
    new DeltacellsError(`${object}: ${message}`, { tag: "FormatError", object, found });
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new DeltacellsError(
      `${object} is not valid JSON (it starts with ${firstBytesOfText(text)}): rewrite the obs sidecar (convert again)`,
      { tag: "FormatError", object, found: firstBytesOfText(text), cause },
    );
  }
  const s = json as Partial<ObsSchema> | null;
  if (s === null || typeof s !== "object" || s.format !== OBS_SCHEMA_FORMAT)
    throw bad(`expected an object with format "${OBS_SCHEMA_FORMAT}"`, (s as { format?: unknown })?.format);
  if (s.version !== OBS_SCHEMA_VERSION) {
    throw new DeltacellsError(
      `${object} is obs schema version ${JSON.stringify(s.version)}; this reader understands version ${OBS_SCHEMA_VERSION} only (upgrade deltacells)`,
      { tag: "UnsupportedVersion", object, field: "version", expected: OBS_SCHEMA_VERSION, found: s.version },
    );
  }
  if (!Array.isArray(s.columns)) throw bad("columns must be a list", s.columns);
  const seen = new Set<string>();
  for (const c of s.columns) {
    if (c === null || typeof c !== "object" || typeof c.name !== "string")
      throw bad("every column needs a string name", c);
    if (seen.has(c.name)) throw bad(`column ${JSON.stringify(c.name)} appears twice`);
    seen.add(c.name);
    const cats = c.categories;
    if (cats !== null && !(Array.isArray(cats) && cats.every((x) => typeof x === "string")))
      throw bad(`column ${JSON.stringify(c.name)}: categories must be null or a list of strings`, cats);
    if (!typeFits(c)) {
      throw bad(
        `column ${JSON.stringify(c.name)} has kind ${JSON.stringify(c.kind)} with arrow_type ${JSON.stringify(c.arrow_type)}` +
          (Array.isArray(cats) ? ` and ${cats.length} categories` : "") +
          ", which the format does not allow",
        c,
      );
    }
  }
  return s as ObsSchema;
}
