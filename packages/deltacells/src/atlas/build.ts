/**
 * An atlas built in one process: the same scan records, plan, task and `finalize` as a build
 * across machines, run one after the other against one store (the encoder pool keeps every core
 * busy inside the one task). So the result is byte for byte what `plan` + N tasks + `finalize`
 * write, by construction, and one input's conversion is the case of a single input. Inputs are
 * opened one at a time. A second output (`secondOutput`) is written from the cells of the tile
 * pass, in step with it.
 */
import type { ReadableStore, WritableStore } from "@deltacells/storage";
import type { DatasetManifest } from "../dataset/manifest.js";
import type { TileEncoder } from "../dataset/tiling.js";
import type { Compress } from "../dataset/var-table.js";
import { finalizeAtlas } from "./finalize.js";
import type { AtlasPlan, AtlasPlanOptions } from "./plan.js";
import type { InputIdentity } from "./scan.js";
import { handOver, type SecondOutput } from "./second-output.js";
import { planStep, scanStep, taskStep } from "./steps.js";
import type { OpenedSource } from "./task.js";

/** An input of a build: its path as given, how to open it, and how it is identified. */
export interface AtlasInputRef {
  path: string;
  open(): Promise<OpenedSource>;
  identity?: () => Promise<InputIdentity | null>;
}

/** Where a one-process build is. */
export interface BuildProgress {
  phase: "totals" | "tiles";
  cellsDone: number;
  nCells: number;
  tilesWritten: number;
  bytesWritten: number;
  /** The input being scanned (totals), of `inputs`. */
  input?: number;
  inputs?: number;
}

/** How tiles and obs shards are encoded and written: what a build and an append share. */
export interface EncodeSettings {
  encoder: TileEncoder;
  /** zstd compressor of `var.parquet`, and of the obs shards unless `obsCompress`. */
  compress: Compress;
  obsCompress?: Compress;
  /** Tiles encoded or being written at once (default 4). */
  inFlight?: number;
  blockCells?: number;
  signal?: AbortSignal;
}

export interface BuildAtlasOptions extends Omit<AtlasPlanOptions, "paths" | "tasks">, EncodeSettings {
  onProgress?: (p: BuildProgress) => void;
  /**
   * Another writer fed the same cells as the tiles, in the tile pass (a sporadik companion): see
   * {@link SecondOutput}. Started once the plan is made, it must be complete before the manifest
   * is written; its failure fails the build.
   */
  secondOutput?: SecondOutput;
}

export interface BuildAtlasResult {
  manifest: DatasetManifest;
  /** Bytes of the dataset's objects written (tiles, obs, gene files, manifest). */
  bytes: number;
  plan: AtlasPlan;
}

/** Build the atlas of `inputs` in `store` in this process (see the module comment). */
export async function buildAtlas(
  inputs: AtlasInputRef[],
  store: ReadableStore & WritableStore & { url?: string },
  opts: BuildAtlasOptions,
): Promise<BuildAtlasResult> {
  const n = inputs.length;
  const options: AtlasPlanOptions = { ...opts, paths: inputs.map((i) => i.path), tasks: 1 };
  let scanned = 0;
  let known = 0;
  for (let i = 0; i < n; i++) {
    const opened = await inputs[i]!.open();
    try {
      const { source } = opened;
      known += source.nCells;
      await scanStep(store, options, i, source, {
        identity: (await inputs[i]!.identity?.()) ?? null,
        blockCells: opts.blockCells,
        signal: opts.signal,
        onProgress: (done) =>
          opts.onProgress?.({
            phase: "totals",
            cellsDone: scanned + done,
            nCells: known,
            tilesWritten: 0,
            bytesWritten: 0,
            input: i,
            inputs: n,
          }),
      });
      scanned += source.nCells;
    } finally {
      await opened.release();
    }
  }
  let geneFileBytes = 0;
  const plan = await planStep(store, options, opts.compress, async (key, value) => {
    await store.set(key, value, { signal: opts.signal });
    geneFileBytes += value.length;
  });
  const second =
    opts.secondOutput &&
    handOver(opts.secondOutput, { nCells: plan.n_cells, nGenes: plan.n_genes, nnz: plan.nnz });
  try {
    await taskStep(store, 0, {
      open: (_, i) => inputs[i]!.open(),
      encoder: opts.encoder,
      compress: opts.obsCompress ?? opts.compress,
      inFlight: opts.inFlight,
      blockCells: opts.blockCells,
      signal: opts.signal,
      onProgress: (p) =>
        opts.onProgress?.({ phase: "tiles", ...p, bytesWritten: geneFileBytes + p.bytesWritten }),
      ...(second && { rows: second }),
    });
    await second?.end();
  } catch (err) {
    await second?.fail(err);
    throw err;
  }
  const done = await finalizeAtlas(store, { signal: opts.signal });
  return { manifest: done.manifest, bytes: geneFileBytes + done.bytes, plan };
}
