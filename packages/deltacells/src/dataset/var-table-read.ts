/**
 * Reading `var.parquet` back as a table (browser-safe: hyparquet with pure-JS decompressors).
 * The index column and the categorical columns are recognised from the `pandas` metadata; the
 * categories' order and unused categories from the writer's own `deltacells:categories` entry
 * (pandas itself sees categories in order of first appearance).
 */
import type { parquetMetadata } from "hyparquet";
import { DeltacellsError } from "../errors.js";
import { loadDecompressors, loadParquet } from "../parquet-load.js";
import type { ColumnTable, TableColumn } from "./source.js";

interface PandasColumn {
  name: string | null;
  field_name: string;
  pandas_type: string;
  numpy_type: string;
  metadata: { ordered?: boolean } | null;
}

type Column = ArrayLike<unknown> & Iterable<unknown>;

function concat(parts: { start: number; data: Column }[], n: number): unknown[] {
  const out = new Array<unknown>(n);
  for (const { start, data } of parts) {
    let i = start;
    for (const v of data) out[i++] = v;
  }
  return out;
}

function numericColumn(name: string, values: unknown[], numpy: string): TableColumn {
  const nulls = values.some((v) => v === null || v === undefined)
    ? Uint8Array.from(values, (v) => (v === null || v === undefined ? 1 : 0))
    : undefined;
  const num = (v: unknown) => (v === null || v === undefined ? 0 : Number(v));
  const big = (v: unknown) => (v === null || v === undefined ? 0n : BigInt(v as number | bigint));
  let typed: Extract<TableColumn, { kind: "numeric" }>["values"];
  switch (numpy.toLowerCase()) {
    case "int8":
      typed = Int8Array.from(values, num);
      break;
    case "uint8":
      typed = Uint8Array.from(values, num);
      break;
    case "int16":
      typed = Int16Array.from(values, num);
      break;
    case "uint16":
      typed = Uint16Array.from(values, num);
      break;
    case "int32":
      typed = Int32Array.from(values, num);
      break;
    case "uint32":
      typed = Uint32Array.from(values, num);
      break;
    case "int64":
      typed = BigInt64Array.from(values, big);
      break;
    case "uint64":
      typed = BigUint64Array.from(values, big);
      break;
    case "float32":
      typed = Float32Array.from(values, num);
      break;
    default:
      typed = Float64Array.from(values, num);
  }
  return nulls ? { name, kind: "numeric", values: typed, nulls } : { name, kind: "numeric", values: typed };
}

/** Decode `var.parquet` bytes (as the writer makes them) into a table with its index. */
export async function decodeVarTable(bytes: Uint8Array, object = "var.parquet"): Promise<ColumnTable> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  let metadata: ReturnType<typeof parquetMetadata>;
  const [{ parquetMetadata, parquetRead }, compressors] = await Promise.all([
    loadParquet(),
    loadDecompressors(),
  ]);
  try {
    metadata = parquetMetadata(file);
  } catch (cause) {
    throw new DeltacellsError(`${object} is not a readable parquet file: ${(cause as Error).message}`, {
      tag: "FormatError",
      object,
      cause,
    });
  }
  const kv = new Map((metadata.key_value_metadata ?? []).map((e) => [e.key, e.value ?? ""]));
  const pandas = JSON.parse(kv.get("pandas") ?? "null") as {
    index_columns: unknown[];
    columns: PandasColumn[];
  } | null;
  const categories = JSON.parse(kv.get("deltacells:categories") ?? "{}") as Record<string, string[]>;
  const n = Number(metadata.num_rows);
  const parts = new Map<string, { start: number; data: Column }[]>();
  await parquetRead({
    file,
    metadata,
    compressors,
    onChunk: (c) => {
      const list = parts.get(c.columnName) ?? [];
      list.push({ start: c.rowStart, data: c.columnData as Column });
      parts.set(c.columnName, list);
    },
  });
  const indexField =
    typeof pandas?.index_columns[0] === "string" ? (pandas.index_columns[0] as string) : undefined;
  const byField = new Map((pandas?.columns ?? []).map((c) => [c.field_name, c]));
  const columns: TableColumn[] = [];
  let index: string[] = Array.from({ length: n }, (_, i) => String(i));
  let indexName: string | null = null;
  const leaves = metadata.schema.slice(1).map((s) => s.name);
  for (const field of leaves) {
    const values = concat(parts.get(field) ?? [], n);
    const pd = byField.get(field);
    if (field === indexField) {
      index = values.map((v) => String(v ?? ""));
      indexName = pd?.name ?? null;
      continue;
    }
    const name = pd?.name ?? field;
    if (pd?.pandas_type === "categorical") {
      const cats = categories[field] ?? [
        ...new Set(values.filter((v): v is string => typeof v === "string")),
      ];
      const code = new Map(cats.map((c, i) => [c, i]));
      const codes = Int32Array.from(values, (v) => (typeof v === "string" ? (code.get(v) ?? -1) : -1));
      columns.push({
        name,
        kind: "category",
        codes,
        categories: cats,
        ordered: Boolean(pd.metadata?.ordered),
      });
    } else if (pd?.pandas_type === "unicode" || values.some((v) => typeof v === "string")) {
      columns.push({
        name,
        kind: "string",
        values: values.map((v) => (v === null || v === undefined ? null : String(v))),
      });
    } else if (values.some((v) => typeof v === "boolean")) {
      const nulls = values.some((v) => v === null || v === undefined)
        ? Uint8Array.from(values, (v) => (v === null || v === undefined ? 1 : 0))
        : undefined;
      const bools = Uint8Array.from(values, (v) => (v === true ? 1 : 0));
      columns.push(
        nulls ? { name, kind: "bool", values: bools, nulls } : { name, kind: "bool", values: bools },
      );
    } else {
      columns.push(numericColumn(name, values, pd?.numpy_type ?? "float64"));
    }
  }
  return { indexName, index, columns };
}
