/**
 * The plan of an atlas: made once from the scan records (`plan`, or `plan --merge`), written under
 * the output, and read by every task and by `finalize`. It fixes everything the dataset's bytes
 * depend on: the inputs and their first cells, the gene space and order, the obs schema with its
 * global vocabularies, the tile size and encoder settings, the manifest's metadata, and each task's
 * range of tiles (whole obs shards, so that no two tasks write one object) with the input rows it
 * covers. A task needs nothing else, and no pass over other inputs.
 */

import { DEFAULT_LEVEL, DEFAULT_N_CHUNKS } from "../codec/encode.js";
import type { ColumnTable } from "../dataset/source.js";
import { autoTileSize } from "../dataset/tiling.js";
import { CONVERTER_NAME, CONVERTER_VERSION } from "../dataset/version.js";
import { DeltacellsError } from "../errors.js";
import { sha256Hex } from "../obs/fingerprint.js";
import type { ObsWriteOptions } from "../obs/prepare.js";
import { DEFAULT_MAX_CATEGORIES, DEFAULT_OBS_TILES_PER_FILE } from "../obs/schema.js";
import { type DroppedGenes, type GeneSpaceOptions, geneSpace } from "./genes.js";
import { sourceNames } from "./keys.js";
import { type AtlasObsColumn, mergeObs } from "./obs-merge.js";
import type { ScanSummary } from "./records.js";
import type { InputIdentity, ObsScan } from "./scan.js";
import { mergeVar, type VarSummary } from "./var-merge.js";

export const PLAN_FORMAT = "deltacells-atlas-plan";
export const PLAN_VERSION = 1;

/** One input as the plan knows it. */
export interface PlanInput {
  /** What a task opens (the path or URL as given). */
  path: string;
  /** The input as its reader named it, for messages and the manifest. */
  location: string;
  /** Its value in the source column. */
  name: string;
  format: string;
  matrix_path: string;
  cells: number;
  /** The atlas's index of its first cell. */
  first_cell: number;
  genes: number;
  /** The nonzeros and counts it gives (genes left out not counted). */
  nnz: number;
  total: number;
  keys_sha256: string;
  identity: InputIdentity | null;
}

/** One task: its tiles, the tiles whose obs it writes (the same, or more before them), and the input rows. */
export interface PlanTask {
  tiles: [number, number];
  obs_tiles: [number, number];
  rows: { input: number; start: number; end: number }[];
}

/** The obs part of a plan. */
export interface PlanObs {
  tiles_per_file: number;
  /** How tasks open each input's cell table (as the scan did). */
  exclude: string[];
  obsm: "auto" | string[];
  max_categories: number;
  columns: AtlasObsColumn[];
}

export interface AtlasPlan {
  format: typeof PLAN_FORMAT;
  version: typeof PLAN_VERSION;
  /** 24 hex characters of the SHA-256 of the plan itself: completion records name it. */
  id: string;
  inputs: PlanInput[];
  /** How the inputs are read (the matrix, the layout), handed to the opener as it is. */
  read: Record<string, unknown>;
  var_key: string | null;
  /** The genes in first-seen order, and output column j = keys[order[j]]. */
  genes: { matched: boolean; keys: string[]; order: number[] };
  n_cells: number;
  n_genes: number;
  nnz: number;
  total: number;
  tile_size: number;
  n_chunks: number;
  zstd_level: number;
  obs: PlanObs | null;
  tasks: PlanTask[];
  /** The manifest's `metadata`, whole. */
  metadata: Record<string, unknown>;
  dropped: DroppedGenes[];
  notes: string[];
}

/** The scan records a plan is made of: each read when needed, in input order. */
export interface ScanSource {
  count: number;
  summary(i: number): Promise<ScanSummary>;
  varTable(i: number): Promise<ColumnTable>;
}

export interface AtlasPlanOptions {
  /** The inputs as the user named them, in order (what tasks open). */
  paths: string[];
  /** Values of the source column (default: from the file names). */
  names?: string[];
  /** The column naming each cell's input (default `source` with several inputs, none with one; null: none). */
  sourceColumn?: string | null;
  /** Match genes on this var column instead of the var index. */
  varKey?: string;
  genes?: GeneSpaceOptions;
  obs?: ObsWriteOptions & { obsmFill?: boolean };
  tileSize?: number;
  nChunks?: number;
  level?: number;
  /** Tasks the tiles are shared out to (default 1). */
  tasks?: number;
  read?: Record<string, unknown>;
  /** Extra entries for the manifest's `metadata`. */
  metadata?: Record<string, unknown>;
}

function refuse(message: string, field: string, found?: unknown): DeltacellsError {
  return new DeltacellsError(message, { tag: "InvalidInput", field, found });
}

function positiveInteger(value: number | undefined, what: string, field: string): void {
  if (value !== undefined && (!Number.isSafeInteger(value) || value < 1))
    throw refuse(`${what} must be a positive integer, got ${value}`, field, value);
}

/**
 * Task ranges over `nTiles` tiles cut in units of `unit` tiles (an obs shard, or one tile), `n`
 * tasks as even as the units allow in estimated nonzeros (each input's mean density over its rows).
 * Tasks beyond the units are empty: a job array of any size runs, some tasks writing nothing.
 */
export function taskRanges(
  nCells: number,
  tileSize: number,
  unit: number,
  inputs: { first_cell: number; cells: number; nnz: number }[],
  n: number,
): [number, number][] {
  const nTiles = Math.ceil(nCells / tileSize);
  const nUnits = Math.ceil(nTiles / unit);
  const weight = new Float64Array(nUnits);
  for (const inp of inputs) {
    const density = inp.cells > 0 ? Math.max(inp.nnz / inp.cells, 1e-9) : 0;
    for (let c = inp.first_cell; c < inp.first_cell + inp.cells; ) {
      const u = Math.floor(c / (unit * tileSize));
      const end = Math.min(inp.first_cell + inp.cells, (u + 1) * unit * tileSize);
      weight[u]! += (end - c) * density;
      c = end;
    }
  }
  const total = weight.reduce((a, b) => a + b, 0);
  const cuts = [0];
  let acc = 0;
  let u = 0;
  for (let k = 1; k < n; k++) {
    const target = (total * k) / n;
    while (u < nUnits && acc + weight[u]! / 2 < target) acc += weight[u++]!;
    cuts.push(u);
  }
  cuts.push(nUnits);
  return cuts.slice(0, n).map((c, k) => [Math.min(nTiles, c * unit), Math.min(nTiles, cuts[k + 1]! * unit)]);
}

/** The input rows of cells `[a, b)`. */
export function rowsOf(inputs: PlanInput[], a: number, b: number): PlanTask["rows"] {
  const out: PlanTask["rows"] = [];
  inputs.forEach((inp, input) => {
    const start = Math.max(a, inp.first_cell);
    const end = Math.min(b, inp.first_cell + inp.cells);
    if (start < end) out.push({ input, start: start - inp.first_cell, end: end - inp.first_cell });
  });
  return out;
}

/** The plan's tasks: `n` ranges of whole shards (or tiles, without obs). */
function planTasks(
  inputs: PlanInput[],
  nCells: number,
  tileSize: number,
  unit: number,
  n: number,
): PlanTask[] {
  return taskRanges(nCells, tileSize, unit, inputs, n).map(([t0, t1]) => ({
    tiles: [t0, t1],
    obs_tiles: [t0, t1],
    rows: rowsOf(inputs, t0 * tileSize, Math.min(nCells, t1 * tileSize)),
  }));
}

/**
 * The plan's inputs of `scans`, opened at `paths` and named `names`, with what each gives to the
 * gene space `space`; their first cells from `first` on.
 */
export function planInputs(
  scans: Pick<
    ScanSummary,
    "location" | "format" | "matrixPath" | "nCells" | "nGenes" | "keysSha256" | "identity"
  >[],
  paths: string[],
  names: string[],
  space: { inputNnz: number[]; inputTotal: number[] },
  first: number,
): PlanInput[] {
  let at = first;
  return scans.map((s, i) => {
    const inp: PlanInput = {
      path: paths[i]!,
      location: s.location,
      name: names[i]!,
      format: s.format,
      matrix_path: s.matrixPath,
      cells: s.nCells,
      first_cell: at,
      genes: s.nGenes,
      nnz: space.inputNnz[i]!,
      total: space.inputTotal[i]!,
      keys_sha256: s.keysSha256,
      identity: s.identity,
    };
    at += s.nCells;
    return inp;
  });
}

/** An input as the manifest's `metadata.inputs` lists it. */
export interface InputEntry {
  path: string;
  name?: string;
  format: string;
  matrix_path: string;
  cells: number;
  first_cell: number;
  bytes: number | null;
  mtime: string | null;
}

/** The manifest's entry of a plan's input. */
export function inputEntry(inp: PlanInput): InputEntry {
  return {
    path: inp.location,
    name: inp.name,
    format: inp.format,
    matrix_path: inp.matrix_path,
    cells: inp.cells,
    first_cell: inp.first_cell,
    bytes: inp.identity?.bytes ?? null,
    mtime: inp.identity?.mtime ?? null,
  };
}

/** The plan's id: the SHA-256 of its JSON with an empty id. */
async function planId(plan: AtlasPlan): Promise<string> {
  return (await sha256Hex(new TextEncoder().encode(JSON.stringify({ ...plan, id: "" })))).slice(0, 24);
}

/** Make the plan of an atlas from its scan records (see the module comment), with its gene table. */
export async function makePlan(
  scans: ScanSource,
  opts: AtlasPlanOptions,
): Promise<{ plan: AtlasPlan; varTable: ColumnTable }> {
  const n = scans.count;
  if (n === 0) throw refuse("an atlas needs at least one input", "inputs");
  if (opts.paths.length !== n) throw refuse(`${opts.paths.length} paths for ${n} scanned inputs`, "inputs");
  positiveInteger(opts.tileSize, "tile size", "tile_size");
  positiveInteger(opts.nChunks, "the number of chunks", "n_chunks");
  positiveInteger(opts.tasks, "the number of tasks", "tasks");
  const tilesPerFile = opts.obs?.tilesPerFile ?? DEFAULT_OBS_TILES_PER_FILE;
  positiveInteger(tilesPerFile, "obs tiles per file", "tiles_per_file");
  const names = opts.names ?? sourceNames(opts.paths);
  if (names.length !== n)
    throw refuse(`${names.length} source names for ${n} inputs`, "source_names", names.length);
  const sourceColumn = opts.sourceColumn === undefined ? (n > 1 ? "source" : null) : opts.sourceColumn;
  if (sourceColumn !== null) {
    const seen = new Map<string, number>();
    names.forEach((name, i) => {
      const j = seen.get(name);
      if (j !== undefined) {
        throw refuse(
          `inputs ${j} (${opts.paths[j]}) and ${i} (${opts.paths[i]}) would both be named ${JSON.stringify(name)} in the ${sourceColumn} column; name the inputs with the source names option`,
          "source_names",
          name,
        );
      }
      seen.set(name, i);
    });
  }
  const obsScans: (ObsScan | null)[] = [];
  const light: (Omit<ScanSummary, "keys" | "totals" | "geneNnz" | "obs"> & VarSummary)[] = [];
  const space = await geneSpace(scans, { ...opts.genes, match: opts.varKey !== undefined }, (s) => {
    obsScans.push(s.obs);
    const { keys: _k, totals: _t, geneNnz: _g, obs: _o, ...rest } = s;
    light.push(rest);
  });
  const notes: string[] = [];
  const obs = mergeObs(
    light.map((s, i) => ({ location: s.location, obs: obsScans[i]! })),
    { ...opts.obs, sourceColumn, sourceNames: names },
  );
  if (obs) notes.push(...obs.notes);
  const varTable = await mergeVar(space, light, (i) => scans.varTable(i), opts.varKey, notes);
  const nCells = light.reduce((a, s) => a + s.nCells, 0);
  const entries = light.reduce((a, s) => a + s.entries, 0);
  const tileSize = opts.tileSize ?? autoTileSize(nCells, entries);
  const inputs = planInputs(light, opts.paths, names, space, 0);
  const obsMeta = obs ? obs.metadata : {};
  const converter = `${CONVERTER_NAME} ${CONVERTER_VERSION}`;
  const metadata: Record<string, unknown> =
    n === 1
      ? {
          ...opts.metadata,
          source: inputs[0]!.location,
          source_format: inputs[0]!.format,
          matrix_path: inputs[0]!.matrix_path,
          converter,
          nnz: space.nnz,
          ...obsMeta,
        }
      : {
          ...opts.metadata,
          inputs: inputs.map(inputEntry),
          var_key: opts.varKey ?? null,
          gene_space: opts.genes?.genes ? "declared" : (opts.genes?.join ?? "outer"),
          source_column: sourceColumn,
          converter,
          nnz: space.nnz,
          ...obsMeta,
        };
  const plan: AtlasPlan = {
    format: PLAN_FORMAT,
    version: PLAN_VERSION,
    id: "",
    inputs,
    read: opts.read ?? {},
    var_key: opts.varKey ?? null,
    genes: { matched: space.matched, keys: space.keys, order: Array.from(space.order) },
    n_cells: nCells,
    n_genes: space.keys.length,
    nnz: space.nnz,
    total: space.total,
    tile_size: tileSize,
    n_chunks: opts.nChunks ?? DEFAULT_N_CHUNKS,
    zstd_level: opts.level ?? DEFAULT_LEVEL,
    obs: obs
      ? {
          tiles_per_file: tilesPerFile,
          exclude: opts.obs?.exclude ?? [],
          obsm: opts.obs?.obsm ?? "auto",
          max_categories: opts.obs?.maxCategories ?? DEFAULT_MAX_CATEGORIES,
          columns: obs.columns,
        }
      : null,
    tasks: planTasks(inputs, nCells, tileSize, obs ? tilesPerFile : 1, opts.tasks ?? 1),
    metadata,
    dropped: space.dropped,
    notes,
  };
  plan.id = await planId(plan);
  return { plan, varTable };
}

/** The plan as stored. */
export function encodePlan(plan: AtlasPlan): Uint8Array {
  return new TextEncoder().encode(`${JSON.stringify(plan)}\n`);
}

/** Parse a stored plan, refusing one of another format or version, or whose id does not match it. */
export async function parsePlan(bytes: Uint8Array, object: string): Promise<AtlasPlan> {
  let plan: AtlasPlan;
  try {
    plan = JSON.parse(new TextDecoder().decode(bytes)) as AtlasPlan;
  } catch (cause) {
    throw new DeltacellsError(`${object} is not valid JSON: the plan is damaged; make the plan again`, {
      tag: "FormatError",
      object,
      cause,
    });
  }
  if (plan?.format !== PLAN_FORMAT || plan.version !== PLAN_VERSION) {
    throw new DeltacellsError(
      `${object} is not an atlas plan of version ${PLAN_VERSION} (format ${JSON.stringify(plan?.format)}, version ${JSON.stringify(plan?.version)}); make the plan again with this version`,
      {
        tag: plan?.format === PLAN_FORMAT ? "UnsupportedVersion" : "FormatError",
        object,
        found: plan?.format,
      },
    );
  }
  const id = await planId(plan);
  if (id !== plan.id) {
    throw new DeltacellsError(
      `${object} was modified after it was made (its id is ${plan.id}, its content hashes to ${id}); make the plan again`,
      {
        tag: "InconsistentManifest",
        object,
        field: "id",
        expected: plan.id,
        found: id,
      },
    );
  }
  return plan;
}
