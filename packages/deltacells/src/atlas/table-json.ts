/**
 * An exact JSON form of a gene table and of float64 arrays, for the scan records that `plan
 * --scan` leaves under the output and `plan --merge` reads: numeric columns travel as the bytes of
 * their typed array (base64, little-endian, NaN and -0 included), so a merge that reads the
 * records builds the same var table, bit for bit, as one that scanned the inputs itself.
 * Browser-safe.
 */
import type { ColumnTable, NumericArray, TableColumn } from "../dataset/source.js";
import { DeltacellsError } from "../errors.js";

/** Base64 of bytes (btoa over a binary string, in slices so no argument list grows too long). */
export function toBase64(bytes: Uint8Array): string {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000)
    bin += String.fromCharCode(...bytes.subarray(i, Math.min(bytes.length, i + 0x8000)));
  return btoa(bin);
}

/** The bytes of a base64 string. */
export function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

const NUMERIC = {
  int8: Int8Array,
  uint8: Uint8Array,
  int16: Int16Array,
  uint16: Uint16Array,
  int32: Int32Array,
  uint32: Uint32Array,
  int64: BigInt64Array,
  uint64: BigUint64Array,
  float32: Float32Array,
  float64: Float64Array,
} as const;

type NumericName = keyof typeof NUMERIC;

/** The name of a numeric column's typed array. */
export function numericName(values: NumericArray): NumericName {
  for (const [name, Ctor] of Object.entries(NUMERIC)) if (values instanceof Ctor) return name as NumericName;
  throw new TypeError(`not a numeric column's typed array: ${Object.prototype.toString.call(values)}`);
}

function typedBytes(values: ArrayBufferView): Uint8Array {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength).slice();
}

function typedFrom(name: NumericName, b64: string): NumericArray {
  const bytes = fromBase64(b64);
  const Ctor = NUMERIC[name];
  return new Ctor(bytes.buffer as ArrayBuffer, 0, bytes.length / Ctor.BYTES_PER_ELEMENT) as NumericArray;
}

/** A float64 array as base64 of its bytes. */
export function float64ToJson(values: Float64Array): string {
  return toBase64(typedBytes(values));
}

/** The float64 array of {@link float64ToJson}, checked to hold `length` values. */
export function float64FromJson(text: unknown, length: number, object: string): Float64Array {
  if (typeof text !== "string") throw malformed(object, "a base64 float64 array", text);
  const bytes = fromBase64(text);
  if (bytes.length !== length * 8) throw malformed(object, `${length} float64 values`, bytes.length / 8);
  return new Float64Array(bytes.buffer, 0, length);
}

function malformed(object: string, expected: string, found: unknown): DeltacellsError {
  return new DeltacellsError(
    `${object}: expected ${expected}, found ${JSON.stringify(found)?.slice(0, 80)}; the record is damaged: run its step again`,
    { tag: "FormatError", object, expected, found },
  );
}

/** The JSON form of a table column. */
type ColumnJson =
  | { name: string; kind: "numeric"; type: NumericName; values: string; nulls?: string; nullable?: boolean }
  | { name: string; kind: "bool"; values: string; nulls?: string; nullable?: boolean }
  | { name: string; kind: "string"; values: (string | null)[]; nullable?: boolean }
  | { name: string; kind: "category"; codes: string; categories: string[]; ordered: boolean };

/** A table as JSON, exactly (see the module comment). */
export function tableToJson(table: ColumnTable): unknown {
  const columns = table.columns.map((c): ColumnJson => {
    const nullable = "nullable" in c && c.nullable ? { nullable: true } : {};
    switch (c.kind) {
      case "numeric":
        return {
          name: c.name,
          kind: "numeric",
          type: numericName(c.values),
          values: toBase64(typedBytes(c.values)),
          ...(c.nulls ? { nulls: toBase64(c.nulls) } : {}),
          ...nullable,
        };
      case "bool":
        return {
          name: c.name,
          kind: "bool",
          values: toBase64(c.values),
          ...(c.nulls ? { nulls: toBase64(c.nulls) } : {}),
          ...nullable,
        };
      case "string":
        return { name: c.name, kind: "string", values: c.values, ...nullable };
      default:
        return {
          name: c.name,
          kind: "category",
          codes: toBase64(typedBytes(c.codes)),
          categories: c.categories,
          ordered: c.ordered,
        };
    }
  });
  return { index_name: table.indexName, index: table.index, columns };
}

/** The table of {@link tableToJson}; `object` names the record in errors. */
export function tableFromJson(json: unknown, object: string): ColumnTable {
  const t = json as { index_name?: unknown; index?: unknown; columns?: unknown } | null;
  if (t === null || typeof t !== "object" || !Array.isArray(t.index) || !Array.isArray(t.columns))
    throw malformed(object, "a table with an index and columns", typeof t);
  if (t.index_name !== null && typeof t.index_name !== "string")
    throw malformed(object, "a string or null index name", t.index_name);
  const n = t.index.length;
  const columns = (t.columns as ColumnJson[]).map((c): TableColumn => {
    const nullable = c.kind !== "category" && c.nullable ? { nullable: true } : {};
    let col: TableColumn;
    switch (c.kind) {
      case "numeric": {
        if (!Object.hasOwn(NUMERIC, c.type)) throw malformed(object, "a numeric type", c.type);
        col = {
          name: c.name,
          kind: "numeric",
          values: typedFrom(c.type, c.values),
          ...(c.nulls !== undefined ? { nulls: fromBase64(c.nulls) } : {}),
          ...nullable,
        };
        break;
      }
      case "bool":
        col = {
          name: c.name,
          kind: "bool",
          values: fromBase64(c.values),
          ...(c.nulls !== undefined ? { nulls: fromBase64(c.nulls) } : {}),
          ...nullable,
        };
        break;
      case "string":
        col = { name: c.name, kind: "string", values: c.values, ...nullable };
        break;
      case "category":
        col = {
          name: c.name,
          kind: "category",
          codes: typedFrom("int32", c.codes) as Int32Array,
          categories: c.categories,
          ordered: c.ordered,
        };
        break;
      default:
        throw malformed(object, "a column kind", (c as { kind?: unknown }).kind);
    }
    const length = col.kind === "category" ? col.codes.length : col.values.length;
    if (length !== n) throw malformed(object, `column ${JSON.stringify(c.name)} of ${n} rows`, length);
    return col;
  });
  return { indexName: t.index_name, index: t.index as string[], columns };
}
