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

const NUMERIC_TYPES: ReadonlySet<string> = new Set([
  "int8",
  "int16",
  "int32",
  "int64",
  "uint8",
  "uint16",
  "uint32",
  "uint64",
  "float",
  "double",
]);

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
      return NUMERIC_TYPES.has(c.arrow_type) && c.categories === null;
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
    new DeltacellsError("FormatError", `${object}: ${message}`, { object, found });
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new DeltacellsError(
      "FormatError",
      `${object} is not valid JSON (it starts with ${firstBytesOfText(text)}): rewrite the obs sidecar (convert again)`,
      { object, found: firstBytesOfText(text), cause },
    );
  }
  const s = json as Partial<ObsSchema> | null;
  if (s === null || typeof s !== "object" || s.format !== OBS_SCHEMA_FORMAT)
    throw bad(`expected an object with format "${OBS_SCHEMA_FORMAT}"`, (s as { format?: unknown })?.format);
  if (s.version !== OBS_SCHEMA_VERSION) {
    throw new DeltacellsError(
      "UnsupportedVersion",
      `${object} is obs schema version ${JSON.stringify(s.version)}; this reader understands version ${OBS_SCHEMA_VERSION} only (upgrade deltacells)`,
      { object, field: "version", expected: OBS_SCHEMA_VERSION, found: s.version },
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
