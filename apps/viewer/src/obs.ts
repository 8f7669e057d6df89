/**
 * The dataset's obs sidecar (format spec, "Obs"): `obs/schema.json` and parquet shards holding one
 * row group per tile. Only the columns asked for are read: hyparquet fetches the footer and those
 * column chunks by range through the page's (counted, abortable) store.
 *
 * This is the seam for the core reader's own obs API: when `@deltacells/core`'s `Dataset` grows
 * `obs(columns)`, `openObs` should delegate to it and this file shrinks to the adapter.
 */
import type { DatasetManifest } from "@deltacells/core";
import type { ReadableStore } from "@deltacells/storage";
import { type AsyncBuffer, parquetRead } from "hyparquet";
import { compressors } from "hyparquet-compressors";

/** One column as `obs/schema.json` declares it. */
export interface ObsColumnInfo {
  name: string;
  kind: "category" | "numeric" | "bool" | "string";
  arrow_type: string;
  categories?: string[] | null;
}

/** A column read for every cell: category codes (-1 missing) or numbers (NaN missing). */
export type ObsValues =
  | { name: string; kind: "category"; codes: Int32Array; categories: string[] }
  | { name: string; kind: "numeric"; values: Float32Array };

export interface Obs {
  readonly columns: ObsColumnInfo[];
  /** The named columns for every cell, in cell order. */
  read(names: string[], signal?: AbortSignal): Promise<Map<string, ObsValues>>;
}

/** A tagged error for a sidecar the page cannot read. */
export class ObsError extends Error {
  readonly _tag = "ObsError";
}

function shardKey(s: number): string {
  return `obs/obs_${String(s).padStart(4, "0")}.parquet`;
}

/** The obs of a dataset, or undefined when it has none. Costs one request (the schema). */
export async function openObs(
  store: ReadableStore & { url: string },
  manifest: DatasetManifest,
  signal?: AbortSignal,
): Promise<Obs | undefined> {
  if (!manifest.has_obs) return undefined;
  const bytes = await store.get("obs/schema.json", { signal });
  if (bytes === undefined) {
    throw new ObsError(
      `${store.url}/obs/schema.json is missing although the manifest says has_obs: the dataset is torn; convert it again`,
    );
  }
  const schema = JSON.parse(new TextDecoder().decode(bytes)) as {
    format?: string;
    columns?: ObsColumnInfo[];
  };
  if (schema.format !== "deltacells-obs" || !Array.isArray(schema.columns)) {
    throw new ObsError(
      `${store.url}/obs/schema.json is not a deltacells-obs schema (format ${JSON.stringify(schema.format)})`,
    );
  }
  const columns = schema.columns;
  const shardBytes = manifest.obs_shard_bytes ?? [];
  const tilesPerFile = manifest.obs_tiles_per_file ?? 1000;
  const nCells = manifest.n_cells;
  // The first cell of each shard, from the tile sizes.
  const shardStart: number[] = [];
  let cell = 0;
  for (let t = 0; t < manifest.tile_cells.length; t++) {
    if (t % tilesPerFile === 0) shardStart.push(cell);
    cell += manifest.tile_cells[t]!;
  }

  return {
    columns,
    async read(names, readSignal) {
      const infos = names.map((n) => {
        const c = columns.find((x) => x.name === n);
        if (!c) throw new ObsError(`obs has no column ${JSON.stringify(n)}`);
        return c;
      });
      const out = new Map<string, ObsValues>();
      for (const c of infos) {
        if (c.kind === "category") {
          out.set(c.name, {
            name: c.name,
            kind: "category",
            codes: new Int32Array(nCells).fill(-1),
            categories: c.categories ?? [],
          });
        } else {
          out.set(c.name, {
            name: c.name,
            kind: "numeric",
            values: new Float32Array(nCells).fill(Number.NaN),
          });
        }
      }
      await Promise.all(
        shardBytes.map(async (size, s) => {
          const key = shardKey(s);
          const file: AsyncBuffer = {
            byteLength: size,
            slice: async (start, end) => {
              const b = await store.getRange(
                key,
                { offset: start, length: (end ?? size) - start },
                { signal: readSignal },
              );
              if (b === undefined)
                throw new ObsError(`${store.url}/${key} is missing: the dataset is torn; convert it again`);
              return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
            },
          };
          await parquetRead({
            file,
            columns: names,
            compressors,
            onChunk: ({ columnName, columnData, rowStart }) => {
              const target = out.get(columnName);
              if (!target) return;
              const base = shardStart[s]! + rowStart;
              if (target.kind === "category") {
                for (let i = 0; i < columnData.length; i++) {
                  const v = columnData[i];
                  target.codes[base + i] = v === null || v === undefined ? -1 : Number(v);
                }
              } else {
                for (let i = 0; i < columnData.length; i++) {
                  const v = columnData[i];
                  target.values[base + i] = v === null || v === undefined ? Number.NaN : Number(v);
                }
              }
            },
          });
        }),
      );
      return out;
    },
  };
}

/** The embeddings among the columns: `X_name_0` and `X_name_1` pairs, `X_umap` first. */
export function embeddingsOf(columns: readonly ObsColumnInfo[]): { name: string; x: string; y: string }[] {
  const names = new Set(columns.filter((c) => c.kind === "numeric").map((c) => c.name));
  const found = [...names]
    .map((n) => /^(.+)_0$/.exec(n)?.[1])
    .filter((base): base is string => base !== undefined && names.has(`${base}_1`))
    .map((base) => ({ name: base, x: `${base}_0`, y: `${base}_1` }));
  return found.sort((a, b) => Number(b.name === "X_umap") - Number(a.name === "X_umap"));
}
