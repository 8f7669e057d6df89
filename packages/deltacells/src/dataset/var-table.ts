/**
 * `var.parquet`: the gene table in output column order, written so that pandas (through pyarrow)
 * reads it back as the DataFrame it was: the index restored from the `pandas` key-value metadata,
 * categorical columns as categoricals (from an `ARROW:schema` with dictionary types), integer
 * widths kept through parquet logical types.
 */
import {
  Bool,
  type DataType,
  Dictionary,
  Field,
  Float32,
  Float64,
  Int8,
  Int16,
  Int32,
  Int64,
  Schema,
  Table,
  tableToIPC,
  Uint8,
  Uint16,
  Uint32,
  Uint64,
  Utf8,
} from "apache-arrow";
import { type ParquetColumn, writeParquetFile } from "./parquet-file.js";
import type { ColumnTable, TableColumn } from "./source.js";
import { CONVERTER_NAME, CONVERTER_VERSION } from "./version.js";

/** A synchronous zstd compressor (level chosen by the caller); hyparquet-writer has none of its own. */
export type Compress = (input: Uint8Array) => Uint8Array;

function stringElement(name: string, nullable: boolean): ParquetColumn["element"] {
  return {
    name,
    type: "BYTE_ARRAY",
    converted_type: "UTF8",
    logical_type: { type: "STRING" },
    repetition_type: nullable ? "OPTIONAL" : "REQUIRED",
  };
}

interface NumericSpec {
  physical: "INT32" | "INT64" | "FLOAT" | "DOUBLE";
  numpy: string;
  arrow: DataType;
  converted?: ParquetColumn["element"]["converted_type"];
}

function numericSpec(values: Extract<TableColumn, { kind: "numeric" }>["values"]): NumericSpec {
  const int = (
    bitWidth: number,
    isSigned: boolean,
    arrow: DataType,
    physical: "INT32" | "INT64" = "INT32",
  ): NumericSpec => ({
    physical,
    numpy: `${isSigned ? "int" : "uint"}${bitWidth}`,
    arrow,
    converted: `${isSigned ? "INT" : "UINT"}_${bitWidth}` as NumericSpec["converted"],
  });
  if (values instanceof Int8Array) return int(8, true, new Int8());
  if (values instanceof Uint8Array) return int(8, false, new Uint8());
  if (values instanceof Int16Array) return int(16, true, new Int16());
  if (values instanceof Uint16Array) return int(16, false, new Uint16());
  if (values instanceof Int32Array) return int(32, true, new Int32());
  if (values instanceof Uint32Array) return int(32, false, new Uint32());
  if (values instanceof BigInt64Array) return int(64, true, new Int64(), "INT64");
  if (values instanceof BigUint64Array) return int(64, false, new Uint64(), "INT64");
  if (values instanceof Float32Array) return { physical: "FLOAT", numpy: "float32", arrow: new Float32() };
  return { physical: "DOUBLE", numpy: "float64", arrow: new Float64() };
}

function dictIndexType(n: number): { arrow: DataType; numpy: string } {
  if (n <= 127) return { arrow: new Int8(), numpy: "int8" };
  if (n <= 32767) return { arrow: new Int16(), numpy: "int16" };
  return { arrow: new Int32(), numpy: "int32" };
}

/** Reorder a column's rows: row `j` of the result is row `order[j]` of the input. */
function permute<T extends { length: number; [i: number]: unknown }>(
  src: T,
  order: Int32Array,
  make: (n: number) => T,
): T {
  const out = make(order.length);
  for (let j = 0; j < order.length; j++) out[j] = src[order[j]!];
  return out;
}

/** The serialized Arrow schema message, as pyarrow stores it under `ARROW:schema` (base64). */
function arrowSchemaBase64(fields: Field[], metadata: Map<string, string>): string {
  const ipc = tableToIPC(new Table(new Schema(fields, metadata)), "stream");
  const len = new DataView(ipc.buffer, ipc.byteOffset, ipc.byteLength).getInt32(4, true);
  const msg = ipc.subarray(0, 8 + len);
  let bin = "";
  for (let i = 0; i < msg.length; i++) bin += String.fromCharCode(msg[i]!);
  return btoa(bin);
}

/**
 * Encode the gene table as parquet with rows reordered by `order` (output row `j` is source row
 * `order[j]`). The index becomes a column named after it (or `__index_level_0__`), as pyarrow does.
 */
export function encodeVarTable(table: ColumnTable, order: Int32Array, compress: Compress): Uint8Array {
  const indexField = table.indexName ?? "__index_level_0__";
  const used = new Set(table.columns.map((c) => c.name));
  if (used.has(indexField)) used.delete(indexField); // a column named like the index: the index wins below
  const columns: ParquetColumn[] = [];
  const arrowFields: Field[] = [];
  const pandasColumns: Record<string, unknown>[] = [];
  const vocabularies: Record<string, string[]> = {};
  let dictionaryIds = 0;

  const addString = (name: string, values: (string | null)[], pandasName: string | null) => {
    const nullable = values.some((v) => v === null);
    columns.push({ element: stringElement(name, nullable), data: values });
    arrowFields.push(new Field(name, new Utf8(), nullable));
    pandasColumns.push({
      name: pandasName,
      field_name: name,
      pandas_type: "unicode",
      numpy_type: "object",
      metadata: null,
    });
  };

  for (const col of table.columns) {
    if (col.name === indexField) continue;
    switch (col.kind) {
      case "string":
        addString(
          col.name,
          permute(col.values, order, (n) => new Array<string | null>(n)),
          col.name,
        );
        break;
      case "category": {
        const codes = permute(col.codes, order, (n) => new Int32Array(n));
        const n = col.categories.length;
        for (let j = 0; j < codes.length; j++) if (!(codes[j]! < n)) codes[j] = -1; // out of vocabulary: missing
        const nullable = codes.some((c) => c < 0);
        // The vocabulary itself is the column's parquet dictionary: its order and unused entries reach pandas.
        columns.push({ element: stringElement(col.name, nullable), codes, dictionary: col.categories });
        vocabularies[col.name] = col.categories;
        const idx = dictIndexType(n);
        // Every dictionary field of an Arrow schema needs an id of its own.
        const id = dictionaryIds++;
        arrowFields.push(
          new Field(col.name, new Dictionary(new Utf8(), idx.arrow as Int32, id, col.ordered), nullable),
        );
        pandasColumns.push({
          name: col.name,
          field_name: col.name,
          pandas_type: "categorical",
          numpy_type: idx.numpy,
          metadata: { num_categories: col.categories.length, ordered: col.ordered },
        });
        break;
      }
      case "bool": {
        const nulls = col.nulls;
        const data = Array.from(order, (src) => (nulls?.[src] ? null : col.values[src] !== 0));
        const nullable = nulls !== undefined && data.some((v) => v === null);
        columns.push({
          element: { name: col.name, type: "BOOLEAN", repetition_type: nullable ? "OPTIONAL" : "REQUIRED" },
          data,
        });
        arrowFields.push(new Field(col.name, new Bool(), nullable));
        pandasColumns.push({
          name: col.name,
          field_name: col.name,
          // pandas' nullable "boolean" extension dtype, as pandas itself records it
          pandas_type: "bool",
          numpy_type: nullable ? "boolean" : "bool",
          metadata: null,
        });
        break;
      }
      case "numeric": {
        const spec = numericSpec(col.values);
        const nulls = col.nulls;
        const src = col.values as ArrayLike<number | bigint>;
        const nullable = nulls !== undefined && order.some((s) => nulls[s] !== 0);
        let data: unknown;
        if (nullable) data = Array.from(order, (s) => (nulls![s] ? null : src[s]!));
        else if (spec.physical === "INT64")
          data = BigInt64Array.from(order, (s) => BigInt.asIntN(64, BigInt(src[s]!)));
        else if (spec.physical === "INT32") data = Int32Array.from(order, (s) => Number(src[s]!) | 0);
        else if (spec.physical === "FLOAT") data = Float32Array.from(order, (s) => Number(src[s]!));
        else data = Float64Array.from(order, (s) => Number(src[s]!));
        const el: ParquetColumn["element"] = {
          name: col.name,
          type: spec.physical,
          repetition_type: nullable ? "OPTIONAL" : "REQUIRED",
        };
        // Integer widths go in the legacy converted type: hyparquet-writer 0.17 serializes the
        // INTEGER logical type's bit width with the wrong thrift type, which pyarrow rejects.
        if (spec.converted) el.converted_type = spec.converted;
        columns.push({ element: el, data: data as ArrayLike<unknown> });
        arrowFields.push(new Field(col.name, spec.arrow, nullable));
        // Nullable integers become pandas' extension dtypes (Int32, UInt8, ...) as pandas records them.
        const isInt = spec.physical === "INT32" || spec.physical === "INT64";
        const numpyType =
          nullable && isInt
            ? spec.numpy.replace(/^u?int/, (m) => (m === "uint" ? "UInt" : "Int"))
            : spec.numpy;
        pandasColumns.push({
          name: col.name,
          field_name: col.name,
          pandas_type: spec.numpy,
          numpy_type: numpyType,
          metadata: null,
        });
        break;
      }
    }
  }
  addString(
    indexField,
    permute(table.index, order, (n) => new Array<string>(n)),
    table.indexName,
  );

  const pandas = {
    index_columns: [indexField],
    column_indexes: [
      {
        name: null,
        field_name: null,
        pandas_type: "unicode",
        numpy_type: "object",
        metadata: { encoding: "UTF-8" },
      },
    ],
    columns: pandasColumns,
    creator: { library: CONVERTER_NAME, version: CONVERTER_VERSION },
    pandas_version: "2.2.3",
  };
  const pandasJson = JSON.stringify(pandas);
  return writeParquetFile({
    columns,
    numRows: order.length,
    codec: "ZSTD",
    compressors: { ZSTD: compress },
    kvMetadata: [
      { key: "pandas", value: pandasJson },
      // The vocabularies again, for our reader (hyparquet hands out decoded values, not dictionaries).
      { key: "deltacells:categories", value: JSON.stringify(vocabularies) },
      // pyarrow takes the schema metadata from ARROW:schema when present, so pandas goes in both.
      { key: "ARROW:schema", value: arrowSchemaBase64(arrowFields, new Map([["pandas", pandasJson]])) },
    ],
    createdBy: `${CONVERTER_NAME} ${CONVERTER_VERSION}`,
  });
}
