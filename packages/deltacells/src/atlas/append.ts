/**
 * Growing a dataset: new inputs' cells added at the end. The gene space and order stay (a gene the
 * dataset lacks is refused, or dropped and reported); new categories extend the global
 * vocabularies (existing codes keep their meaning), a new obs column is null for the old cells.
 * Written are the new tiles, the old last tile if it was partial (now completed), the obs shards
 * whose content changes (the last one; every one when a column is added or changes type),
 * `obs/schema.json`, `var.parquet` if a new input adds to it, and a new manifest, last.
 *
 * Everything is written first under a staging prefix inside the dataset, the old dataset left as
 * it was (a killed append leaves it valid), with a journal naming the manifest it applies to;
 * then moved into place, new tiles first, the manifest last. Readers opened before see the old
 * version or refuse a changed object (`DatasetChanged`), never a mix. An append killed while
 * moving is completed by the next append, from its journal. The same code as a fresh conversion
 * (the old dataset is the first input, read tile by tile), so the result equals a fresh
 * conversion of all the inputs with the dataset's gene order.
 */
import type { Store } from "@deltacells/storage";
import {
  type DatasetManifest,
  encodeManifest,
  MANIFEST_KEY,
  nnzOf,
  parseManifest,
  tileKey,
  VAR_TABLE_KEY,
} from "../dataset/manifest.js";
import { openDataset } from "../dataset/open.js";
import type { Dataset } from "../dataset/reader.js";
import type { ColumnTable } from "../dataset/source.js";
import { CONVERTER_NAME, CONVERTER_VERSION } from "../dataset/version.js";
import { DeltacellsError } from "../errors.js";
import { sha256Hex } from "../obs/fingerprint.js";
import type { ObsMetadata } from "../obs/prepare.js";
import { DEFAULT_OBS_TILES_PER_FILE, OBS_SCHEMA_KEY, obsShardKey } from "../obs/schema.js";
import { obsManifestFields, obsSchemaText } from "../obs/write.js";
import type { AtlasInputRef, EncodeSettings } from "./build.js";
import { datasetInput } from "./dataset-input.js";
import { type DroppedGenes, geneSpace } from "./genes.js";
import { repeatedKey, sourceNames } from "./keys.js";
import { ATLAS_PREFIX } from "./layout.js";
import { type AtlasObsColumn, mergeObs, type ObsInput } from "./obs-merge.js";
import {
  type AtlasPlan,
  type InputEntry,
  inputEntry,
  PLAN_FORMAT,
  PLAN_VERSION,
  type PlanInput,
  planInputs,
  rowsOf,
} from "./plan.js";
import { PrefixStore } from "./prefix-store.js";
import type { ScanSummary } from "./records.js";
import type { ColumnScan, ObsScan } from "./scan.js";
import { columnScanOf, keysDigest, scanInput } from "./scan.js";
import { runTask } from "./task.js";
import { mergeVar, type VarSummary } from "./var-merge.js";

/** The prefix of an append's staging area inside the dataset. */
export const APPEND_STAGING = ".deltacells-append-";
/** The journal of an append, in its staging area: the manifest it applies to and its inputs. */
const JOURNAL_KEY = "append.json";

export interface AppendOptions extends EncodeSettings {
  /** How new inputs' genes are matched (must be the dataset's own key, its default). */
  varKey?: string;
  /** Drop the new inputs' genes the dataset lacks (reported) instead of refusing them. */
  dropUnlisted?: boolean;
  /**
   * Values of the source column for the new inputs; an absent one (or all) is derived from the
   * input's path (see {@link appendNames}).
   */
  names?: (string | undefined)[];
  obs?: { exclude?: string[]; obsm?: "auto" | string[]; maxCategories?: number; obsmFill?: boolean };
  /** How the new inputs are read (the matrix, the layout). */
  read?: Record<string, unknown>;
  /** Moves a staged object to its place (default: copied, then the staged one deleted); a folder renames. */
  move?: (from: string, to: string) => Promise<void>;
  /** A random id for the staging area (default: from the clock and Math.random). */
  stagingId?: string;
  onProgress?: (p: { phase: "scan" | "tiles" | "move"; done: number; total: number }) => void;
}

/** A part made from the dataset's cells, which an append leaves holding the old cells only. */
export type StalePart = "companion" | "rows" | "stats";

/** A part the manifest named before the append and no longer names: write it again (the CLI's `--sporadik`). */
export interface StaleNote {
  /** The sporadik companion, its rows in embedding order, or the statistics. */
  part: StalePart;
  /** Its folder in the dataset, as the old manifest named it (`sporadik`, `sporadik-rows`, `stats`). */
  path: string;
  /** The note about it, as in `notes`. */
  note: string;
}

export interface AppendResult {
  manifest: DatasetManifest;
  /** Cells added. */
  cells: number;
  /** The objects written or rewritten, in the order they were moved into place. */
  written: string[];
  dropped: DroppedGenes[];
  /** What a person should know, as sentences: merged columns, genes, and the parts in `stale`. */
  notes: string[];
  /**
   * The parts no longer named in the manifest, since they describe the old cells only: a caller
   * that writes one again drops its note by this (the note's wording is no interface).
   */
  stale: StaleNote[];
  /** An append interrupted while moving into place was completed first (its inputs). */
  resumed?: string[];
}

interface Journal {
  format: "deltacells-append";
  version: 1;
  /** SHA-256 of the manifest the append applies to. */
  base: string;
  inputs: string[];
  /** The keys to move, in order, the manifest last. */
  moves: string[];
}

function refuse(
  message: string,
  fields: { object?: string; field?: string; found?: unknown } = {},
): DeltacellsError {
  return new DeltacellsError(message, { tag: "InvalidInput", ...fields });
}

const bytesOf = (s: string) => new TextEncoder().encode(s);

/**
 * The source column's values of a dataset's inputs and of the inputs appended to it. The dataset's
 * are as recorded (or, unrecorded, as their conversion derived them, `sourceNames` of their paths).
 * The new inputs' are `given`'s, else derived as a conversion names its inputs (`sourceNames` of
 * their paths: the file name without extension, parent folders where those repeat); a derived
 * name the dataset has already takes the first free number, `pbmc-2`, `pbmc-3` (the dataset's
 * names are fixed, and the same file appended again has no other folder to tell it apart). A
 * given name the dataset has, or two new inputs named alike, is refused, as a conversion refuses
 * them. Pure.
 */
export function appendNames(
  old: { path: string; name?: string | undefined }[],
  paths: string[],
  given: (string | undefined)[] | undefined,
  sourceColumn: string | null,
): { oldNames: string[]; newNames: string[] } {
  if (given !== undefined && given.length !== paths.length)
    throw refuse(`${given.length} source names for ${paths.length} new inputs`, {
      field: "source_names",
      found: given.length,
    });
  const derivedOld = sourceNames(old.map((o) => o.path));
  const oldNames = old.map((o, i) => o.name ?? derivedOld[i]!);
  const derived = sourceNames(paths);
  const wanted = paths.map((_, i) => given?.[i] ?? derived[i]!);
  const taken = new Set(oldNames);
  // Without a source column the names are the inputs' labels in the metadata only: none is refused.
  if (sourceColumn !== null) {
    const first = new Map<string, number>();
    wanted.forEach((name, i) => {
      const j = first.get(name);
      if (j !== undefined)
        throw refuse(
          `new inputs ${j} (${paths[j]}) and ${i} (${paths[i]}) would both be named ${JSON.stringify(name)} in the ${sourceColumn} column; name the new inputs with the source names option`,
          { field: "source_names", found: name },
        );
      first.set(name, i);
      if (given?.[i] !== undefined && taken.has(name))
        throw refuse(
          `new input ${i} (${paths[i]}) would be named ${JSON.stringify(name)} in the ${sourceColumn} column, as an input of the dataset is; name it otherwise with the source names option`,
          { field: "source_names", found: name },
        );
    });
  }
  const newNames = wanted.map((name) => {
    let free = name;
    // The first number neither the dataset nor another new input is named with.
    for (let k = 2; taken.has(free) || (free !== name && wanted.includes(free)); k++) free = `${name}-${k}`;
    taken.add(free);
    return free;
  });
  return { oldNames, newNames };
}

/** The metadata of an old dataset's inputs: its list, or the one input of a one-input conversion. */

function oldInputs(m: DatasetManifest): InputEntry[] {
  const listed = m.metadata.inputs as InputEntry[] | undefined;
  if (Array.isArray(listed)) return listed;
  return [
    {
      path: String(m.metadata.source ?? "the dataset"),
      format: String(m.metadata.source_format ?? "unknown"),
      matrix_path: String(m.metadata.matrix_path ?? ""),
      cells: m.n_cells,
      first_cell: 0,
      bytes: null,
      mtime: null,
    },
  ];
}

/** An input's entry in the manifest's metadata, as a conversion writes it. */
function entry(e: InputEntry, name: string): InputEntry {
  const { path, format, matrix_path, cells, first_cell, bytes, mtime } = e;
  return { path, name, format, matrix_path, cells, first_cell, bytes, mtime };
}

/** The dataset's obs as the obs merge sees an input (its own columns, source and embeddings in their roles). */
async function datasetObs(ds: Dataset): Promise<ObsScan | null> {
  if (!ds.manifest.has_obs) return null;
  const schema = await ds.obsSchema();
  const md = ds.manifest.metadata as Partial<ObsMetadata> & { source_column?: string | null };
  const embeddings = Object.entries(md.obs_embeddings ?? {}).map(([key, width]) => ({ key, width }));
  const embedded = new Set(
    embeddings.flatMap((e) => Array.from({ length: e.width }, (_, j) => `${e.key}_${j}`)),
  );
  const index = md.obs_index ?? schema.columns[0]!.name;
  const ordered = new Set(md.obs_ordered ?? []);
  const nullable = new Set(md.obs_nullable ?? []);
  const columns: ColumnScan[] = schema.columns
    .filter((c) => c.name !== index && c.name !== md.source_column && !embedded.has(c.name))
    .map((c) => ({
      name: c.name,
      kind: c.kind,
      arrowType: c.arrow_type,
      categories: c.categories,
      ordered: ordered.has(c.name),
      nullable: nullable.has(c.name),
      ...(md.obs_text_from?.[c.name] ? { textFrom: md.obs_text_from[c.name] } : {}),
    }));
  return {
    indexName: md.obs_index_name ?? null,
    indexColumn: index,
    columns,
    available: schema.columns.map((c) => c.name),
    embeddings,
    missingObsm: [],
  };
}

/** The schema change that makes every old shard change: a column added, removed or of another type. */
function shardsChange(
  before: { name: string; kind: string; arrow_type: string }[],
  after: AtlasObsColumn[],
): boolean {
  return (
    before.length !== after.length ||
    before.some(
      (c, i) =>
        c.name !== after[i]!.schema.name ||
        c.kind !== after[i]!.schema.kind ||
        c.arrow_type !== after[i]!.schema.arrow_type,
    )
  );
}

/** Moves the staged objects of `journal` into place, the manifest last, then removes the staging area. */
async function commit(store: Store, prefix: string, journal: Journal, opts: AppendOptions): Promise<void> {
  const move =
    opts.move ??
    (async (from: string, to: string) => {
      if (store.copy) await store.copy(from, to);
      else {
        const bytes = await store.get(from);
        if (bytes === undefined)
          throw new DeltacellsError(`${store.url}/${from} vanished from the staging area`, {
            tag: "NotFound",
            object: `${store.url}/${from}`,
          });
        await store.set(to, bytes);
      }
      await store.delete(from);
    });
  let done = 0;
  for (const key of journal.moves) {
    // Moved already by a commit that was interrupted: its place holds it.
    if ((await store.getRange(`${prefix}/${key}`, { offset: 0, length: 0 })) !== undefined)
      await move(`${prefix}/${key}`, key);
    opts.onProgress?.({ phase: "move", done: ++done, total: journal.moves.length });
  }
  for (const key of await store.list(`${prefix}/`)) await store.delete(key);
}

/** Completes or clears the staging areas of earlier appends: those of the current manifest are committed. */
async function finishEarlier(store: Store, opts: AppendOptions): Promise<string[] | undefined> {
  const current = await store.get(MANIFEST_KEY);
  const base = current && (await sha256Hex(current));
  let resumed: string[] | undefined;
  const staged = await store.list(APPEND_STAGING);
  for (const prefix of new Set(staged.map((k) => k.split("/")[0]!))) {
    const bytes = await store.get(`${prefix}/${JOURNAL_KEY}`);
    const journal = bytes && (JSON.parse(new TextDecoder().decode(bytes)) as Journal);
    if (journal && journal.base === base) {
      await commit(store, prefix, journal, opts);
      resumed = journal.inputs;
    } else {
      // An append killed before its commit (the dataset is as it was), or one whose commit ended.
      for (const k of await store.list(`${prefix}/`)) await store.delete(k);
    }
  }
  return resumed;
}

/**
 * Append `inputs` to the dataset in `store` (see the module comment). The caller holds the
 * dataset's writer lock.
 */
export async function appendToDataset(
  store: Store,
  inputs: AtlasInputRef[],
  opts: AppendOptions,
): Promise<AppendResult> {
  const resumed = await finishEarlier(store, opts);
  if (resumed !== undefined && resumed.join("\n") === inputs.map((i) => i.path).join("\n")) {
    const manifest = parseManifest((await store.get(MANIFEST_KEY))!, `${store.url}/${MANIFEST_KEY}`);
    return {
      manifest,
      cells: 0,
      written: [],
      dropped: [],
      notes: ["an interrupted append of these inputs was completed"],
      stale: [],
      resumed,
    };
  }
  const baseBytes = await store.get(MANIFEST_KEY);
  const ds = await openDataset(store);
  try {
    const result = await stageAndCommit(store, ds, baseBytes!, inputs, opts);
    return resumed ? { ...result, resumed } : result;
  } finally {
    await ds.close();
  }
}

async function stageAndCommit(
  store: Store,
  ds: Dataset,
  baseBytes: Uint8Array,
  inputs: AtlasInputRef[],
  opts: AppendOptions,
): Promise<AppendResult> {
  const m0 = ds.manifest;
  const where = ds.url;
  if (inputs.length === 0) throw refuse("append needs at least one new input", { field: "inputs" });
  const varKey = (m0.metadata.var_key as string | null | undefined) ?? undefined;
  if (opts.varKey !== undefined && opts.varKey !== varKey)
    throw refuse(
      `${where} matches genes on ${varKey === undefined ? "the var index" : `var column ${JSON.stringify(varKey)}`}; its new inputs are matched the same way (leave out the var key option)`,
      { object: where, field: "var_key", found: opts.varKey },
    );
  const table = await ds.varTable();
  const order = await ds.geneOrder();
  if (table === undefined || order === undefined)
    throw refuse(
      `${where} has no var.parquet or gene_order.npy: its genes cannot be matched with new inputs; convert all the inputs anew`,
      { object: where },
    );
  const keys = table.index; // output order; the index is the key (a var-key conversion made it so)
  const twice = repeatedKey(keys);
  if (twice !== undefined)
    throw refuse(
      `${where}: gene ${JSON.stringify(twice)} appears twice in the dataset, so new inputs' genes cannot be matched to it; convert all the inputs anew, matching on a unique var column`,
      { object: where, found: twice },
    );
  const unionKeys = new Array<string>(keys.length);
  order.forEach((u, j) => {
    unionKeys[u] = keys[j]!;
  });

  const prefix = `${APPEND_STAGING}${opts.stagingId ?? `${Date.now().toString(16)}${Math.random().toString(16).slice(2, 10)}`}`;
  const staging = new PrefixStore(store, prefix);
  const paths = inputs.map((i) => i.path);
  // The new inputs, scanned one at a time (their gene tables read back when var is merged).
  const scans: ScanSummary[] = [];
  const tables: ColumnTable[] = [];
  const embeddingKeys = Object.keys((m0.metadata.obs_embeddings as Record<string, number> | undefined) ?? {});
  const obsm = opts.obs?.obsm ?? (embeddingKeys.length ? embeddingKeys : "auto");
  for (let i = 0; i < inputs.length; i++) {
    const opened = await inputs[i]!.open();
    try {
      const scan = await scanInput(opened.source, {
        varKey,
        obs: { exclude: opts.obs?.exclude, obsm, maxCategories: opts.obs?.maxCategories },
        tolerant: true,
        identity: (await inputs[i]!.identity?.()) ?? null,
        blockCells: opts.blockCells,
        signal: opts.signal,
        onProgress: (done) => opts.onProgress?.({ phase: "scan", done, total: opened.source.nCells }),
      });
      tables.push(scan.var);
      const { var: _v, ...summary } = scan;
      scans.push({
        ...summary,
        varIndexName: scan.var.indexName,
        varColumns: scan.var.columns.map(columnScanOf),
      });
    } finally {
      await opened.release();
    }
  }

  const space = await geneSpace(
    { count: scans.length, summary: async (i) => scans[i]! },
    { genes: unionKeys, order: keys, dropUnlisted: opts.dropUnlisted, genesName: `the genes of ${where}` },
  );
  const notes: string[] = [];

  // obs: the dataset is the first input of the merge; its embeddings stay, so every new input needs them.
  const oldObs = await datasetObs(ds);
  const fill = opts.obs?.obsmFill === true;
  for (const e of oldObs?.embeddings ?? []) {
    const lacking = scans.filter(
      (s) => !s.obs?.embeddings.some((x) => x.key === e.key && x.width === e.width),
    );
    if (lacking.length > 0 && !fill)
      throw refuse(
        `${lacking[0]!.location} has no obsm ${JSON.stringify(e.key)} of ${e.width} columns, which the dataset's cells have; pass the obsm fill option to append with nulls for the new cells`,
        { object: lacking[0]!.location, field: "obsm", found: e.key },
      );
  }
  const old = oldInputs(m0);
  const sourceColumn =
    (m0.metadata.source_column as string | null | undefined) ??
    (m0.has_obs || scans.some((s) => s.obs) ? "source" : null);
  const { oldNames, newNames } = appendNames(
    old.map((o) => ({ path: o.path, name: o.name })),
    paths,
    opts.names,
    sourceColumn,
  );
  const names = [...oldNames, ...newNames];
  const obsInputs: ObsInput[] = [
    { location: where, obs: oldObs },
    ...scans.map((s) => ({ location: s.location, obs: s.obs })),
  ];
  const merged = mergeObs(obsInputs, {
    exclude: [],
    obsm,
    obsmFill: fill,
    maxCategories: opts.obs?.maxCategories,
    sourceColumn,
    sourceNames: names,
  });
  if (merged) notes.push(...merged.notes);

  // var: the dataset's table first, new inputs adding only what it does not know.
  const oldVar: VarSummary = {
    location: where,
    varIndexName: table.indexName,
    varColumns: table.columns.map(columnScanOf),
  };
  const varSpace = {
    ...space,
    firstOf: new Int32Array(unionKeys.length),
    rowOf: new Int32Array(unionKeys.length),
  };
  order.forEach((u, j) => {
    varSpace.rowOf[u] = j;
  });
  const filledBy = new Uint8Array(inputs.length + 1);
  const mergedVar = await mergeVar(
    varSpace,
    [
      oldVar,
      ...scans.map((s) => ({ location: s.location, varIndexName: s.varIndexName, varColumns: s.varColumns })),
    ],
    async (i) => (i === 0 ? table : tables[i - 1]!),
    varKey,
    notes,
    filledBy,
  );
  const varChanged =
    filledBy.subarray(1).some((x) => x !== 0) ||
    mergedVar.columns.length !== table.columns.length ||
    mergedVar.columns.some(
      (c, i) => JSON.stringify(columnScanOf(c)) !== JSON.stringify(columnScanOf(table.columns[i]!)),
    );

  // The tiles and shards to write.
  const ts = m0.tile_size;
  const n0 = m0.n_cells;
  const oldTiles = m0.tile_cells.length;
  const t0 = n0 % ts === 0 ? oldTiles : oldTiles - 1;
  const nCells = n0 + scans.reduce((a, s) => a + s.nCells, 0);
  const nTiles = Math.ceil(nCells / ts);
  const K = m0.has_obs ? m0.obs_tiles_per_file! : DEFAULT_OBS_TILES_PER_FILE;
  const oldSchema = oldObs ? (await ds.obsSchema()).columns : [];
  const allShards = merged !== undefined && (!m0.has_obs || shardsChange(oldSchema, merged.columns));
  const u0 = merged === undefined ? t0 : allShards ? 0 : Math.floor(t0 / K) * K;
  // What the rewritten part of the old cells holds: the partial last tile.
  let partialNnz = 0;
  let partialTotal = 0;
  if (t0 < oldTiles) {
    const rows = await ds.cells(t0 * ts, n0);
    partialNnz = rows.indices.length;
    for (let k = 0; k < rows.data.length; k++) partialTotal += rows.data[k]!;
  }
  const datasetRef: PlanInput = {
    path: where,
    location: where,
    name: oldNames[0] ?? "",
    format: "deltacells",
    matrix_path: "tiles",
    cells: n0,
    first_cell: 0,
    genes: keys.length,
    nnz: partialNnz,
    total: partialTotal,
    keys_sha256: await keysDigest(keys),
    identity: null,
  };
  const inputsOfPlan: PlanInput[] = [datasetRef, ...planInputs(scans, paths, newNames, space, n0)];

  const {
    obs_index: _i,
    obs_index_name: _n,
    obs_embeddings: _e,
    obs_ordered: _o,
    obs_nullable: _u,
    obs_text_from: _tf,
    inputs: _in,
    source: _s,
    source_format: _f,
    matrix_path: _m,
    var_key: _vk,
    gene_space: _gs,
    source_column: _sc,
    converter: _c,
    nnz: _z,
    sporadik,
    sporadik_rows: rowsInEmbeddingOrder,
    stats,
    ...extra
  } = m0.metadata;
  const stale: StaleNote[] = [];
  const staleNote = (part: StalePart, path: string, note: string) => {
    stale.push({ part, path, note });
    notes.push(note);
  };
  if (sporadik !== undefined) {
    const path = String(sporadik);
    staleNote(
      "companion",
      path,
      `the sporadik companion (${path}/) holds the old cells only and is no longer named in the manifest: write it again (convert DATASET ... --format sporadik, or the sporadik option)`,
    );
  }
  // Sorted over the old cells' embedding: the new cells are in no row of it.
  if (rowsInEmbeddingOrder !== undefined) {
    const path = String((rowsInEmbeddingOrder as { path?: unknown }).path);
    staleNote(
      "rows",
      path,
      `the rows in embedding order (${path}/) hold the old cells only and are no longer named in the manifest: write them again (append with the sporadik option)`,
    );
  }
  // The statistics are sums over the old cells: readers would refuse them (StaleStats) anyway.
  if (stats !== undefined) {
    const path = String(stats);
    staleNote(
      "stats",
      path,
      `the statistics (${path}/) describe the old cells only and are no longer named in the manifest: compute them again (deltacells stats DATASET, or the sporadik option)`,
    );
  }
  const metadata: Record<string, unknown> = {
    ...extra,
    inputs: [...old.map((o, i) => entry(o, oldNames[i]!)), ...inputsOfPlan.slice(1).map(inputEntry)],
    var_key: varKey ?? null,
    gene_space: (m0.metadata.gene_space as string | undefined) ?? "outer",
    source_column: sourceColumn,
    converter: `${CONVERTER_NAME} ${CONVERTER_VERSION}`,
    nnz: ((m0.metadata.nnz as number | undefined) ?? nnzOf(m0)) + space.nnz,
    ...(merged ? merged.metadata : {}),
  };
  const plan: AtlasPlan = {
    format: PLAN_FORMAT,
    version: PLAN_VERSION,
    id: "append",
    inputs: inputsOfPlan,
    read: opts.read ?? {},
    var_key: varKey ?? null,
    genes: { matched: true, keys: unionKeys, order: Array.from(order) },
    n_cells: nCells,
    n_genes: keys.length,
    nnz: partialNnz + space.nnz,
    total: partialTotal + space.total,
    tile_size: ts,
    n_chunks: m0.n_chunks,
    zstd_level: m0.zstd_level,
    obs: merged
      ? {
          tiles_per_file: K,
          exclude: opts.obs?.exclude ?? [],
          obsm: Array.isArray(obsm) ? obsm : "auto",
          max_categories: opts.obs?.maxCategories ?? 20_000,
          columns: merged.columns,
        }
      : null,
    tasks: [{ tiles: [t0, nTiles], obs_tiles: [u0, nTiles], rows: rowsOf(inputsOfPlan, u0 * ts, nCells) }],
    metadata,
    dropped: space.dropped,
    notes,
  };
  const source = await datasetInput(ds, table);
  const record = await runTask(staging, plan, 0, {
    open: async (_, i) => (i === 0 ? { source, release: async () => {} } : inputs[i - 1]!.open()),
    encoder: opts.encoder,
    compress: opts.obsCompress ?? opts.compress,
    inFlight: opts.inFlight,
    blockCells: opts.blockCells,
    signal: opts.signal,
    onProgress: (p) => opts.onProgress?.({ phase: "tiles", done: p.cellsDone, total: p.nCells }),
  });
  if (record.nnz !== plan.nnz || record.total !== plan.total)
    throw new DeltacellsError(
      `${where}: the append wrote ${record.nnz} nonzeros and ${record.total} counts, ${plan.nnz} and ${plan.total} were due; an input changed while it was read`,
      { tag: "InconsistentManifest", object: where },
    );

  // The new manifest: the old tiles and shards kept, the written ones after them.
  const tiles = record.tiles;
  const tileCells = [...m0.tile_cells.slice(0, t0), ...tiles.map((t) => t.cells)];
  const base = {
    ...m0,
    n_cells: nCells,
    tile_cells: tileCells,
    tile_nnz: [...m0.tile_nnz.slice(0, t0), ...tiles.map((t) => t.nnz)],
    tile_bytes: [...m0.tile_bytes.slice(0, t0), ...tiles.map((t) => t.bytes)],
  };
  // New tiles first (no manifest names them yet), then the rewritten old one.
  const moves = [
    ...tiles.filter((t) => t.index >= oldTiles).map((t) => tileKey(t.index)),
    ...tiles.filter((t) => t.index < oldTiles).map((t) => tileKey(t.index)),
  ];
  let manifest: DatasetManifest;
  if (merged) {
    const schemaText = obsSchemaText(merged.columns.map((c) => c.schema));
    const s0 = u0 / K;
    const shards = [
      ...(m0.obs_shard_bytes ?? [])
        .slice(0, s0)
        .map((bytes, s) => ({ bytes, sha256: m0.obs_shard_sha256![s]! })),
      ...record.shards,
    ];
    const {
      has_obs: _h,
      obs_tiles_per_file: _t,
      obs_shard_bytes: _b,
      obs_shard_sha256: _sh,
      obs_fingerprint: _fp,
      metadata: _md,
      ...rest
    } = base;
    manifest = { ...rest, ...(await obsManifestFields(schemaText, K, tileCells, shards)), metadata };
    await staging.set(OBS_SCHEMA_KEY, bytesOf(schemaText));
    moves.push(...record.shards.map((s) => obsShardKey(s.index)), OBS_SCHEMA_KEY);
  } else {
    manifest = { ...base, metadata };
  }
  if (varChanged) {
    const { encodeVarTable } = await import("../dataset/var-table.js");
    await staging.set(VAR_TABLE_KEY, encodeVarTable(mergedVar, order, opts.compress));
    moves.push(VAR_TABLE_KEY);
  }
  for (const key of await staging.list(ATLAS_PREFIX)) await staging.delete(key);
  await staging.set(MANIFEST_KEY, encodeManifest(manifest));
  moves.push(MANIFEST_KEY);
  const journal: Journal = {
    format: "deltacells-append",
    version: 1,
    base: await sha256Hex(baseBytes),
    inputs: paths,
    moves,
  };
  await staging.set(JOURNAL_KEY, bytesOf(`${JSON.stringify(journal)}\n`));
  await commit(store, prefix, journal, opts);
  return { manifest, cells: nCells - n0, written: moves, dropped: space.dropped, notes, stale };
}
