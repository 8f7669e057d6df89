/**
 * Which obs columns a dataset gets, and of which kind (spec: "Obs"), from the input's cell table
 * and its obsm embeddings, and how a column's rows are handed to parquet. Browser-safe and pure.
 */

import type {
  ColumnTable,
  ColumnTableReader,
  SourceEmbedding,
  TableColumn,
  TableColumnReader,
} from "../dataset/source.js";
import { DeltacellsError } from "../errors.js";
import { categoryCodeType, type ObsArrowType, type ObsColumnSchema, type ObsNumericType } from "./schema.js";
import { Utf8Strings } from "./utf8-strings.js";

/** The columns of an embedding: `KEY_0`, `KEY_1`, ... */
export function embeddingColumnName(key: string, j: number): string {
  return `${key}_${j}`;
}

/** The Arrow type of a numeric column's typed array. */
export function numericArrowType(
  values: Extract<TableColumn, { kind: "numeric" }>["values"],
): ObsNumericType {
  if (values instanceof Int8Array) return "int8";
  if (values instanceof Uint8Array) return "uint8";
  if (values instanceof Int16Array) return "int16";
  if (values instanceof Uint16Array) return "uint16";
  if (values instanceof Int32Array) return "int32";
  if (values instanceof Uint32Array) return "uint32";
  if (values instanceof BigInt64Array) return "int64";
  if (values instanceof BigUint64Array) return "uint64";
  if (values instanceof Float32Array) return "float";
  return "double";
}

/** The parquet physical storage of each Arrow type (integers narrower than 64 bits live in INT32). */
export function parquetPhysical(
  t: ObsArrowType,
): "INT32" | "INT64" | "FLOAT" | "DOUBLE" | "BOOLEAN" | "BYTE_ARRAY" {
  switch (t) {
    case "int64":
    case "uint64":
      return "INT64";
    case "float":
      return "FLOAT";
    case "double":
      return "DOUBLE";
    case "bool":
      return "BOOLEAN";
    case "string":
      return "BYTE_ARRAY";
    default:
      return "INT32";
  }
}

/** Cells `[a, b)` of a numeric column as its parquet physical type wants them, nulls as null. */
export function numericRows(
  t: ObsArrowType,
  values: ArrayLike<number | bigint>,
  nulls: Uint8Array | undefined,
  a: number,
  b: number,
): ArrayLike<unknown> {
  const phys = parquetPhysical(t);
  const n = b - a;
  if (t === "uint32") {
    // hyparquet-writer takes a UINT_32 column's values unsigned (it wraps them into INT32 itself,
    // but only from a plain array: a typed array reaches the int32 check unwrapped)
    return Array.from({ length: n }, (_, i) => (nulls?.[a + i] ? null : Number(values[a + i]!)));
  }
  if (nulls?.subarray(a, b).some((x) => x !== 0)) {
    const out = new Array<unknown>(n);
    for (let i = 0; i < n; i++) {
      const v = values[a + i]!;
      out[i] = nulls[a + i]
        ? null
        : phys === "INT64"
          ? BigInt.asIntN(64, BigInt(v))
          : phys === "INT32"
            ? Number(v) | 0
            : Number(v);
    }
    return out;
  }
  if (phys === "INT64") {
    if (values instanceof BigInt64Array) return values.subarray(a, b);
    const out = new BigInt64Array(n);
    for (let i = 0; i < n; i++) out[i] = BigInt.asIntN(64, BigInt(values[a + i]!));
    return out;
  }
  if (phys === "FLOAT") return (values as Float32Array).subarray(a, b);
  if (phys === "DOUBLE") return Float64Array.from({ length: n }, (_, i) => Number(values[a + i]!));
  if (values instanceof Int32Array) return values.subarray(a, b);
  return Int32Array.from({ length: n }, (_, i) => Number(values[a + i]!));
}

function refuse(location: string, message: string, fields: { field?: string; found?: unknown } = {}) {
  return new DeltacellsError(`${location}: ${message}`, { tag: "InvalidInput", object: location, ...fields });
}

/**
 * An in-memory table as a {@link ColumnTableReader}; string columns and the index are copied to
 * UTF-8 storage so that the source's JS strings can be collected once the plan is made.
 */
export function tableReader(table: ColumnTable, location: string, nCells: number): ColumnTableReader {
  const rowsOf = (name: string, length: number) => {
    if (length !== nCells)
      throw refuse(
        location,
        `obs column ${JSON.stringify(name)} has ${length} rows, expected ${nCells} (one per cell)`,
      );
  };
  if (table.index.length !== nCells)
    throw refuse(
      location,
      `the obs index has ${table.index.length} entries, expected ${nCells} (one per cell)`,
    );
  const index = Utf8Strings.from(table.index);
  const columns = table.columns.map((col): TableColumnReader => {
    switch (col.kind) {
      case "category": {
        rowsOf(col.name, col.codes.length);
        const { codes } = col;
        return { ...col, read: async (a, b) => codes.subarray(a, b) };
      }
      case "numeric":
      case "bool": {
        rowsOf(col.name, col.values.length);
        const { values, nulls } = col;
        const read = async (a: number, b: number) => ({
          values: values.subarray(a, b),
          nulls: nulls?.subarray(a, b),
        });
        const nullable = col.nullable ? { nullable: true } : {};
        return col.kind === "bool"
          ? {
              name: col.name,
              kind: "bool",
              read: read as (a: number, b: number) => Promise<{ values: Uint8Array }>,
              ...nullable,
            }
          : { name: col.name, kind: "numeric", read, ...nullable };
      }
      default: {
        rowsOf(col.name, col.values.length);
        const values = Utf8Strings.from(col.values);
        const nullable = col.nullable ? { nullable: true } : {};
        return {
          name: col.name,
          kind: "string",
          read: async (a, b) => values.slice(a, b),
          ...nullable,
          ...(col.textFrom ? { textFrom: col.textFrom } : {}),
        };
      }
    }
  });
  return {
    indexName: table.indexName,
    index: async (a, b) => index.slice(a, b) as string[],
    columns,
    ...(table.excluded ? { excluded: table.excluded } : {}),
  };
}

/** Rows of category codes checked per read, so a check never holds a whole column. */
const CHECK_ROWS = 65_536;

/** A table column's schema entry (a categorical over `maxCategories` becomes a string). */
async function planColumn(
  location: string,
  col: TableColumnReader,
  nCells: number,
  maxCategories: number,
): Promise<ObsColumnSchema> {
  switch (col.kind) {
    case "category": {
      const { categories } = col;
      // Checked before anything is written: a bad code is refused while an earlier dataset is intact.
      for (let a = 0; a < nCells; a += CHECK_ROWS) {
        const codes = await col.read(a, Math.min(nCells, a + CHECK_ROWS));
        for (let i = 0; i < codes.length; i++) {
          const c = codes[i]!;
          if (c < -1 || c >= categories.length) {
            throw refuse(
              location,
              `obs column ${JSON.stringify(col.name)}: cell ${a + i} has category code ${c}, outside -1 .. ${categories.length - 1}`,
              { field: col.name, found: c },
            );
          }
        }
      }
      if (new Set(categories).size !== categories.length)
        throw refuse(location, `obs column ${JSON.stringify(col.name)} has repeated categories`, {
          field: col.name,
        });
      if (categories.length > maxCategories)
        return { name: col.name, kind: "string", arrow_type: "string", categories: null };
      return {
        name: col.name,
        kind: "category",
        arrow_type: categoryCodeType(categories.length),
        categories: [...categories],
      };
    }
    case "numeric": {
      // The Arrow type is the reader's array type: the first row tells it.
      const t = numericArrowType((await col.read(0, Math.min(1, nCells))).values);
      return { name: col.name, kind: "numeric", arrow_type: t, categories: null };
    }
    case "bool":
      return { name: col.name, kind: "bool", arrow_type: "bool", categories: null };
    case "string":
      return { name: col.name, kind: "string", arrow_type: "string", categories: null };
  }
}

/** The float32 columns of a 2-D dense embedding. */
function planEmbedding(location: string, key: string, e: SourceEmbedding, nCells: number): ObsColumnSchema[] {
  if (e.kind !== "dense" || e.shape.length !== 2 || e.values === undefined) {
    throw refuse(
      location,
      `obsm ${JSON.stringify(key)} is a ${e.kind} entry of shape ${JSON.stringify(e.shape)}; only 2-D dense embeddings become obs columns (choose others with the obsm option, or none)`,
      { field: "obsm", found: key },
    );
  }
  const [rows, k] = e.shape as [number, number];
  if (rows !== nCells)
    throw refuse(location, `obsm ${JSON.stringify(key)} has ${rows} rows, expected ${nCells} (one per cell)`);
  return Array.from({ length: k }, (_, j) => ({
    name: embeddingColumnName(key, j),
    kind: "numeric",
    arrow_type: "float",
    categories: null,
  }));
}

/** Embeddings chosen by default: 2-D dense obsm entries of at most this many columns (UMAP, t-SNE, spatial). */
export const AUTO_EMBEDDING_MAX_COLUMNS = 3;

/** Which obsm keys become columns when not told: the small 2-D dense ones, in store order. */
export function autoEmbeddingKeys(entries: Record<string, { kind: string; shape: number[] }>): string[] {
  return Object.entries(entries)
    .filter(
      ([, e]) => e.kind === "dense" && e.shape.length === 2 && e.shape[1]! <= AUTO_EMBEDDING_MAX_COLUMNS,
    )
    .map(([k]) => k);
}

/**
 * Plan the obs columns of one input: the index first (named as the pandas index, or `indexColumn`
 * when unnamed), then the table's columns, then each embedding's. Checks every category code and
 * refuses name clashes, before anything is written.
 */
export async function planObs(opts: {
  location: string;
  nCells: number;
  table: ColumnTableReader;
  indexColumn: string;
  embeddings: [string, SourceEmbedding][];
  maxCategories: number;
}): Promise<ObsColumnSchema[]> {
  const { location, nCells, table } = opts;
  const indexName = table.indexName ?? opts.indexColumn;
  const planned: ObsColumnSchema[] = [
    { name: indexName, kind: "string", arrow_type: "string", categories: null },
  ];
  for (const col of table.columns) planned.push(await planColumn(location, col, nCells, opts.maxCategories));
  for (const [key, e] of opts.embeddings) planned.push(...planEmbedding(location, key, e, nCells));
  const seen = new Set<string>();
  for (const p of planned) {
    if (seen.has(p.name)) {
      throw refuse(
        location,
        `two obs columns would be named ${JSON.stringify(p.name)} (the index, a column or an embedding column); rename one in the input, or exclude it`,
        { field: p.name },
      );
    }
    seen.add(p.name);
  }
  return planned;
}
