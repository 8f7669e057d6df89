/**
 * The companion's rows in embedding order (`convert --sporadik-rows`): a sporadik store of the
 * same counts, axis 0 only, its rows the dataset's cells sorted along a Hilbert curve over one
 * embedding (`embeddingOrder` of @deltacells/core), plus `order.npy` (the cell of each row), named
 * in the manifest once complete. The viewer reads a lasso's rows from it: cells near one another
 * in the embedding are a few runs of rows there, where the companion (dataset order) scatters them
 * over every chunk. Written from the companion's row layout, read back whole.
 */
import {
  companionOf,
  type Dataset,
  EMBEDDING_ROWS_PATH,
  type EmbeddingRows,
  embeddingOrder,
  nameEmbeddingRows,
  type ObsFrame,
  ORDER_KEY,
  openDataset,
  orderDigest,
  orderNpy,
} from "@deltacells/core";
import { layoutOver, writeStore } from "@deltacells/sporadik";
import { openReader } from "@deltacells/sporadik/node";
import { joinLocation } from "@deltacells/storage";
import type { Locations } from "../locations.js";

/** What the command reports. */
export interface EmbeddingRowsReport {
  output: string;
  embedding: [string, string];
  bytes: number;
  seconds: number;
}

/** The embedding the rows are ordered by: `X_umap` when obs has it, else the first `KEY_0`/`KEY_1` pair. */
export async function embeddingColumns(ds: Dataset): Promise<[string, string] | undefined> {
  if (!ds.manifest.has_obs) return undefined;
  const schema = await ds.obsSchema();
  const numeric = new Set(schema.columns.filter((c) => c.kind === "numeric").map((c) => c.name));
  const pairs = [...numeric]
    .map((n) => /^(.+)_0$/.exec(n)?.[1])
    .filter((base): base is string => base !== undefined && numeric.has(`${base}_1`))
    .sort((a, b) => Number(b === "X_umap") - Number(a === "X_umap") || (a < b ? -1 : a > b ? 1 : 0));
  const base = pairs[0];
  return base === undefined ? undefined : [`${base}_0`, `${base}_1`];
}

/** One numeric obs column for every cell as float32, as the viewer holds it (nulls NaN). */
function float32Column(frame: ObsFrame, name: string, nCells: number): Float32Array {
  const column = frame.columns.find((c) => c.name === name)!;
  const values = new Float32Array(nCells);
  let at = 0;
  for (let t = 0; t < column.table.batches.length; t++) {
    const tile = column.tile(t);
    const raw = tile.toArray() as ArrayLike<number | bigint>;
    for (let i = 0; i < tile.length; i++) values[at + i] = tile.isValid(i) ? Number(raw[i]) : Number.NaN;
    at += tile.length;
  }
  return values;
}

/**
 * Writes the rows of the dataset at `output` in embedding order at `output/sporadik-rows/` (from
 * its companion, which it needs) and names them in the manifest. With `checksums` every chunk
 * carries zstd's content checksum, as the companion's.
 */
export async function writeEmbeddingRows(
  locations: Locations,
  output: string,
  o: { checksums: boolean },
): Promise<EmbeddingRowsReport> {
  const started = performance.now();
  const datasetStore = locations.openCounted(output);
  const ds = await openDataset(datasetStore);
  const rel = companionOf(ds);
  const where = `${datasetStore.url}`;
  if (rel === undefined) {
    throw new Error(
      `${where} has no sporadik companion to order: --sporadik-rows needs --sporadik (convert with both)`,
    );
  }
  const embedding = await embeddingColumns(ds);
  if (embedding === undefined) {
    throw new Error(
      `${where} has no embedding in obs (a KEY_0/KEY_1 pair such as X_umap_0/X_umap_1) to order rows by: convert with --obsm X_umap, or without --sporadik-rows`,
    );
  }
  const frame = await ds.obs(embedding);
  const order = embeddingOrder(
    float32Column(frame, embedding[0], ds.nCells),
    float32Column(frame, embedding[1], ds.nCells),
  );
  const reader = await openReader(locations.open(joinLocation(output, rel)), { axis: 0 });
  const rows = await reader.readLayout();
  const n = ds.nCells;
  const from = rows.indptr;
  const at = (i: number) => Number(from[i]);
  const indptr = new (from.constructor as { new (n: number): typeof from })(n + 1);
  const indices = new (rows.indices.constructor as { new (n: number): typeof rows.indices })(
    rows.indices.length,
  );
  const data = new (rows.data.constructor as { new (n: number): typeof rows.data })(rows.data.length);
  const big = typeof from[0] === "bigint";
  const out = indptr as unknown as { [i: number]: number | bigint };
  let end = 0;
  for (let p = 0; p < n; p++) {
    const c = order[p]!;
    const lo = at(c);
    const hi = at(c + 1);
    indices.set(rows.indices.subarray(lo, hi) as never, end);
    data.set(rows.data.subarray(lo, hi) as never, end);
    end += hi - lo;
    out[p + 1] = big ? BigInt(end) : end;
  }
  const layout = layoutOver(rows.shape, 0, { data, indices, indptr, indexOrder: [1] });
  const location = joinLocation(output, EMBEDDING_ROWS_PATH);
  const store = locations.openCounted(location);
  await writeStore(store, layout, { checksums: o.checksums });
  await store.set(ORDER_KEY, orderNpy(order));
  const named: EmbeddingRows = { path: EMBEDDING_ROWS_PATH, embedding, digest: orderDigest(order) };
  await nameEmbeddingRows(datasetStore, named);
  return {
    output: store.url,
    embedding,
    bytes: store.stats.bytesWritten,
    seconds: (performance.now() - started) / 1000,
  };
}
