/**
 * A deltacells dataset read as an input of an atlas, for `append`: its cells as row blocks in its
 * own gene order (decoded tile by tile), its gene table, and its obs as a table read by row range
 * (one tile of each column at a time, from the shards). The embeddings and the source column are
 * columns there, named as the atlas's columns, so a task fills them like any other column.
 */
import type { Dataset } from "../dataset/reader.js";
import type {
  CanonicalRowBlock,
  ColumnTable,
  ColumnTableReader,
  DatasetSource,
  NumericArray,
  TableColumnReader,
} from "../dataset/source.js";
import { DeltacellsError } from "../errors.js";
import { newNumericArray, type ObsColumnSchema, type ObsNumericType, type ObsSchema } from "../obs/schema.js";

type Vector = Awaited<ReturnType<Dataset["obsTile"]>>[string];

/** Reads one column of a dataset's obs by row range, a tile at a time (the last tile kept). */
class ColumnRows {
  private tile = -1;
  private vector: Vector | undefined;
  constructor(
    private readonly ds: Dataset,
    private readonly name: string,
  ) {}

  /** The values of rows `[a, b)` through `take(vector, i)` of each row's tile. */
  async rows<T>(a: number, b: number, take: (v: Vector, i: number, k: number) => T): Promise<void> {
    for (let c = a; c < b; ) {
      const { tile, cell } = this.ds.locate(c);
      if (tile !== this.tile) {
        this.vector = (await this.ds.obsTile(tile, [this.name]))[this.name];
        this.tile = tile;
      }
      const end = Math.min(b, this.ds.tileStart(tile) + this.ds.manifest.tile_cells[tile]!);
      for (let i = cell; i < cell + end - c; i++) take(this.vector!, i, c - a + i - cell);
      c = end;
    }
  }
}

function columnReader(
  ds: Dataset,
  col: ObsColumnSchema,
  ordered: boolean,
  nullable: boolean,
): TableColumnReader {
  const rows = new ColumnRows(ds, col.name);
  const flag = nullable ? { nullable: true } : {};
  switch (col.kind) {
    case "category":
      return {
        name: col.name,
        kind: "category",
        categories: col.categories!,
        ordered,
        read: async (a, b) => {
          const out = new Int32Array(b - a);
          await rows.rows(a, b, (v, i, k) => {
            out[k] = Number(v.get(i));
          });
          return out;
        },
      };
    case "numeric": {
      const type = col.arrow_type as ObsNumericType;
      const big = type === "int64" || type === "uint64";
      return {
        name: col.name,
        kind: "numeric",
        ...flag,
        read: async (a, b) => {
          const values = newNumericArray(type, b - a);
          const nulls = new Uint8Array(b - a);
          await rows.rows(a, b, (v, i, k) => {
            const x = v.get(i);
            if (x === null) nulls[k] = 1;
            else values[k] = big ? BigInt(x) : Number(x);
          });
          return { values: values as NumericArray, nulls };
        },
      };
    }
    case "bool":
      return {
        name: col.name,
        kind: "bool",
        ...flag,
        read: async (a, b) => {
          const values = new Uint8Array(b - a);
          const nulls = new Uint8Array(b - a);
          await rows.rows(a, b, (v, i, k) => {
            const x = v.get(i);
            if (x === null) nulls[k] = 1;
            else values[k] = x ? 1 : 0;
          });
          return { values, nulls };
        },
      };
    default:
      return {
        name: col.name,
        kind: "string",
        ...flag,
        read: async (a, b) => {
          const out = new Array<string | null>(b - a);
          await rows.rows(a, b, (v, i, k) => {
            const x = v.get(i);
            out[k] = x === null ? null : String(x);
          });
          return out;
        },
      };
  }
}

/** The obs of `ds` (schema `schema`) as a table by row range: the index apart, every other column as it is stored. */
function obsTable(ds: Dataset, schema: ObsSchema): ColumnTableReader {
  const meta = ds.manifest.metadata as {
    obs_index?: string;
    obs_index_name?: string | null;
    obs_ordered?: string[];
    obs_nullable?: string[];
  };
  const indexName = meta.obs_index ?? schema.columns[0]!.name;
  const ordered = new Set(meta.obs_ordered ?? []);
  const nullable = new Set(meta.obs_nullable ?? []);
  const index = new ColumnRows(ds, indexName);
  return {
    indexName: meta.obs_index_name === undefined ? indexName : meta.obs_index_name,
    index: async (a, b) => {
      const out = new Array<string>(b - a);
      await index.rows(a, b, (v, i, k) => {
        out[k] = String(v.get(i));
      });
      return out;
    },
    columns: schema.columns
      .filter((c) => c.name !== indexName)
      .map((c) => columnReader(ds, c, ordered.has(c.name), nullable.has(c.name))),
  };
}

/** Rows `[a, b)` of `ds` as one block per tile, genes in the dataset's order. */
async function* datasetBlocks(ds: Dataset, a: number, b: number): AsyncGenerator<CanonicalRowBlock> {
  for (let c = a; c < b; ) {
    const { tile } = ds.locate(c);
    const end = Math.min(b, ds.tileStart(tile) + ds.manifest.tile_cells[tile]!);
    const rows = await ds.cells(c, end);
    yield {
      rowStart: c,
      nRows: end - c,
      indptr: rows.indptr,
      indices: rows.indices,
      data: rows.data as Int32Array,
    };
    c = end;
  }
}

/** `ds` as an atlas input (see the module comment); `table` is its gene table. */
export async function datasetInput(ds: Dataset, table: ColumnTable): Promise<DatasetSource> {
  const schema = ds.manifest.has_obs ? await ds.obsSchema() : undefined;
  return {
    format: "deltacells",
    location: ds.url,
    matrixPath: "tiles",
    nCells: ds.nCells,
    nGenes: ds.nGenes,
    var: async () => table,
    ...(schema
      ? {
          obs: async () => {
            throw new DeltacellsError(`${ds.url}: a dataset's obs is read by row range`, {
              tag: "InternalError",
            });
          },
          obsReader: async () => obsTable(ds, schema),
          obsmKeys: async () => [],
          obsm: async () => ({}),
        }
      : {}),
    rowBlocks: (opts = {}) =>
      datasetBlocks(ds, opts.rowStart ?? 0, Math.min(ds.nCells, opts.rowEnd ?? ds.nCells)),
  };
}
