/**
 * How well shuffled an epoch's batches are, measured on one obs label column: the entropy of the
 * labels within each batch against the dataset's, and against that of batches of the same sizes
 * drawn uniformly at random (what a perfect shuffle reaches: a finite batch sees a little less
 * than the whole dataset's entropy), and the distinct tiles and labels per batch. A loader whose
 * windows hold few tiles of a dataset stored in label order (an atlas concatenated by donor or
 * tissue) shows it as batches of low entropy from few tiles.
 *
 * `add` runs once per batch on typed arrays (label counts and tile stamps reused), so it can
 * watch a training run's batches as they go by.
 */
import type { Dataset } from "../dataset/reader.js";
import { DeltacellsError } from "../errors.js";
import { seededRandom } from "./random.js";

/** Mean, extremes and median of a per-batch figure. */
export interface MixingStats {
  mean: number;
  min: number;
  median: number;
  max: number;
}

/** What {@link MixingMeter.report} says of the batches it saw. */
export interface MixingReport {
  /** The obs column measured. */
  column: string;
  /** Batches seen, and their rows (padding included: what training sees). */
  batches: number;
  rows: number;
  /** Distinct labels in the dataset's column (a missing value counts as one). */
  labels: number;
  /** Shannon entropy (bits) of the column's labels over every cell of the dataset. */
  datasetEntropy: number;
  /**
   * The mean entropy of batches of the same sizes drawn uniformly at random from the dataset
   * (without replacement, seeded: the same figure every time): the best a shuffle can do.
   */
  randomBatchEntropy: number;
  /** Entropy (bits) of the labels within each batch. */
  batchEntropy: MixingStats;
  /** The mean batch entropy over the dataset's entropy (1 when every batch is as mixed as the whole). */
  entropyRatio: number;
  /** The mean batch entropy over that of random batches (1: as mixed as a perfect shuffle). */
  randomRatio: number;
  /** Distinct labels in each batch. */
  labelsPerBatch: MixingStats;
  /** Distinct tiles each batch's cells come from. */
  tilesPerBatch: MixingStats;
}

/** Random batches drawn per batch size for {@link MixingReport.randomBatchEntropy}. */
const RANDOM_DRAWS = 64;
/** The seed of those draws (a constant: the reference is a property of the dataset). */
const RANDOM_SEED = 0x6d6978;

/** Collects batches' label entropy and tile counts; see {@link mixingMeter}. */
export class MixingMeter {
  private readonly nLabels: number;
  private readonly counts: Int32Array;
  private readonly touched: Int32Array;
  private readonly tileStamp: Uint32Array;
  private readonly tileStart: Float64Array;
  private readonly entropies: number[] = [];
  private readonly labelCounts: number[] = [];
  private readonly tileCounts: number[] = [];
  /** Batches seen of each size (for the random reference). */
  private readonly sizes = new Map<number, number>();
  private rows = 0;

  /**
   * `codes`: each cell's label (0 .. `labels` - 1, or -1 when missing); `tileCells`: the
   * manifest's cells per tile (to tell a cell's tile).
   */
  constructor(
    readonly column: string,
    private readonly codes: Int32Array,
    labels: number,
    tileCells: readonly number[],
  ) {
    this.nLabels = labels + 1; // the last one: missing
    this.counts = new Int32Array(this.nLabels);
    this.touched = new Int32Array(this.nLabels);
    this.tileStamp = new Uint32Array(tileCells.length);
    this.tileStart = new Float64Array(tileCells.length + 1);
    for (let t = 0; t < tileCells.length; t++) this.tileStart[t + 1] = this.tileStart[t]! + tileCells[t]!;
  }

  /** Counts one batch: the global indices of its first `n` rows' cells. */
  add(cells: ArrayLike<number>, n = cells.length): void {
    if (n === 0) return;
    const stamp = this.entropies.length + 1;
    let labels = 0;
    let tiles = 0;
    for (let i = 0; i < n; i++) {
      const cell = cells[i]!;
      const code = this.label(cell);
      if (this.counts[code]!++ === 0) this.touched[labels++] = code;
      const t = this.tileOf(cell);
      if (this.tileStamp[t] !== stamp) {
        this.tileStamp[t] = stamp;
        tiles++;
      }
    }
    this.entropies.push(this.entropyOfTouched(labels, n));
    this.labelCounts.push(labels);
    this.tileCounts.push(tiles);
    this.sizes.set(n, (this.sizes.get(n) ?? 0) + 1);
    this.rows += n;
  }

  /** The batches seen so far. */
  report(): MixingReport {
    const batches = this.entropies.length;
    const datasetEntropy = this.datasetEntropy();
    const randomBatchEntropy = this.randomEntropy();
    const batchEntropy = stats(this.entropies);
    return {
      column: this.column,
      batches,
      rows: this.rows,
      labels: this.presentLabels(),
      datasetEntropy,
      randomBatchEntropy,
      batchEntropy,
      entropyRatio: datasetEntropy > 0 ? batchEntropy.mean / datasetEntropy : 1,
      randomRatio: randomBatchEntropy > 0 ? batchEntropy.mean / randomBatchEntropy : 1,
      labelsPerBatch: stats(this.labelCounts),
      tilesPerBatch: stats(this.tileCounts),
    };
  }

  private label(cell: number): number {
    const c = this.codes[cell]!;
    return c < 0 ? this.nLabels - 1 : c;
  }

  private tileOf(cell: number): number {
    const s = this.tileStart;
    let lo = 0;
    let hi = s.length - 2;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (s[mid]! <= cell) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** The entropy of the `labels` labels counted (of `n` rows), clearing their counts. */
  private entropyOfTouched(labels: number, n: number): number {
    let h = 0;
    for (let k = 0; k < labels; k++) {
      const code = this.touched[k]!;
      const p = this.counts[code]! / n;
      h -= p * Math.log2(p);
      this.counts[code] = 0;
    }
    return h;
  }

  private presentLabels(): number {
    const seen = new Uint8Array(this.nLabels);
    let n = 0;
    for (let c = 0; c < this.codes.length; c++) {
      const code = this.label(c);
      if (!seen[code]) {
        seen[code] = 1;
        n++;
      }
    }
    return n;
  }

  private datasetEntropy(): number {
    const counts = new Float64Array(this.nLabels);
    for (let c = 0; c < this.codes.length; c++) counts[this.label(c)]!++;
    let h = 0;
    for (const k of counts) {
      if (k === 0) continue;
      const p = k / this.codes.length;
      h -= p * Math.log2(p);
    }
    return h;
  }

  /** The mean entropy of random batches of the sizes seen, weighted as they were seen. */
  private randomEntropy(): number {
    const N = this.codes.length;
    if (this.sizes.size === 0 || N === 0) return 0;
    const random = seededRandom([RANDOM_SEED, N]);
    // A partial Fisher-Yates over the cells, undone after each draw (no allocation per draw).
    const perm = new Int32Array(N);
    for (let i = 0; i < N; i++) perm[i] = i;
    const swaps = new Int32Array(Math.min(N, Math.max(...this.sizes.keys())));
    let total = 0;
    let weight = 0;
    for (const [size, count] of this.sizes) {
      const n = Math.min(size, N);
      let sum = 0;
      for (let d = 0; d < RANDOM_DRAWS; d++) {
        let labels = 0;
        for (let i = 0; i < n; i++) {
          const j = i + Math.floor(random() * (N - i));
          swaps[i] = j;
          const t = perm[i]!;
          perm[i] = perm[j]!;
          perm[j] = t;
          const code = this.label(perm[i]!);
          if (this.counts[code]!++ === 0) this.touched[labels++] = code;
        }
        sum += this.entropyOfTouched(labels, n);
        for (let i = n - 1; i >= 0; i--) {
          const j = swaps[i]!;
          const t = perm[i]!;
          perm[i] = perm[j]!;
          perm[j] = t;
        }
      }
      total += (sum / RANDOM_DRAWS) * count;
      weight += count;
    }
    return total / weight;
  }
}

function stats(values: readonly number[]): MixingStats {
  if (values.length === 0) return { mean: 0, min: 0, median: 0, max: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return {
    mean: values.reduce((a, b) => a + b, 0) / values.length,
    min: sorted[0]!,
    median: sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2,
    max: sorted[sorted.length - 1]!,
  };
}

/**
 * A {@link MixingMeter} for `column` of `ds` (a category or bool column), its labels read once
 * through `ds.obs` (the Arrow cache in Node). Feed it each batch's cells (`meter.add(batch.cells)`)
 * and read `meter.report()` at the end of the epoch.
 */
export async function mixingMeter(
  ds: Dataset,
  column: string,
  options: { cacheDir?: string; signal?: AbortSignal } = {},
): Promise<MixingMeter> {
  const frame = await ds.obs([column], options);
  const c = frame.column(column);
  if (c.kind !== "category" && c.kind !== "bool")
    throw new DeltacellsError(
      `obs column ${JSON.stringify(column)} of ${ds.url} is ${c.kind}: the mixing report counts labels, so it needs a category or bool column`,
      { tag: "InvalidInput", field: column, expected: "a category or bool column", found: c.kind },
    );
  const codes = new Int32Array(ds.nCells);
  let at = 0;
  for (let t = 0; t < ds.nTiles; t++) {
    const v = c.tile(t);
    if (c.kind === "category" && v.nullCount === 0) {
      codes.set(v.toArray() as Int32Array, at);
      at += v.length;
      continue;
    }
    for (let i = 0; i < v.length; i++) {
      const x = v.get(i) as number | boolean | null;
      codes[at++] = x === null || x === undefined ? -1 : Number(x);
    }
  }
  const labels = c.kind === "category" ? (c.categories?.length ?? 0) : 2;
  return new MixingMeter(column, codes, labels, ds.manifest.tile_cells);
}

/** A report as a few lines for people (the stream prints it on stderr). */
export function formatMixing(r: MixingReport): string {
  const f = (x: number, d = 2) => x.toFixed(d);
  const s = (m: MixingStats, d = 1) =>
    `mean ${f(m.mean, d)} (min ${f(m.min, d)}, median ${f(m.median, d)}, max ${f(m.max, d)})`;
  return [
    `mixing of ${r.column} over ${r.batches} batches (${r.rows} rows): ${r.labels} labels, ${f(r.datasetEntropy)} bits of entropy over the dataset`,
    `  entropy per batch: ${s(r.batchEntropy, 2)} bits; ${f(r.entropyRatio)} of the dataset's, ${f(r.randomRatio)} of a random batch's (${f(r.randomBatchEntropy)})`,
    `  labels per batch: ${s(r.labelsPerBatch)}`,
    `  tiles per batch: ${s(r.tilesPerBatch)}`,
  ].join("\n");
}
