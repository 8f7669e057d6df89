/**
 * Obs columns as Arrow: one `Data` per tile built from what hyparquet decodes, and the cache's
 * file form, an uncompressed Arrow IPC file holding one column with one record batch per tile.
 * Browser-safe.
 */
import {
  Bool,
  type Data,
  type DataType,
  Field,
  Float32,
  Float64,
  Int8,
  Int16,
  Int32,
  Int64,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  tableFromIPC,
  tableToIPC,
  Uint8,
  Uint16,
  Uint32,
  Uint64,
  Utf8,
  vectorFromArray,
} from "apache-arrow";

export { makeVector } from "apache-arrow";

import { numericValues, type ObsArrowType, type ObsColumnSchema, type ObsNumericType } from "./schema.js";

/** The Arrow data type of a schema column. */
export function arrowType(t: ObsArrowType): DataType {
  switch (t) {
    case "int8":
      return new Int8();
    case "int16":
      return new Int16();
    case "int32":
      return new Int32();
    case "int64":
      return new Int64();
    case "uint8":
      return new Uint8();
    case "uint16":
      return new Uint16();
    case "uint32":
      return new Uint32();
    case "uint64":
      return new Uint64();
    case "float":
      return new Float32();
    case "double":
      return new Float64();
    case "bool":
      return new Bool();
    case "string":
      return new Utf8();
  }
}

/** A validity bitmap (1 = valid) for `values`, or undefined when none is null. */
function validity(values: ArrayLike<unknown>): { bitmap: Uint8Array | undefined; nulls: number } {
  let nulls = 0;
  for (let i = 0; i < values.length; i++) if (values[i] === null || values[i] === undefined) nulls++;
  if (nulls === 0) return { bitmap: undefined, nulls };
  const bitmap = new Uint8Array((values.length + 7) >> 3);
  for (let i = 0; i < values.length; i++) {
    if (values[i] !== null && values[i] !== undefined) bitmap[i >> 3]! |= 1 << (i & 7);
  }
  return { bitmap, nulls };
}

/** One tile of a column as Arrow data, from the values hyparquet decoded (nulls as null). */
export function columnData(col: ObsColumnSchema, values: ArrayLike<unknown>): Data {
  const length = values.length;
  const type = arrowType(col.arrow_type);
  if (col.arrow_type === "string") {
    return vectorFromArray(Array.from(values as ArrayLike<string | null>), new Utf8()).data[0]!;
  }
  if (col.kind === "category") {
    // Codes are never null in what this package writes (-1 is missing); a writer whose codes are
    // nullable (pyarrow's default) may write a missing value as null, which means the same.
    const codes = numericValues(col.arrow_type as ObsNumericType, values) as
      | Int8Array
      | Int16Array
      | Int32Array;
    for (let i = 0; i < length; i++) if (values[i] === null || values[i] === undefined) codes[i] = -1;
    // biome-ignore lint/suspicious/noExplicitAny: makeData's overloads are per type; the type is chosen at run time
    return makeData({ type: type as any, length, nullCount: 0, data: codes as any });
  }
  const { bitmap, nulls } = validity(values);
  if (col.arrow_type === "bool") {
    const bits = new Uint8Array((length + 7) >> 3);
    for (let i = 0; i < length; i++) if (values[i] === true) bits[i >> 3]! |= 1 << (i & 7);
    return makeData({ type: type as Bool, length, nullCount: nulls, nullBitmap: bitmap, data: bits });
  }
  const data = numericValues(col.arrow_type as ObsNumericType, values);
  // biome-ignore lint/suspicious/noExplicitAny: makeData's overloads are per type; the type is chosen at run time
  return makeData({ type: type as any, length, nullCount: nulls, nullBitmap: bitmap, data: data as any });
}

/** A one-column table, one record batch per tile. */
export function columnTable(col: ObsColumnSchema, tiles: Data[]): Table {
  const field = new Field(col.name, arrowType(col.arrow_type), true);
  const schema = new Schema([field]);
  const batches = tiles.map(
    (d) =>
      new RecordBatch(
        schema,
        makeData({ type: new Struct([field]), length: d.length, nullCount: 0, children: [d] }),
      ),
  );
  return new Table(schema, batches);
}

/** The cache file of a column: an uncompressed Arrow IPC file. */
export function encodeColumnFile(table: Table): Uint8Array {
  return tableToIPC(table, "file");
}

/**
 * Read a cache file (zero-copy: the table's buffers are views into `bytes`) and check it against
 * the schema and the tiles; undefined when it disagrees in any way, so the caller fetches again.
 */
export function decodeColumnFile(
  bytes: Uint8Array,
  col: ObsColumnSchema,
  tileCells: number[],
): Table | undefined {
  let table: Table;
  try {
    table = tableFromIPC(bytes);
  } catch {
    return undefined;
  }
  const fields = table.schema.fields;
  if (fields.length !== 1 || fields[0]!.name !== col.name) return undefined;
  if (String(fields[0]!.type) !== String(arrowType(col.arrow_type))) return undefined;
  if (table.batches.length !== tileCells.length) return undefined;
  for (let t = 0; t < tileCells.length; t++) if (table.batches[t]!.numRows !== tileCells[t]) return undefined;
  return table;
}
