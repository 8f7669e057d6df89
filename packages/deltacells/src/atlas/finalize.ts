/**
 * Finalizing an atlas: every task's completion record is checked against the plan and against the
 * objects it lists (each tile's header: size, CRC-32, cells and nonzeros, and that the object is
 * that long; each obs shard's SHA-256), and the nonzeros and counts of all tasks against the
 * plan's. Only when every task is there and consistent are `obs/schema.json` and `manifest.json`
 * written, the manifest last; then the build's own objects are removed. Running it again after a
 * success finds the manifest and changes nothing.
 */
import type { ReadableStore, WritableStore } from "@deltacells/storage";
import { HEADER_SIZE, readTileHeader } from "../codec/format.js";
import {
  DATASET_FORMAT,
  DATASET_VERSION,
  type DatasetManifest,
  encodeManifest,
  MANIFEST_KEY,
  parseManifest,
  tileKey,
} from "../dataset/manifest.js";
import { DeltacellsError } from "../errors.js";
import { sha256Hex } from "../obs/fingerprint.js";
import { OBS_SCHEMA_KEY, obsShardKey } from "../obs/schema.js";
import { obsManifestFields, obsSchemaText } from "../obs/write.js";
import { ATLAS_PREFIX, taskKey } from "./layout.js";
import type { AtlasPlan } from "./plan.js";
import { readPlan } from "./store.js";
import { TASK_FORMAT, TASK_VERSION, type TaskRecord } from "./task.js";

/** Why a task is not done. */
export interface TaskProblem {
  task: number;
  problem: "missing" | "inconsistent";
  /** What is wrong, for the user. */
  reason: string;
}

/** `finalize` refused: some tasks are missing or inconsistent (see `problems`); nothing was written. */
export class AtlasIncomplete extends DeltacellsError {
  readonly problems: TaskProblem[];
  /** The plan's number of tasks. */
  readonly total: number;
  constructor(message: string, options: { object: string; problems: TaskProblem[]; total: number }) {
    super(message, {
      tag: "IncompleteDataset",
      object: options.object,
      field: "tasks",
      found: options.problems,
    });
    this.problems = options.problems;
    this.total = options.total;
  }

  /** The message (one line), `rerun(tasks)` saying how to run those tasks again (a CLI gives its command). */
  static describe(
    where: string,
    problems: TaskProblem[],
    total: number,
    rerun: (tasks: number[]) => string,
  ): string {
    const listed = problems.slice(0, 10).map((p) => `task ${p.task}: ${p.reason}`);
    const more = problems.length > 10 ? `; and ${problems.length - 10} more` : "";
    const one = problems.length === 1;
    return `${where}: ${problems.length} of the ${total} tasks ${one ? "is" : "are"} not done, so the atlas was not finalized (nothing was written): ${listed.join("; ")}${more}. Run ${one ? "it" : "them"} again: ${rerun(problems.map((p) => p.task))}`;
  }
}

export interface FinalizeOptions {
  signal?: AbortSignal;
  /** Object checks at once (default 8: a bucket answers each in a round trip). */
  concurrency?: number;
  /** Tasks checked so far. */
  onProgress?: (checked: number, total: number) => void;
}

export interface FinalizeResult {
  manifest: DatasetManifest;
  /** Bytes of the dataset's objects (tiles, obs, gene files, manifest). */
  bytes: number;
  /** False when the atlas was finalized before (nothing was done). */
  finalized: boolean;
  plan: AtlasPlan | undefined;
}

function parseRecord(bytes: Uint8Array): TaskRecord | undefined {
  try {
    const r = JSON.parse(new TextDecoder().decode(bytes)) as TaskRecord;
    return r?.format === TASK_FORMAT && r.version === TASK_VERSION ? r : undefined;
  } catch {
    return undefined;
  }
}

/** The first thing wrong with `record` as task `t` of `plan`, not looking at the objects. */
function recordProblem(plan: AtlasPlan, t: number, record: TaskRecord): string | undefined {
  if (record.plan !== plan.id)
    return `its record is of another plan (${record.plan}, this one is ${plan.id})`;
  const task = plan.tasks[t]!;
  const [t0, t1] = task.tiles;
  const nTiles = Math.ceil(plan.n_cells / plan.tile_size);
  if (record.tiles.length !== t1 - t0)
    return `its record lists ${record.tiles.length} tiles, its range has ${t1 - t0}`;
  for (let k = 0; k < record.tiles.length; k++) {
    const tile = record.tiles[k]!;
    const cells = tile.index === nTiles - 1 ? plan.n_cells - (nTiles - 1) * plan.tile_size : plan.tile_size;
    if (tile.index !== t0 + k || tile.cells !== cells)
      return `its record lists tile ${tile.index} of ${tile.cells} cells where tile ${t0 + k} of ${cells} was due`;
  }
  if (plan.obs) {
    const k = plan.obs.tiles_per_file;
    const [u0] = task.obs_tiles;
    const first = Math.floor(u0 / k);
    const want = t1 > u0 ? Math.ceil(t1 / k) - first : 0;
    if (record.shards.length !== want || record.shards.some((s, i) => s.index !== first + i))
      return `its record lists obs shards ${record.shards.map((s) => s.index).join(", ") || "none"}, shards ${first} .. ${first + want - 1} were due`;
  }
  return undefined;
}

/** The first thing wrong with the objects `record` lists, or undefined. */
async function objectProblem(
  store: ReadableStore,
  record: TaskRecord,
  concurrency: number,
  signal?: AbortSignal,
): Promise<string | undefined> {
  const checks: (() => Promise<string | undefined>)[] = [
    ...record.tiles.map((tile) => async () => {
      const key = tileKey(tile.index);
      const head = await store
        .getRange(key, { offset: 0, length: HEADER_SIZE }, { signal })
        .catch(() => undefined);
      if (head === undefined) return `${key} is missing`;
      let h: ReturnType<typeof readTileHeader>;
      try {
        h = readTileHeader(head, key);
      } catch (err) {
        return `${key} is damaged (${(err as Error).message})`;
      }
      if (
        h.totalSize !== tile.bytes ||
        h.crc32 !== tile.crc32 ||
        h.nCells !== tile.cells ||
        h.nnz !== tile.nnz
      )
        return `${key} is not the tile its record lists (another run's, or rewritten since)`;
      // A shorter object fails this read: the whole tile is there.
      const tail = await store
        .getRange(key, { offset: tile.bytes - 1, length: 1 }, { signal })
        .catch(() => undefined);
      return tail === undefined ? `${key} is shorter than its ${tile.bytes} bytes` : undefined;
    }),
    ...record.shards.map((shard) => async () => {
      const key = obsShardKey(shard.index);
      const bytes = await store.get(key, { signal });
      if (bytes === undefined) return `${key} is missing`;
      if (bytes.length !== shard.bytes || (await sha256Hex(bytes)) !== shard.sha256)
        return `${key} is not the shard its record lists (another run's, or rewritten since)`;
      return undefined;
    }),
  ];
  let next = 0;
  let found: string | undefined;
  const worker = async () => {
    while (found === undefined && next < checks.length) {
      const problem = await checks[next++]!();
      if (problem !== undefined) found ??= problem;
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, checks.length) }, worker));
  return found;
}

/** The dataset's manifest from the plan and the task records. */
async function assemble(
  plan: AtlasPlan,
  records: TaskRecord[],
): Promise<{ manifest: DatasetManifest; schemaText?: string }> {
  const tiles = records.flatMap((r) => r.tiles);
  const base = {
    format: DATASET_FORMAT,
    version: DATASET_VERSION,
    n_cells: plan.n_cells,
    n_genes: plan.n_genes,
    tile_size: plan.tile_size,
    tile_cells: tiles.map((t) => t.cells),
    tile_nnz: tiles.map((t) => t.nnz),
    tile_bytes: tiles.map((t) => t.bytes),
    n_chunks: plan.n_chunks,
    zstd_level: plan.zstd_level,
    has_gene_order: true,
    has_var_names: true,
    has_var_table: true,
  } as const;
  if (!plan.obs) return { manifest: { ...base, has_obs: false, metadata: plan.metadata } };
  const schemaText = obsSchemaText(plan.obs.columns.map((c) => c.schema));
  const shards = records.flatMap((r) => r.shards);
  const obs = await obsManifestFields(schemaText, plan.obs.tiles_per_file, base.tile_cells, shards);
  return { manifest: { ...base, ...obs, metadata: plan.metadata }, schemaText };
}

/** Finalize the atlas in `store` (see the module comment). */
export async function finalizeAtlas(
  store: ReadableStore & WritableStore & { url?: string },
  opts: FinalizeOptions = {},
): Promise<FinalizeResult> {
  const where = store.url ?? "the atlas";
  const plan = await readPlan(store, opts.signal);
  if (plan === undefined) {
    const existing = await store.get(MANIFEST_KEY, { signal: opts.signal });
    if (existing !== undefined) {
      const manifest = parseManifest(existing, `${where}/${MANIFEST_KEY}`);
      await removeBuild(store);
      return { manifest, bytes: 0, finalized: false, plan: undefined };
    }
    throw new DeltacellsError(
      `${where} has no atlas plan (${ATLAS_PREFIX}plan.json) and no manifest: make the plan first`,
      {
        tag: "NotFound",
        object: `${where}/${ATLAS_PREFIX}plan.json`,
      },
    );
  }
  const problems: TaskProblem[] = [];
  const records: TaskRecord[] = [];
  const concurrency = Math.max(1, opts.concurrency ?? 8);
  for (let t = 0; t < plan.tasks.length; t++) {
    opts.signal?.throwIfAborted();
    const bytes = await store.get(taskKey(t), { signal: opts.signal });
    const record = bytes && parseRecord(bytes);
    if (!record) {
      problems.push({
        task: t,
        problem: "missing",
        reason: bytes
          ? "its completion record is damaged"
          : "no completion record (not run, or not finished)",
      });
    } else {
      const reason =
        recordProblem(plan, t, record) ?? (await objectProblem(store, record, concurrency, opts.signal));
      if (reason !== undefined) problems.push({ task: t, problem: "inconsistent", reason });
      else records.push(record);
    }
    opts.onProgress?.(t + 1, plan.tasks.length);
  }
  if (problems.length === 0) {
    const nnz = records.reduce((a, r) => a + r.nnz, 0);
    const total = records.reduce((a, r) => a + r.total, 0);
    if (nnz !== plan.nnz || total !== plan.total) {
      throw new DeltacellsError(
        `${where}: the tasks wrote ${nnz} nonzeros and ${total} counts, the inputs held ${plan.nnz} and ${plan.total} when the plan was made; an input changed in between: make the plan again`,
        {
          tag: "InconsistentManifest",
          object: where,
          field: "nnz",
          expected: [plan.nnz, plan.total],
          found: [nnz, total],
        },
      );
    }
  }
  if (problems.length > 0) {
    throw new AtlasIncomplete(
      AtlasIncomplete.describe(
        where,
        problems,
        plan.tasks.length,
        (tasks) => `tasks ${tasks.join(", ")} of the plan`,
      ),
      { object: where, problems, total: plan.tasks.length },
    );
  }
  const { manifest, schemaText } = await assemble(plan, records);
  const nTiles = manifest.tile_cells.length;
  const nShards = manifest.obs_shard_bytes?.length ?? 0;
  // Objects of an earlier, larger dataset (or build) at this prefix would be taken for ours by a listing.
  for (const key of await store.list("tiles/")) {
    const m = /^tiles\/tile_(\d{6})\.dct$/.exec(key);
    if (m && Number(m[1]) >= nTiles) await store.delete(key);
  }
  for (const key of await store.list("obs/")) {
    const m = /^obs\/obs_(\d{4,})\.parquet$/.exec(key);
    if ((m && Number(m[1]) >= nShards) || (!plan.obs && key === OBS_SCHEMA_KEY)) await store.delete(key);
  }
  let bytes =
    manifest.tile_bytes.reduce((a, b) => a + b, 0) +
    (manifest.obs_shard_bytes ?? []).reduce((a, b) => a + b, 0);
  if (schemaText !== undefined) {
    const schema = new TextEncoder().encode(schemaText);
    await store.set(OBS_SCHEMA_KEY, schema, { signal: opts.signal });
    bytes += schema.length;
  }
  const encoded = encodeManifest(manifest);
  await store.set(MANIFEST_KEY, encoded, { signal: opts.signal });
  bytes += encoded.length;
  await removeBuild(store);
  return { manifest, bytes, finalized: true, plan };
}

/** Remove the build's own objects (plan, scan and task records). */
async function removeBuild(store: WritableStore): Promise<void> {
  for (const key of await store.list(ATLAS_PREFIX)) await store.delete(key);
}
