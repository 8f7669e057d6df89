/**
 * The deep check of the obs sidecar (`validateDataset` calls it when `has_obs`): every shard
 * fetched whole, its size and SHA-256 against the manifest, one row group per tile with the
 * tile's rows, the parquet columns against `obs/schema.json` (names, order, and the Arrow type
 * their physical types and annotations give), and the fingerprint recomputed (in any spelling
 * readers accept). Problems are returned, not thrown.
 */
import type { ReadableStore } from "@deltacells/storage";
import type { parquetMetadata } from "hyparquet";
import type { DatasetManifest } from "../dataset/manifest.js";
import { loadParquet } from "../parquet-load.js";
import { checkFingerprint, sha256Hex } from "./fingerprint.js";
import { columnMismatch } from "./parquet-type.js";
import { OBS_SCHEMA_KEY, type ObsSchema, obsShardKey, parseObsSchema } from "./schema.js";

export interface ObsProblem {
  object: string;
  tag: string;
  message: string;
}

/** Check every shard of a dataset's obs; `signal` aborts between shards. */
export async function validateObs(
  store: ReadableStore,
  manifest: DatasetManifest,
  opts: { signal?: AbortSignal } = {},
): Promise<ObsProblem[]> {
  const problems: ObsProblem[] = [];
  const add = (object: string, tag: string, message: string) => problems.push({ object, tag, message });
  const schemaBytes = await store.get(OBS_SCHEMA_KEY, opts);
  if (schemaBytes === undefined) {
    add(OBS_SCHEMA_KEY, "NotFound", `${OBS_SCHEMA_KEY} is missing although has_obs is true`);
    return problems;
  }
  const schemaText = new TextDecoder().decode(schemaBytes);
  let schema: ObsSchema | undefined;
  try {
    schema = parseObsSchema(schemaText, OBS_SCHEMA_KEY);
  } catch (err) {
    add(OBS_SCHEMA_KEY, (err as { _tag?: string })._tag ?? "FormatError", (err as Error).message);
  }
  const k = manifest.obs_tiles_per_file!;
  const tileCells = manifest.tile_cells;
  const shas = manifest.obs_shard_sha256 ?? [];
  const nShards = shas.length;
  for (let s = 0; s < nShards; s++) {
    opts.signal?.throwIfAborted();
    const key = obsShardKey(s);
    const bytes = await store.get(key, opts);
    if (bytes === undefined) {
      add(key, "NotFound", `${key} is missing, although the manifest lists ${nShards} obs shards`);
      continue;
    }
    if (bytes.length !== manifest.obs_shard_bytes![s]) {
      add(
        key,
        "InconsistentManifest",
        `${key} is ${bytes.length} bytes but the manifest says ${manifest.obs_shard_bytes![s]}: the shard was truncated or replaced`,
      );
    }
    const sha = await sha256Hex(bytes);
    if (sha !== shas[s]) {
      add(
        key,
        "InconsistentManifest",
        `${key} has SHA-256 ${sha} but the manifest says ${shas[s]}: the shard was modified`,
      );
    }
    let meta: ReturnType<typeof parquetMetadata>;
    const { parquetMetadata } = await loadParquet();
    try {
      meta = parquetMetadata(
        bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
      );
    } catch (err) {
      add(key, "FormatError", `${key} is not a readable parquet file: ${(err as Error).message}`);
      continue;
    }
    const tiles = tileCells.slice(s * k, (s + 1) * k);
    if (meta.row_groups.length !== tiles.length) {
      add(
        key,
        "InconsistentManifest",
        `${key} has ${meta.row_groups.length} row groups but must hold one per tile: tiles ${s * k} .. ${s * k + tiles.length - 1} (${tiles.length})`,
      );
    } else {
      meta.row_groups.forEach((g, i) => {
        if (Number(g.num_rows) !== tiles[i]) {
          add(
            key,
            "InconsistentManifest",
            `${key} row group ${i} has ${g.num_rows} rows but tile ${s * k + i} holds ${tiles[i]} cells`,
          );
        }
      });
    }
    if (schema) {
      const leaves = meta.schema.slice(1);
      const names = leaves.map((e) => e.name);
      const want = schema.columns.map((c) => c.name);
      if (names.join("\u0000") !== want.join("\u0000")) {
        add(
          key,
          "InconsistentManifest",
          `${key} has columns ${JSON.stringify(names)} but ${OBS_SCHEMA_KEY} lists ${JSON.stringify(want)}`,
        );
      } else {
        schema.columns.forEach((c, i) => {
          const mismatch = columnMismatch(leaves[i], c);
          if (mismatch !== undefined) {
            add(
              key,
              "InconsistentManifest",
              `${key} column ${JSON.stringify(c.name)} is ${mismatch}, but ${OBS_SCHEMA_KEY} says ${c.kind} ${c.arrow_type}`,
            );
          }
        });
      }
    }
  }
  const { matches, strict } = await checkFingerprint(manifest.obs_fingerprint, schemaText, tileCells, shas);
  if (!matches) {
    add(
      "manifest.json",
      "InconsistentManifest",
      `obs_fingerprint is ${manifest.obs_fingerprint} but schema.json, tile_cells and the shards' hashes give ${strict}`,
    );
  }
  return problems;
}
