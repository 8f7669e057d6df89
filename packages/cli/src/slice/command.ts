/** `deltacells slice STORE --axis K POSITION...`: slices of a sporadik store, read as one batch. */

import { cellNames, companionOf, type Dataset, sourceGeneNames } from "@deltacells/core";
import {
  openArrayReader,
  PositionError,
  type Selection,
  type SparseArrayReader,
} from "@deltacells/sporadik/node";
import { joinLocation, type StoreStats } from "@deltacells/storage";
import { COMMON_HELP, count, intOption, parse, UsageError } from "../args.js";
import type { CommandResult } from "../command.js";
import { CliError } from "../errors.js";
import { formatBytes, formatCount } from "../format.js";
import { openCountedDataset } from "../io.js";
import type { Locations } from "../locations.js";
import { WaveCounter } from "./waves.js";

export const SLICE_HELP = `usage: deltacells slice STORE --axis K POSITION... [options]
       deltacells slice DATASET --axis K POSITION|NAME... [options]

Print slices of a sporadik store: everything at each POSITION along axis K (for a store made by
\`deltacells convert --format sporadik\`: axis 0 gives a cell's genes, axis 1 a gene's cells). All
positions are read as one batch, in two waves of requests whatever their number (the indptr
brackets, then every indices and data run). A POSITION is a whole number or a half-open range A:B
(A defaults to 0, B to the axis length); order and repeats are kept. STORE is a local folder or a
URL (s3://bucket/prefix, https://...).

A deltacells DATASET converted with --sporadik is read through its companion store
(DATASET/sporadik), and its names come along: a gene name may stand for a position on axis 1 and
a cell name (the obs index) on axis 0, and every position printed has its name beside it. For a
store of its own, --names-from DATASET takes the names of the dataset it was converted from (or
of the same input).

The axis is always named: which layout to read is the whole difference between them. An axis the
store has no layout for, and a position outside the axis, are refused. So is a damaged store: a
missing chunk, positions out of order or past the other axis, a decreasing indptr, a chunk failing
its checksum (stores written with --checksums), each named (\`deltacells validate STORE\` checks it all).

options:
  --axis K       the axis to select along (required)
  --names-from DATASET
                 the cell and gene names of this deltacells dataset (its shape must be the store's)
  --dense        print each slice dense over the other axes instead of its nonzeros
  --fill-missing-data
                 read a missing data chunk as zeros (zarr's fill value) instead of refusing it:
                 only for stores written by a tool that leaves out chunks of explicit zeros
${COMMON_HELP}
With --stats, the reads of describing the store and of the slices are also counted apart, with
their waves (a wave: requests in flight together; the next one starts when none is left).`;

/** STORE is a deltacells dataset, not a sporadik store. */
class NotSporadikError extends CliError {
  declare readonly _tag: "NotASporadikStore";
  constructor(message: string, options: { object: string; cause: unknown }) {
    super(message, {
      ...options,
      tag: "NotASporadikStore",
      expected: "a sporadik store",
      found: "a deltacells dataset",
    });
    this.name = "NotSporadikError";
  }
}

/** A POSITION argument: one position, a range whose open end is the axis length, or a name. */
type PositionArg = { at: number } | { start: number; stop: number | undefined } | { name: string };

function positionArg(arg: string): PositionArg {
  if (/^\d+$/.test(arg)) return { at: Number(arg) };
  const range = /^(\d*):(\d*)$/.exec(arg);
  if (!range) return { name: arg };
  const start = range[1] ? Number(range[1]) : 0;
  const stop = range[2] ? Number(range[2]) : undefined;
  if (stop !== undefined && start > stop)
    throw new UsageError(`the range ${arg} runs backwards: write A:B with A <= B`);
  return { start, stop };
}

/** The position of `name` along `axis`; refused when the names have it never, or more than once. */
function positionOf(name: string, axis: number, names: readonly string[] | undefined): number {
  const what = axis === 0 ? "cell" : "gene";
  if (names === undefined) {
    throw new UsageError(
      `a POSITION is a whole number or a range A:B (e.g. 7, 10:20, :5, 100:), got ${JSON.stringify(name)}; names stand for positions only with the names of a dataset: slice DATASET, or --names-from DATASET`,
    );
  }
  const first = names.indexOf(name);
  if (first < 0) throw new UsageError(`no ${what} is named ${JSON.stringify(name)} on axis ${axis}`);
  const again = names.indexOf(name, first + 1);
  if (again >= 0)
    throw new UsageError(
      `${JSON.stringify(name)} names more than one ${what} on axis ${axis} (positions ${first}, ${again}${names.indexOf(name, again + 1) >= 0 ? ", ..." : ""}): give the position`,
    );
  return first;
}

/** The positions, ranges expanded, along `axis` of `shape`. */
function expand(
  args: readonly PositionArg[],
  axis: number,
  shape: readonly number[],
  names: readonly string[] | undefined,
): number[] {
  const length = shape[axis] as number;
  const out: number[] = [];
  for (const arg of args) {
    if ("at" in arg) {
      out.push(arg.at);
      continue;
    }
    if ("name" in arg) {
      out.push(positionOf(arg.name, axis, names));
      continue;
    }
    const stop = arg.stop ?? length;
    // The reader's own refusal, before a range past the axis is spelled out position by position.
    if (stop > length) throw PositionError.along(Math.max(arg.start, length), axis, length, shape);
    for (let p = arg.start; p < stop; p++) out.push(p);
  }
  return out;
}

/** A typed array as JSON numbers (int64 beyond 2^53 as strings, rather than rounded). */
function plain(values: ArrayLike<number | bigint>): (number | string)[] {
  return Array.from(values, (v) =>
    typeof v === "bigint" ? (Number.isSafeInteger(Number(v)) ? Number(v) : v.toString()) : v,
  );
}

const NOTHING: StoreStats = {
  requests: { get: 0, getRange: 0, set: 0, delete: 0, list: 0 },
  bytesRead: 0,
  bytesWritten: 0,
  missing: 0,
  errors: 0,
};

/** The reads between two snapshots of the counts. */
function delta(after: StoreStats, before: StoreStats, waves: number) {
  return {
    requests: {
      get: after.requests.get - before.requests.get,
      get_range: after.requests.getRange - before.requests.getRange,
    },
    bytes_read: after.bytesRead - before.bytesRead,
    waves,
  };
}

function describeReads(name: string, r: ReturnType<typeof delta>): string {
  const total = r.requests.get + r.requests.get_range;
  return `${name} ${count(total, "request")} (get ${formatCount(r.requests.get)}, getRange ${formatCount(r.requests.get_range)}), ${formatBytes(r.bytes_read)}, ${count(r.waves, "wave")}`;
}

/** The names along each axis of the store, where a dataset gives them. */
type AxisNames = readonly (readonly string[] | undefined)[];

function render(sel: Selection, store: SparseArrayReader, url: string, dense: boolean, names: AxisNames) {
  const axis = sel.indexedAxis;
  const dims = sel.indexShape;
  const own = names[axis];
  const label = (p: number) => (own ? `${p} (${own[p]})` : String(p));
  const head = `${url}: axis ${axis} of [${store.shape.join(", ")}] (${store.dtype}), ${count(sel.length, "position")}, ${count(sel.nnz, "nonzero")}; each slice is over axes [${sel.indexOrder.join(", ")}]`;
  const rows: string[] = [head];
  const slices: Record<string, unknown>[] = [];
  const named = (p: number) => (own ? { name: own[p] } : {});
  if (dense) {
    const { shape, values } = sel.toDense();
    const width = dims.reduce((a, b) => a * b, 1);
    for (let i = 0; i < sel.length; i++) {
      const row = plain(values.subarray(i * width, (i + 1) * width));
      slices.push({ position: sel.positions[i], ...named(sel.positions[i]!), values: row });
      rows.push(`  ${label(sel.positions[i]!)}: ${row.join(" ")}`);
    }
    return { text: rows.join("\n"), slices, denseShape: shape };
  }
  // Every value's coordinates, for naming a cell of a slice over several axes (in indexOrder).
  const coords = dims.length === 1 ? undefined : sel.coords().coords;
  // The names along the one other axis of a 2-D store, when known.
  const other = dims.length === 1 ? names[sel.indexOrder[0]!] : undefined;
  let entry = 0;
  for (let i = 0; i < sel.length; i++) {
    const { positions, values } = sel.sliceAt(i);
    const at = plain(positions);
    const vs = plain(values);
    slices.push({
      position: sel.positions[i],
      ...named(sel.positions[i]!),
      indices: at,
      ...(other ? { names: at.map((p) => other[Number(p)]) } : {}),
      values: vs,
    });
    const cells = at.map((p, k) => {
      const j = entry++;
      const where =
        coords === undefined
          ? other
            ? `${p} (${other[Number(p)]})`
            : String(p)
          : `(${sel.indexOrder.map((axis) => coords[axis]![j]).join(",")})`;
      return `${where}=${vs[k]}`;
    });
    rows.push(
      `  ${label(sel.positions[i]!)}: ${count(at.length, "nonzero")}${cells.length ? `: ${cells.join(" ")}` : ""}`,
    );
  }
  return { text: rows.join("\n"), slices, denseShape: undefined };
}

/**
 * The names of `ds` along the axes of a cells x genes store of `shape`: the cells' (obs index)
 * and the genes' in the input's order, as its companion and `--format sporadik` write them.
 */
async function datasetNames(ds: Dataset, shape: readonly number[]): Promise<AxisNames> {
  if (shape.length !== 2 || shape[0] !== ds.nCells || shape[1] !== ds.nGenes) {
    throw new UsageError(
      `${ds.url} is ${ds.nCells.toLocaleString("en-US")} cells x ${ds.nGenes.toLocaleString("en-US")} genes, but the store is [${shape.join(", ")}]: its names cannot be this store's; give the dataset it was converted from`,
    );
  }
  const cells = ds.manifest.has_obs ? await cellNames(ds, 0, ds.nCells) : undefined;
  return [cells, await sourceGeneNames(ds)];
}

/**
 * The store at `location`, or the companion of the dataset there (and the dataset, whose names
 * come with it). A dataset without a companion is refused with what to do.
 */
async function openStoreOrCompanion(locations: Locations, location: string, fillMissingData: boolean) {
  const store = locations.openCounted(location);
  const waves = new WaveCounter(store);
  // Positions are checked in every slice read: one pass, nothing next to printing them.
  const options = { checkIndices: true, fillMissingData };
  try {
    return { store, waves, array: await openArrayReader(waves, options), dataset: undefined };
  } catch (err) {
    if (!((err as { _tag?: string })._tag === "IncompleteError" && (await store.get("manifest.json"))))
      throw err;
    const { ds } = await openCountedDataset(locations, location);
    const rel = companionOf(ds);
    if (rel === undefined) {
      throw new NotSporadikError(
        `${store.url} is a deltacells dataset without a sporadik companion, and slice reads sporadik stores: convert the input again with --sporadik (the companion at DATASET/sporadik), or \`deltacells convert ${location} OUTPUT.zarr --format sporadik\``,
        { object: store.url, cause: err },
      );
    }
    const companion = locations.openCounted(joinLocation(location, rel));
    const counted = new WaveCounter(companion);
    return { store: companion, waves: counted, array: await openArrayReader(counted, options), dataset: ds };
  }
}

/** The options of `deltacells slice` besides the shared ones (args.ts). */
export const SLICE_OPTIONS = {
  axis: { type: "string" },
  dense: { type: "boolean" },
  "fill-missing-data": { type: "boolean" },
  "names-from": { type: "string" },
} as const;

export async function slice(argv: string[]): Promise<CommandResult> {
  const { values, positionals, locations } = parse(argv, SLICE_OPTIONS, ["STORE", "POSITION..."]);
  if (values.help) return { text: SLICE_HELP };
  if (values.axis === undefined) {
    throw new UsageError(
      "--axis is required: a sporadik store answers along the axes it has layouts for, and which one to read is the caller's decision",
    );
  }
  const axis = intOption(values, "axis", undefined, 0)!;
  const [location, ...rest] = positionals as [string, ...string[]];
  const args = rest.map(positionArg); // usage mistakes before any read

  const { store, waves, array, dataset } = await openStoreOrCompanion(
    locations,
    location,
    values["fill-missing-data"] === true,
  );
  const namesFrom = values["names-from"] as string | undefined;
  const nameSource = namesFrom === undefined ? dataset : (await openCountedDataset(locations, namesFrom)).ds;
  const names = nameSource ? await datasetNames(nameSource, array.shape) : [];
  const opened = store.stats;
  const openWaves = waves.waves;
  waves.reset();
  const reader = array.along(axis);
  const positions = expand(args, axis, reader.info.shape, names[axis]);
  const selection = await reader.slicesAt(positions);
  const reads = {
    describe: delta(opened, NOTHING, openWaves),
    slices: delta(store.stats, opened, waves.waves),
  };
  const { text, slices, denseShape } = render(selection, array, store.url, values.dense === true, names);
  const json = {
    store: store.url,
    ...(nameSource ? { names_from: nameSource.url } : {}),
    axis,
    shape: array.shape,
    dtype: array.dtype,
    index_order: selection.indexOrder,
    index_shape: selection.indexShape,
    nnz: selection.nnz,
    ...(denseShape ? { dense_shape: denseShape } : {}),
    slices,
    ...(values.stats ? { reads } : {}),
  };
  return {
    text,
    json,
    store,
    statsDetail: `${describeReads("describe", reads.describe)}; ${describeReads("slices", reads.slices)}`,
  };
}
