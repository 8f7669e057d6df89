/**
 * Which batch a rank yields at each step of an epoch, and from which plan (plan.ts) it comes.
 *
 * The default order has one plan per rank (its own share of the epoch), and step k is that plan's
 * batch k.
 *
 * The elastic order cuts the epoch into `lanes` L lanes, lane l being exactly the default order's
 * rank l of a world of L (a contiguous share of the epoch's permuted tiles, its own shuffle
 * windows, padded to `ceil(N / L)` cells or cut by `dropLast`, in `b` batches). The epoch's global
 * batch sequence interleaves them: global batch g is batch `floor(g / L)` of lane `g mod L`, for
 * g < G = L b. A run that starts after the first n0 global batches (a resume, at any world size W
 * dividing L) gives rank r the global batches n0 + r, n0 + r + W, ...: all of them in lanes
 * congruent to n0 + r modulo W, so a rank reads only its own lanes' tiles. When G - n0 is not a
 * multiple of W the ranks would yield different counts: with padding the short ranks end with one
 * padding batch (global batch g >= G repeats g - L, the last batch of a lane they own), with
 * `dropLast` the global batches past the last full round are dropped.
 */
import { EpochPlan, type PlanSettings } from "./plan.js";

/** What one step of the epoch yields. */
export interface ScheduledBatch {
  /** Index of the lane (into {@link EpochSchedule.plans}) whose batch it is. */
  lane: number;
  /** The batch of that lane's plan. */
  laneBatch: number;
  /** The global batch number (elastic order); undefined in the default order. */
  global: number | undefined;
  /** Elastic order: a whole batch repeating an earlier one so that every rank yields as many. */
  padding: boolean;
}

/** The batches `[from, to)` of one lane's plan that an iteration makes. */
export interface LaneRun {
  lane: number;
  from: number;
  to: number;
}

export interface ScheduleSettings extends Omit<PlanSettings, "epoch"> {
  order: "default" | "elastic";
  lanes: number;
}

/** The cells a rank yields in an epoch (for `epochSummary`), computed without reading tiles. */
export interface ScheduleCells {
  /** Cells yielded, padding excluded. */
  cells: number;
  padded: Float64Array;
  dropped: Float64Array;
}

export class EpochSchedule {
  /** The plans batches come from: the rank's own (default order), or each lane it serves. */
  readonly plans: EpochPlan[];
  /** The first step yielded (0, or after an elastic resume the steps already taken at this world size). */
  readonly first: number;
  /** Steps in the epoch: step indices run `[first, batches)`. */
  readonly batches: number;
  /** Elastic order: the epoch's global batches (`lanes` times the batches per lane). */
  readonly globalBatches: number;
  /** Elastic order: the global batches consumed before this run of the epoch started. */
  readonly origin: number;
  private readonly elastic: boolean;
  /** Elastic order: the plan of each lane this rank serves. */
  private readonly planOfLane = new Map<number, number>();
  private readonly perLane: number;

  constructor(
    private readonly s: ScheduleSettings,
    epoch: number,
    /** Elastic order: global batches of this epoch consumed before (0 in the default order). */
    origin = 0,
  ) {
    this.elastic = s.order === "elastic";
    this.origin = origin;
    if (!this.elastic) {
      this.plans = [new EpochPlan({ ...s, epoch })];
      this.perLane = this.plans[0]!.batches;
      this.first = 0;
      this.batches = this.perLane;
      this.globalBatches = this.batches * s.worldSize;
      return;
    }
    const { lanes: L, worldSize: W, rank } = s;
    const residue = (origin + rank) % W;
    this.plans = [];
    for (let l = residue; l < L; l += W) {
      this.planOfLane.set(l, this.plans.length);
      this.plans.push(new EpochPlan({ ...s, epoch, rank: l, worldSize: L }));
    }
    // Every lane has the same number of batches (its share is ceil(N / L) cells, or cut).
    this.perLane = this.plans[0]!.batches;
    this.globalBatches = L * this.perLane;
    const left = this.globalBatches - origin;
    this.first = Math.floor(origin / W);
    this.batches = this.first + (s.dropLast ? Math.floor(left / W) : Math.ceil(left / W));
  }

  /** What step `index` (in `[first, batches)`) yields. */
  at(index: number): ScheduledBatch {
    if (!this.elastic) return { lane: 0, laneBatch: index, global: undefined, padding: false };
    const g = this.globalOf(index);
    const L = this.s.lanes;
    const lane = this.planOfLane.get(g % L)!;
    if (g < this.globalBatches) return { lane, laneBatch: Math.floor(g / L), global: g, padding: false };
    return { lane, laneBatch: this.perLane - 1, global: g, padding: true };
  }

  private globalOf(index: number): number {
    const W = this.s.worldSize;
    return this.origin + this.s.rank + (index - this.first) * W;
  }

  /**
   * The step whose batch a padding step repeats, when this rank yields that batch itself at or
   * after step `from` (the padding batch is then a copy of it); else undefined (the padding
   * batch is made from its lane, or there is none).
   */
  paddingSource(from: number): number | undefined {
    const last = this.batches - 1;
    if (last < from || !this.at(last).padding) return undefined;
    const repeated = this.globalOf(last) - this.s.lanes;
    if (repeated < this.origin) return undefined;
    const step = this.first + (repeated - this.origin - this.s.rank) / this.s.worldSize;
    return step >= from ? step : undefined;
  }

  /** The lane batches steps `[from, batches)` make, by lane (lanes with none left out). */
  lanesFrom(from: number): LaneRun[] {
    const runs = new Map<number, LaneRun>();
    const copied = this.paddingSource(from) !== undefined;
    for (let i = from; i < this.batches; i++) {
      const e = this.at(i);
      if (e.padding && copied) continue;
      const run = runs.get(e.lane);
      if (run === undefined) runs.set(e.lane, { lane: e.lane, from: e.laneBatch, to: e.laneBatch + 1 });
      else run.to = Math.max(run.to, e.laneBatch + 1);
    }
    return [...runs.values()].sort((a, b) => a.lane - b.lane);
  }

  /** The cells steps `[first, batches)` yield, repeat and drop. */
  cells(): ScheduleCells {
    if (!this.elastic) {
      const p = this.plans[0]!;
      return {
        cells: Math.min(p.real, p.length),
        padded: p.cellsAt(p.real, p.length),
        dropped: p.cellsAt(p.length, p.real),
      };
    }
    let cells = 0;
    const padded: Float64Array[] = [];
    const dropped: Float64Array[] = [];
    for (let i = this.first; i < this.batches; i++) {
      const e = this.at(i);
      const p = this.plans[e.lane]!;
      const [from, to] = p.batchRange(e.laneBatch);
      if (e.padding) {
        padded.push(p.cellsAt(from, to));
        continue;
      }
      cells += Math.max(0, Math.min(to, p.real) - from);
      if (to > p.real) padded.push(p.cellsAt(Math.max(from, p.real), to));
    }
    // dropLast: each lane's remainder (every lane is served by one rank), and the global batches
    // past the last round all ranks take.
    for (const p of this.plans) dropped.push(p.cellsAt(p.length, p.real));
    for (let g = this.globalOf(this.batches); g < this.globalBatches; g += this.s.worldSize) {
      const p = this.plans[this.planOfLane.get(g % this.s.lanes)!]!;
      const [from, to] = p.batchRange(Math.floor(g / this.s.lanes));
      dropped.push(p.cellsAt(from, to));
    }
    return { cells, padded: concat(padded), dropped: concat(dropped) };
  }
}

function concat(parts: Float64Array[]): Float64Array {
  const out = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
