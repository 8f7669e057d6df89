/**
 * `deltacells stream DATASET`: the training loader's batches on stdout as an Arrow IPC stream, so
 * a training job in Python (examples/python/) gets shuffled, sharded, resumable mini-batches
 * decoded at the codec's speed without a reimplementation.
 */
import { fstatSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import type { Batch, MixingMeter, ObsColumnSchema, SharedBatchesLayout, TileDecoder } from "@deltacells/core";
import { DEFAULT_BATCH_SIZE, DEFAULT_BUFFER_TILES, poolTileDecoder } from "@deltacells/core/internal";
import { type Common, commonHelp, intOption, parse, UsageError } from "../args.js";
import type { CommandResult } from "../command.js";
import type { Locations } from "../locations.js";
import { writeFileAtomically } from "../output-file.js";
import type { CliIo } from "../run.js";

/**
 * The modules the stream needs beyond parsing its arguments: the dataset reader and the loader,
 * the obs cache, apache-arrow. Loaded once the pool's workers are starting (their start-up, a
 * thread each and the codec's modules, then overlaps this thread's loading of these).
 */
async function loadModules() {
  const [core, node, io, arrow, control] = await Promise.all([
    import("@deltacells/core"),
    import("@deltacells/core/node"),
    import("../io.js"),
    import("@deltacells/core/arrow"),
    import("./shm-control.js"),
  ]);
  return {
    createLoader: core.createLoader,
    mixingMeter: core.mixingMeter,
    formatMixing: core.formatMixing,
    DeltacellsError: core.DeltacellsError,
    ShmControl: control.ShmControl,
    cacheLocalizer: node.cacheLocalizer,
    openCountedDataset: io.openCountedDataset,
    ArrowBatches: arrow.ArrowBatches,
    endBatch: arrow.endBatch,
    epochBatch: arrow.epochBatch,
    MAX_LIST_VALUES: arrow.MAX_LIST_VALUES,
    ArrowOutput: arrow.ArrowOutput,
    ReaderGone: arrow.ReaderGone,
  };
}

/** The output is an Arrow stream, never JSON. */
export const STREAM_COMMON: Common = { json: false };

export const STREAM_HELP = `usage: deltacells stream DATASET [options] | CONSUMER

Write one epoch of shuffled mini-batches of a dataset to stdout as an Arrow IPC stream, for a
training job in another process (examples/python/ wraps it as a PyTorch IterableDataset). DATASET
is a local folder or a URL (s3://bucket/prefix, https://...). One record batch per mini-batch, one
row per cell:
  cell      int64: the cell's index in the dataset
  indices   list<int32>: the columns of the cell's nonzeros (not with --dense)
  counts    list<int32>: their counts (list<float32> with --float32); with --dense a
            fixed_size_list<float32> of every column
  then one column per --obs name (categories as dictionaries, numbers in their own type).
Columns are the genes in the order of the input the dataset was converted from (gene_order.npy
undone) or, with --genes, of that file. A cell's indices follow the dataset's column order, so
they do not increase (valid CSR for scipy; sort before torch): --sort-indices sorts them, at a
cost. The schema's metadata holds "deltacells.genes" (JSON: the gene of each column) and
"deltacells.stream" (JSON: dataset, settings, batches per rank, this rank's padded and dropped
cells, sorted_indices); each batch's metadata "deltacells.batch" its epoch, index, and the padded
rows at its end. A complete epoch ends with one more record batch, of no rows, whose metadata
"deltacells.end" holds {"epoch", "rank", "world_size", "batches", "rows"} (the batches and rows
written before it): a stream that ends without it is part of an epoch (the command was killed),
even where the reader saw a clean end.

The batches are a function of --seed, --epoch, --batch-size, --rank/--world-size and --drop-last
only. Each rank reads only its own tiles, every rank writes the same number of batches (a rank
one cell short repeats one of its cells, or with --drop-last the remainder is dropped) and the
ranks together cover every cell exactly once. --start-batch K continues a stopped job with the
same batches from K on, without reading the tiles before.

With --order elastic the epoch is one sequence of global batches, a function of --seed, --epoch,
--batch-size, --buffer-tiles, --lanes and --drop-last only: rank R of W writes global batches R,
R + W, ... (each batch's metadata says which: "global_index"), so the ranks of any world size
dividing --lanes write the same batches between them. A job stopped after K batches per rank on W ranks resumes on
any other such world size with --start-global-batch K*W: the global batches from there on, each
once; a rank left one short ends with a padding batch (every row padded, repeating global batch
"global_index" - lanes). The stream's and the end batch's metadata then also hold "order",
"lanes", "global_batches", "start_global_batch" and "first_global_batch".

Errors go to stderr with exit code 1, never into the stream. A consumer that closes the stream
early ends the command quietly (exit code 0). stdout must be a pipe or a file, not a terminal.

With --shm-fd FD the batches' indices and counts are made in the file open as descriptor FD (a
memfd, or a file on tmpfs, that the consumer maps; the command sizes it), a ring of slots, with
their cells and category codes, and each record batch's "deltacells.batch" metadata names the
"slot" and its "seq": a record batch of no rows with the batch's "size" when every --obs column is
a category (or there is none), else one carrying the cells and obs, its lists empty;
"deltacells.stream" describes the file ("shm": slots, slot_bytes, bytes, capacity, cells, values,
offsets, obs, min_free). A slot is written again only once
the consumer has released it on stdin ("release SLOT SEQ" lines; "spill" when it holds so many
that the next batch has no slot: the next ones come whole in the stream until one is released),
and a batch denser than a slot comes whole in the stream. The end of stdin stops the command.
With --serve the command goes on after an epoch's end batch with the epoch asked for ("epoch E"
on stdin), in the same Arrow stream: a record batch of no rows whose "deltacells.epoch" metadata
says what that epoch holds, then its batches and its end batch. docs/python.md describes the
protocol.

options:
  --batch-size N     cells per batch (default ${DEFAULT_BATCH_SIZE})
  --no-shuffle       each rank's cells in dataset order
  --seed S           the shuffle's seed (default 0)
  --epoch E          the epoch (default 0); every epoch is shuffled differently
  --rank R --world-size W
                     write shard R of W (default 0 of 1)
  --drop-last        drop the remainder instead of padding
  --obs A,B          obs columns to attach (see \`deltacells obs DATASET\`)
  --genes FILE       gene names, one per line: only these columns, in this order
  --start-batch K    skip the epoch's first K batches
  --order ORDER      default (each rank shuffles its own share) or elastic (one global batch
                     sequence whatever the world size; see above)
  --lanes L          elastic: the lanes the sequence interleaves (default the world size): every
                     world size dividing L writes the same batches; a rank holds L/W windows
  --start-global-batch N
                     elastic: skip the epoch's first N global batches (consumed at any world size)
  --report-mixing COLUMN[=FILE]
                     after the epoch, how mixed the batches were along the obs label COLUMN
                     (entropy per batch against the dataset's and random batches', labels and
                     tiles per batch): on stderr, or as JSON in FILE
  --sort-indices     each cell's indices increasing (canonical CSR; slower)
  --dense            counts as dense float32 rows (pair with --genes: 4 bytes per gene and cell)
  --float32          counts as list<float32> (exact below 2^24), decoded as such: what a model
                     takes, with no conversion on the reading side
  --threads N        decoding threads (default: the number of cores)
  --buffer-tiles N   tiles whose cells are shuffled together (default ${DEFAULT_BUFFER_TILES})
  --memory-cap MIB   memory for tiles in flight and batch buffers (default 512)
  --cache-dir DIR    the obs cache (default as for \`deltacells obs\`)
  --shm-fd FD        make the batches in the shared file open as FD (see above; not with --dense)
  --ring N           slots in that file (default: the batch buffers the loader holds at once)
  --serve            after each epoch's end batch, stream the next epoch the consumer asks for
                     ("epoch E" on stdin), its loader, pool and shared batches kept (with --shm-fd)
  --serve-idle S     with --serve, exit once no epoch was asked for in S seconds (default 300)
${commonHelp(STREAM_COMMON)}`;

/** Gene names of a `--genes` file: one per line, blank lines ignored. */
function readGeneNames(path: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new UsageError(`--genes ${path}: cannot read it (${(err as Error).message})`);
  }
  const names = text
    .split("\n")
    .map((l) => l.replace(/\r$/, ""))
    .filter((l) => l.trim().length > 0);
  if (names.length === 0) throw new UsageError(`--genes ${path} names no gene: give one gene name per line`);
  return names;
}

function list(spec: string): string[] {
  return spec
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** The options of `deltacells stream` besides the shared ones (args.ts). */
export const STREAM_OPTIONS = {
  "batch-size": { type: "string" },
  "no-shuffle": { type: "boolean" },
  seed: { type: "string" },
  epoch: { type: "string" },
  rank: { type: "string" },
  "world-size": { type: "string" },
  "drop-last": { type: "boolean" },
  obs: { type: "string" },
  genes: { type: "string" },
  "start-batch": { type: "string" },
  order: { type: "string" },
  lanes: { type: "string" },
  "start-global-batch": { type: "string" },
  "report-mixing": { type: "string" },
  dense: { type: "boolean" },
  float32: { type: "boolean" },
  "sort-indices": { type: "boolean" },
  threads: { type: "string" },
  "buffer-tiles": { type: "string" },
  "memory-cap": { type: "string" },
  "cache-dir": { type: "string" },
  "shm-fd": { type: "string" },
  ring: { type: "string" },
  serve: { type: "boolean" },
  "serve-idle": { type: "string" },
} as const;

export async function stream(
  argv: string[],
  io?: Pick<CliIo, "binary" | "stderr" | "control">,
): Promise<CommandResult> {
  const sink = io?.binary ?? process.stdout;
  const stderr = io?.stderr ?? process.stderr;
  const { values, positionals, locations } = parse(argv, STREAM_OPTIONS, ["DATASET"], STREAM_COMMON);
  if (values.help) return { text: STREAM_HELP };
  if (sink.isTTY)
    throw new UsageError(
      "stdout is a terminal: the batches are a binary Arrow stream, so pipe them into a program (deltacells stream DATASET | python train.py) or redirect them to a file",
    );
  const batchSize = intOption(values, "batch-size", DEFAULT_BATCH_SIZE, 1, 1 << 24)!;
  const rank = intOption(values, "rank", undefined, 0);
  const worldSize = intOption(values, "world-size", undefined, 1);
  if ((rank === undefined) !== (worldSize === undefined))
    throw new UsageError("--rank and --world-size go together: give both (e.g. --rank 0 --world-size 4)");
  if (rank !== undefined && worldSize !== undefined && rank >= worldSize)
    throw new UsageError(
      `--rank ${rank} is not below --world-size ${worldSize}: ranks are 0 .. ${worldSize - 1}`,
    );
  const dense = values.dense === true;
  const obs = typeof values.obs === "string" ? list(values.obs) : [];
  if (typeof values.obs === "string" && obs.length === 0)
    throw new UsageError(`--obs needs column names, got ${JSON.stringify(values.obs)}`);
  const genes = typeof values.genes === "string" ? readGeneNames(values.genes) : undefined;
  const threads = intOption(values, "threads", availableParallelism(), 1, 256)!;
  const memoryCap = intOption(values, "memory-cap", undefined, 1, 1 << 30);
  const epoch = intOption(values, "epoch", 0, 0)!;
  const seed = intOption(values, "seed", 0, 0)!;
  const startBatch = intOption(values, "start-batch", undefined, 0);
  const order = orderOf(values.order);
  const lanes = intOption(values, "lanes", undefined, 1);
  const startGlobalBatch = intOption(values, "start-global-batch", undefined, 0);
  if (order !== "elastic" && lanes !== undefined)
    throw new UsageError("--lanes applies to --order elastic: add --order elastic, or leave --lanes out");
  if (order !== "elastic" && startGlobalBatch !== undefined)
    throw new UsageError(
      "--start-global-batch applies to --order elastic; in the default order use --start-batch",
    );
  if (startBatch !== undefined && startGlobalBatch !== undefined)
    throw new UsageError(
      "--start-batch and --start-global-batch say the same thing: give one (K batches per rank on W ranks is --start-global-batch K*W)",
    );
  const mixing = mixingOf(values["report-mixing"]);
  const shm = shmOptions(values, dense);
  const serve = serveOptions(values, shm !== undefined);
  const settings = {
    batchSize,
    rank,
    worldSize,
    dense,
    obs,
    genes,
    memoryCap,
    epoch,
    seed,
    startBatch,
    order,
    lanes,
    startGlobalBatch,
    mixing,
    stderr,
    shm,
    serve,
  };

  // The decoding workers start first: the rest of the command's modules load meanwhile.
  const pool = poolTileDecoder(threads);
  pool.start();
  try {
    return await streamOn(
      locations,
      pool.decoder,
      positionals[0]!,
      values,
      sink,
      settings,
      io?.control ?? process.stdin,
    );
  } finally {
    await pool.close();
  }
}

type Values = ReturnType<typeof parse>["values"];

/** `--order`: default or elastic. */
function orderOf(v: unknown): "default" | "elastic" {
  if (v === undefined || v === "default" || v === "elastic") return v ?? "default";
  throw new UsageError(`--order ${String(v)}: expected default or elastic`);
}

/** `--report-mixing COLUMN[=FILE]`. */
function mixingOf(v: unknown): { column: string; file: string | undefined } | undefined {
  if (typeof v !== "string") return undefined;
  const at = v.indexOf("=");
  const column = at < 0 ? v : v.slice(0, at);
  const file = at < 0 ? undefined : v.slice(at + 1);
  if (column.length === 0 || file === "")
    throw new UsageError(
      `--report-mixing ${v}: expected an obs column, optionally =FILE (e.g. --report-mixing cell_type=mixing.json)`,
    );
  return { column, file };
}

/** `--shm-fd` and `--ring`, checked: the descriptor must be open. */
function shmOptions(values: Values, dense: boolean): Settings["shm"] {
  const fd = intOption(values, "shm-fd", undefined, 0, 1 << 20);
  const ring = intOption(values, "ring", undefined, 1, 1 << 16);
  if (fd === undefined) {
    if (ring !== undefined) throw new UsageError("--ring applies to --shm-fd: give both, or neither");
    return undefined;
  }
  if (dense) throw new UsageError("--shm-fd carries CSR batches: leave out --dense (or --shm-fd)");
  try {
    fstatSync(fd);
  } catch (err) {
    throw new UsageError(`--shm-fd ${fd} is not an open file descriptor (${(err as Error).message})`);
  }
  return { fd, ring };
}

/** `make()`, a refusal of `--ring` as too small said as a usage mistake naming the flag. */
async function ringChecked<T>(ring: number | undefined, make: () => Promise<T>): Promise<T> {
  try {
    return await make();
  } catch (err) {
    const e = err as { field?: string; expected?: unknown; message?: string };
    if (ring === undefined || e.field !== "sharedBatches.slots") throw err;
    const least = String(e.expected).replace(">= ", "");
    throw new UsageError(
      `--ring ${ring} is too few slots: the loader needs ${Number(least) - 1} free to finish a batch while the consumer holds one; give --ring ${least} or more, or leave it out`,
    );
  }
}

/** `--serve` and `--serve-idle`, checked: they need the consumer's messages of `--shm-fd`. */
function serveOptions(values: Values, shm: boolean): Settings["serve"] {
  const idleSeconds = intOption(values, "serve-idle", 300, 1, 86_400)!;
  if (values.serve !== true) {
    if (values["serve-idle"] !== undefined) throw new UsageError("--serve-idle applies to --serve");
    return undefined;
  }
  if (!shm) throw new UsageError("--serve takes the next epochs asked for on stdin: give --shm-fd too");
  if (values["report-mixing"] !== undefined)
    throw new UsageError("--report-mixing reports one epoch: leave out --serve (or --report-mixing)");
  return { idleSeconds };
}

/** The shared batch file's layout in the stream's metadata (snake_case, as the rest of it). */
function layoutInfo(l: SharedBatchesLayout) {
  return {
    slots: l.slots,
    slot_bytes: l.slotBytes,
    bytes: l.bytes,
    capacity: l.capacity,
    cells: l.cells,
    values: l.values,
    offsets: l.offsets,
    obs: l.obs,
    min_free: l.minFree,
  };
}

interface Settings {
  batchSize: number;
  rank: number | undefined;
  worldSize: number | undefined;
  dense: boolean;
  obs: string[];
  genes: string[] | undefined;
  memoryCap: number | undefined;
  epoch: number;
  seed: number;
  startBatch: number | undefined;
  order: "default" | "elastic";
  lanes: number | undefined;
  startGlobalBatch: number | undefined;
  mixing: { column: string; file: string | undefined } | undefined;
  stderr: { write(text: string): unknown };
  shm: { fd: number; ring: number | undefined } | undefined;
  serve: { idleSeconds: number } | undefined;
}

/** The stream of `location`'s batches, decoded by `decoder` (the pool the command started). */
async function streamOn(
  locations: Locations,
  decoder: TileDecoder,
  location: string,
  values: Values,
  sink: NonNullable<CliIo["binary"]>,
  settings: Settings,
  controlInput: NonNullable<CliIo["control"]>,
): Promise<CommandResult> {
  const { batchSize, rank, worldSize, dense, obs, genes, memoryCap, epoch, seed, startBatch } = settings;
  const { order, lanes, startGlobalBatch, mixing, shm, serve } = settings;
  const {
    createLoader,
    mixingMeter,
    formatMixing,
    DeltacellsError,
    ShmControl,
    cacheLocalizer,
    openCountedDataset,
    ArrowBatches,
    endBatch,
    epochBatch,
    MAX_LIST_VALUES,
    ArrowOutput,
    ReaderGone,
  } = await loadModules();
  const { store, ds } = await openCountedDataset(locations, location, decoder, {
    obsLocalizer: cacheLocalizer(),
  });
  try {
    let obsSchemas: ObsColumnSchema[] = [];
    if (obs.length > 0) {
      // without obs, NotFound (field has_obs): the dataset's content, not a usage mistake
      const schema = await ds.obsSchema();
      obsSchemas = obs.map((name) => {
        const c = schema.columns.find((col) => col.name === name);
        if (!c)
          throw new UsageError(
            `--obs ${name}: ${ds.url} has no obs column ${JSON.stringify(name)}; it has ${schema.columns.map((col) => col.name).join(", ")}`,
          );
        return c;
      });
    }
    let meter: MixingMeter | undefined;
    if (mixing) {
      const schema = ds.manifest.has_obs ? await ds.obsSchema() : { columns: [] };
      if (!schema.columns.some((c) => c.name === mixing.column))
        throw new UsageError(
          `--report-mixing ${mixing.column}: ${ds.url} has no obs column ${JSON.stringify(mixing.column)}${schema.columns.length > 0 ? `; it has ${schema.columns.map((c) => c.name).join(", ")}` : " (it has no obs)"}`,
        );
      meter = await mixingMeter(ds, mixing.column, {
        ...(typeof values["cache-dir"] === "string" && { cacheDir: values["cache-dir"] }),
      });
    }
    const elastic = order === "elastic";
    const world = worldSize ?? 1;
    // Stops the loader when the consumer of a shared batch file goes away (or misbehaves): it may
    // be waiting for a slot that will never be released.
    const stop = new AbortController();
    const loader = await ringChecked(shm?.ring, () =>
      createLoader(ds, {
        signal: stop.signal,
        ...(shm && { sharedBatches: { fd: shm.fd, ...(shm.ring !== undefined && { slots: shm.ring }) } }),
        batchSize,
        shuffle: values["no-shuffle"] !== true,
        seed,
        epoch,
        ...(startBatch !== undefined && { startBatch }),
        ...(elastic && { order, ...(lanes !== undefined && { lanes }) }),
        ...(startGlobalBatch !== undefined && { startGlobalBatch }),
        dropLast: values["drop-last"] === true,
        rank: rank ?? 0,
        worldSize: world,
        bufferTiles: intOption(values, "buffer-tiles", DEFAULT_BUFFER_TILES, 1),
        ...(memoryCap !== undefined && { memoryCap: memoryCap * 1024 * 1024 }),
        output: dense ? "dense" : "csr",
        ...(values.float32 === true && { values: "float32" as const }),
        ...(genes && { genes }),
        sortIndices: values["sort-indices"] === true,
        obs,
        ...(typeof values["cache-dir"] === "string" && { obsCacheDir: values["cache-dir"] }),
      }),
    );
    try {
      if (dense && batchSize * loader.genes.count > MAX_LIST_VALUES)
        throw new UsageError(
          `--dense with --batch-size ${batchSize} and ${loader.genes.count} genes is ${batchSize * loader.genes.count} values per batch, beyond Arrow's 2^31 - 1 per list column: select genes with --genes or lower --batch-size`,
        );
      const summary = loader.epochSummary(epoch);
      // Where the epoch starts, and whether it is already over (the loader then stands at the
      // next epoch, which this command does not write).
      const startGlobal = startGlobalBatch ?? (startBatch ?? 0) * world;
      const over = summary.elastic
        ? startGlobal >= summary.elastic.globalBatches
        : (startBatch ?? 0) >= summary.batches;
      const elasticInfo = summary.elastic && {
        order: "elastic" as const,
        lanes: summary.elastic.lanes,
        global_batches: summary.elastic.globalBatches,
        start_global_batch: startGlobal,
        first_global_batch: startGlobal + summary.rank,
      };
      const columns = loader.genes.datasetColumns;
      let increasing = true;
      for (let i = 1; i < columns.length && increasing; i++) increasing = columns[i]! > columns[i - 1]!;
      const arrow = new ArrowBatches(
        dense,
        loader.genes.count,
        obsSchemas,
        {
          genes: loader.genes.names ?? Array.from(loader.genes.sourceIndices, String),
          info: {
            dataset: ds.url,
            n_cells: ds.nCells,
            n_genes: loader.genes.count,
            gene_source_indices: Array.from(loader.genes.sourceIndices),
            batch_size: batchSize,
            shuffle: values["no-shuffle"] !== true,
            seed,
            epoch,
            rank: summary.rank,
            world_size: summary.worldSize,
            drop_last: values["drop-last"] === true,
            start_batch: summary.elastic ? Math.floor(startGlobal / world) : (startBatch ?? 0),
            batches: summary.batches,
            cells: summary.cells,
            padded: summary.padded.length,
            dropped: summary.dropped.length,
            output: dense ? "dense" : "csr",
            sorted_indices: dense || values["sort-indices"] === true || increasing,
            obs,
            ...elasticInfo,
            ...(loader.sharedBatches && { shm: layoutInfo(loader.sharedBatches.layout) }),
          },
        },
        values.float32 === true,
      );
      const shared = loader.sharedBatches;
      // Every obs column's codes in the slots too: a batch in a slot is then a message of no rows.
      const inSlots = shared !== undefined && obs.every((name) => name in shared.layout.obs);
      // The batches the consumer holds in their slots, by slot, until it releases them.
      const lent = new Map<number, { batch: Batch; seq: number }>();
      // With --serve, the epochs the consumer asks for next (and who waits for one).
      const asked: number[] = [];
      let onAsked: (() => void) | undefined;
      const control =
        shared &&
        new ShmControl(controlInput, {
          release(slot, seq) {
            const held = lent.get(slot);
            if (held === undefined || held.seq !== seq)
              return stop.abort(
                new DeltacellsError(
                  `the consumer released slot ${slot} as batch sequence ${seq}, but the slot holds ${held ? `sequence ${held.seq}` : "no batch it was given"}`,
                  { tag: "InvalidInput", field: "release", expected: held?.seq ?? "a lent slot", found: seq },
                ),
              );
            lent.delete(slot);
            held.batch.release();
          },
          spill: () => shared.spill(),
          epoch(e) {
            asked.push(e);
            onAsked?.();
          },
          gone: () => {
            stop.abort(new ReaderGone("stdin ended"));
            onAsked?.();
          },
          bad: (line) =>
            stop.abort(
              new DeltacellsError(`the consumer sent ${JSON.stringify(line.slice(0, 80))} on stdin`, {
                tag: "InvalidInput",
                field: "control",
                expected: '"release SLOT SEQ", "spill" or "epoch E"',
                found: line.slice(0, 80),
              }),
            ),
        });
      /** The next epoch the consumer asks for; undefined once it is gone or idle past --serve-idle. */
      const nextAsked = async (): Promise<number | undefined> => {
        if (asked.length === 0 && !stop.signal.aborted) {
          let timer: NodeJS.Timeout | undefined;
          await new Promise<void>((done) => {
            onAsked = done;
            timer = setTimeout(done, serve!.idleSeconds * 1000);
          });
          onAsked = undefined;
          clearTimeout(timer);
        }
        return stop.signal.aborted ? undefined : asked.shift();
      };
      const out = new ArrowOutput(sink, arrow.schema);
      let complete = false;
      try {
        await out.start();
        let now = { epoch, over, summary, elastic: elasticInfo };
        for (;;) {
          let batches = 0;
          let rows = 0;
          if (!now.over) {
            for await (const batch of loader) {
              // In a slot, a batch stays lent until the consumer releases it; else it went whole.
              const where = shared?.slotOf(batch);
              try {
                meter?.add(batch.cells, batch.size);
                await out.write(
                  where && inSlots ? arrow.slotBatch(batch, where) : arrow.recordBatch(batch, where),
                );
                batches++;
                rows += batch.size;
              } finally {
                if (where !== undefined) lent.set(where.slot, { batch, seq: where.seq });
                else batch.release();
              }
            }
          }
          // Only now is the epoch whole: a consumer that sees no end batch got part of one.
          const { rank: r, worldSize: w } = now.summary;
          const end = { epoch: now.epoch, rank: r, world_size: w, batches, rows, ...now.elastic };
          await out.write(endBatch(arrow, end));
          const next = serve === undefined ? undefined : await nextAsked();
          if (next === undefined) break;
          // The loader, its pool and its shared batches go on with the epoch asked for, from its start.
          loader.setEpoch(next);
          const sum = loader.epochSummary(next);
          const elastic = sum.elastic && {
            order: "elastic" as const,
            lanes: sum.elastic.lanes,
            global_batches: sum.elastic.globalBatches,
            start_global_batch: 0,
            first_global_batch: sum.rank,
          };
          now = { epoch: next, over: false, summary: sum, elastic };
          const { cells, padded, dropped } = sum;
          await out.write(
            epochBatch(arrow, {
              epoch: next,
              start_batch: 0,
              batches: sum.batches,
              cells,
              padded: padded.length,
              dropped: dropped.length,
              ...elastic,
            }),
          );
        }
        await out.end();
        complete = true;
      } catch (err) {
        if (!(err instanceof ReaderGone)) throw err;
      } finally {
        control?.close();
        out.detach();
      }
      if (meter && mixing) {
        // A consumer that left early gets the report of the batches it took.
        const report = meter.report();
        if (mixing.file === undefined)
          settings.stderr.write(
            `${formatMixing(report)}${complete ? "" : "\n  (part of the epoch: the consumer closed the stream)"}\n`,
          );
        else {
          const json = {
            ...report,
            complete,
            epoch,
            rank: summary.rank,
            world_size: summary.worldSize,
            batch_size: batchSize,
            order,
            ...(summary.elastic && { lanes: summary.elastic.lanes }),
            buffer_tiles: intOption(values, "buffer-tiles", DEFAULT_BUFFER_TILES, 1),
          };
          await writeFileAtomically(mixing.file, (tmp) =>
            writeFile(tmp, `${JSON.stringify(json, null, 2)}\n`),
          );
        }
      }
    } finally {
      await loader.close();
    }
  } finally {
    await ds.close();
  }
  return { text: "", streamed: true, store };
}
