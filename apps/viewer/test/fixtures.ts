/**
 * What the viewer's tests and bench serve: the viewer built by Vite, and datasets converted by the
 * real CLI with `--sporadik`, plus an obs sidecar laid out as the format spec says (schema.json and
 * one parquet row group per tile, zstd) holding the input's obs columns and its `X_umap` as
 * `X_umap_0`/`X_umap_1` float32 columns.
 *
 * The converter does not write obs yet (it lands from another branch); until it does, the sidecar
 * is written here from the input's own obs and obsm, read by `@deltacells/anndata`.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { zstdCompressor } from "@deltacells/core/node";
import { parquetWriteBuffer } from "hyparquet-writer";

export const REPO = resolve(import.meta.dirname, "../../..");
export const VIEWER_DIST = join(REPO, "apps/viewer/dist");
export const PBMC = join(REPO, "data/pbmc68k-counts/pbmc68k_counts.h5ad");
const MAIN = join(REPO, "packages/cli/src/main.ts");

function run(args: string[], cwd = REPO): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((ok, fail) => {
    const child = spawn(args[0]!, args.slice(1), { cwd });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("error", fail);
    child.on("close", (code) => ok({ code: code ?? -1, stdout, stderr }));
  });
}

/** `deltacells ARGS` from the sources; rejects on a non-zero exit. */
export async function deltacells(...args: string[]): Promise<string> {
  const r = await run([process.execPath, "--import", "tsx", "--conditions=source", MAIN, ...args]);
  if (r.code !== 0) throw new Error(`deltacells ${args.join(" ")} failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}

/** Builds the viewer with Vite into apps/viewer/dist (what `deltacells serve` hands out). */
export async function buildViewer(): Promise<void> {
  const r = await run(
    [process.execPath, join(REPO, "node_modules/vite/bin/vite.js"), "build", "--logLevel", "warn"],
    join(REPO, "apps/viewer"),
  );
  if (r.code !== 0) throw new Error(`vite build failed: ${r.stderr}${r.stdout}`);
}

/** One obs column to write: category codes with their vocabulary, or float values. */
export type ObsColumn =
  | { name: string; kind: "category"; codes: Int32Array; categories: string[] }
  | { name: string; kind: "numeric"; values: Float32Array | Float64Array };

/** Writes `obs/` into the dataset at `dir` and records it in the manifest (format spec, "Obs"). */
export function writeObsSidecar(dir: string, columns: ObsColumn[]): void {
  const manifestPath = join(dir, "manifest.json");
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as Record<string, unknown> & {
    tile_cells: number[];
    tile_size: number;
  };
  const tilesPerFile = 1000;
  const nTiles = manifest.tile_cells.length;
  const schemaColumns = columns.map((c) =>
    c.kind === "category"
      ? {
          name: c.name,
          kind: "category",
          arrow_type: c.categories.length < 128 ? "int8" : c.categories.length < 32768 ? "int16" : "int32",
          categories: c.categories,
        }
      : {
          name: c.name,
          kind: "numeric",
          arrow_type: c.values instanceof Float32Array ? "float" : "double",
          categories: null,
        },
  );
  const schemaText = `${JSON.stringify({ format: "deltacells-obs", version: 1, columns: schemaColumns })}\n`;
  mkdirSync(join(dir, "obs"), { recursive: true });
  writeFileSync(join(dir, "obs/schema.json"), schemaText);
  const compress = zstdCompressor(3);
  const shardBytes: number[] = [];
  const shardSha: string[] = [];
  let cell = 0;
  for (let s = 0; s * tilesPerFile < nTiles; s++) {
    const tiles = manifest.tile_cells.slice(s * tilesPerFile, (s + 1) * tilesPerFile);
    const n = tiles.reduce((a, b) => a + b, 0);
    const [a, b] = [cell, cell + n];
    cell = b;
    const schema: Record<string, unknown>[] = [{ name: "schema", num_children: columns.length }];
    const columnData = columns.map((c, k) => {
      const arrow = schemaColumns[k]!.arrow_type;
      if (c.kind === "category") {
        schema.push({
          name: c.name,
          type: "INT32",
          repetition_type: "OPTIONAL",
          converted_type: arrow === "int8" ? "INT_8" : arrow === "int16" ? "INT_16" : "INT_32",
        });
        return { name: c.name, data: Array.from(c.codes.subarray(a, b), (v) => (v < 0 ? null : v)) };
      }
      schema.push({
        name: c.name,
        type: arrow === "float" ? "FLOAT" : "DOUBLE",
        repetition_type: "OPTIONAL",
      });
      return { name: c.name, data: Array.from(c.values.subarray(a, b), (v) => (Number.isNaN(v) ? null : v)) };
    });
    // One row group per tile: every tile but the last holds tile_size cells.
    const buffer = new Uint8Array(
      parquetWriteBuffer({
        // biome-ignore lint/suspicious/noExplicitAny: hyparquet-writer's column and schema types are loose JS shapes
        columnData: columnData as any,
        // biome-ignore lint/suspicious/noExplicitAny: see above
        schema: schema as any,
        codec: "ZSTD",
        compressors: { ZSTD: compress },
        statistics: false,
        rowGroupSize: manifest.tile_size,
      }),
    );
    const name = `obs/obs_${String(s).padStart(4, "0")}.parquet`;
    writeFileSync(join(dir, name), buffer);
    shardBytes.push(buffer.length);
    shardSha.push(createHash("sha256").update(buffer).digest("hex"));
  }
  const canonical = JSON.stringify({ schema: schemaText, shards: shardSha, tile_cells: manifest.tile_cells });
  Object.assign(manifest, {
    has_obs: true,
    obs_tiles_per_file: tilesPerFile,
    obs_shard_bytes: shardBytes,
    obs_shard_sha256: shardSha,
    obs_fingerprint: createHash("sha256").update(canonical).digest("hex").slice(0, 24),
  });
  writeFileSync(manifestPath, `${JSON.stringify(manifest)}\n`);
}

/** The h5ad's categorical and numeric obs columns and its X_umap, as sidecar columns. */
export async function obsOfH5ad(path: string): Promise<ObsColumn[]> {
  const { openInput } = await import("@deltacells/anndata/node");
  const input = await openInput(path);
  try {
    const table = await input.obs();
    const out: ObsColumn[] = [];
    for (const c of table.columns) {
      if (c.kind === "category")
        out.push({ name: c.name, kind: "category", codes: c.codes, categories: c.categories });
      else if (c.kind === "numeric")
        out.push({
          name: c.name,
          kind: "numeric",
          values: Float64Array.from(c.values as ArrayLike<number>, Number),
        });
    }
    const umap = (await input.obsm(["X_umap"])).X_umap;
    if (umap?.kind === "dense") {
      const n = umap.shape[0]!;
      const k = umap.shape[1]!;
      const v = umap.values as ArrayLike<number>;
      const x = new Float32Array(n);
      const y = new Float32Array(n);
      for (let i = 0; i < n; i++) {
        x[i] = Number(v[i * k]);
        y[i] = Number(v[i * k + 1]);
      }
      out.push(
        { name: "X_umap_0", kind: "numeric", values: x },
        { name: "X_umap_1", kind: "numeric", values: y },
      );
    }
    return out;
  } finally {
    await input.close();
  }
}

/** The pbmc68k demo: converted with its companion, obs and UMAP, at `<root>/pbmc68k`. */
export async function buildPbmc(root: string): Promise<string> {
  const dir = join(root, "pbmc68k");
  await deltacells("convert", PBMC, dir, "--sporadik", "--quiet", "--threads", "1");
  writeObsSidecar(dir, await obsOfH5ad(PBMC));
  return dir;
}
