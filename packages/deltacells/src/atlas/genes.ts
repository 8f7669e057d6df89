/**
 * The gene space of an atlas: which genes are columns (every input's, `outer`; those all inputs
 * share, `inner`; or a declared list), in which order (decreasing total counts over all inputs,
 * ties in the order genes were first seen, as one input's conversion breaks them; or a given
 * order), and what each input loses to it. Built from the scans one at a time (an inner join
 * reads them twice), holding only what grows with the gene space.
 */
import { DeltacellsError } from "../errors.js";
import { repeatedKey } from "./keys.js";
import type { ScanSummary } from "./records.js";
import { positions } from "./values.js";

/** How the inputs' genes make the atlas's. */
export type GeneJoin = "outer" | "inner";

export interface GeneSpaceOptions {
  /** `outer` (default, as `anndata.concat`): every input's genes; `inner`: the genes all share. */
  join?: GeneJoin;
  /** A declared gene space: exactly these keys (also the order of first sight). */
  genes?: string[];
  /** With `genes`: drop the inputs' genes outside it (reported) instead of refusing them. */
  dropUnlisted?: boolean;
  /** The output order itself, as keys (each gene of the space once), instead of decreasing totals. */
  order?: string[];
  /** Match genes by key even with one input (its genes are named by a var column). */
  match?: boolean;
  /** What `genes` is, in a refusal (default "the declared gene list"). */
  genesName?: string;
}

/** Genes of one input left out of the space. */
export interface DroppedGenes {
  input: number;
  location: string;
  /** How many, and the first few keys. */
  count: number;
  keys: string[];
  /** Their counts, and that as a share of the input's counts. */
  counts: number;
  share: number;
}

export interface GeneSpace {
  /** The genes in the order they were first seen (the source order `gene_order.npy` refers to). */
  keys: string[];
  /** Whether inputs were matched by key (several inputs, a declared list or order); else one input's own genes. */
  matched: boolean;
  /** Output column j is `keys[order[j]]`. */
  order: Int32Array;
  /** Per gene of `keys`: its total count over every input. */
  totals: Float64Array;
  /** Per gene of `keys`: the first input that has it (-1: none, a declared gene) and its row there. */
  firstOf: Int32Array;
  rowOf: Int32Array;
  /** Nonzeros and counts the dataset will hold (genes left out not counted). */
  nnz: number;
  total: number;
  /** Per input: the nonzeros and counts it gives. */
  inputNnz: number[];
  inputTotal: number[];
  dropped: DroppedGenes[];
}

/** Output column j is source column order[j]: decreasing totals, ties in source order. */
export function orderGenesByTotal(totals: Float64Array): Int32Array {
  const order = Int32Array.from({ length: totals.length }, (_, i) => i);
  // TypedArray#sort with a comparator is stable (ES2019+).
  order.sort((a, b) => totals[b]! - totals[a]! || a - b);
  return order;
}

function refuse(
  message: string,
  fields: { object?: string; field: string; found?: unknown },
): DeltacellsError {
  return new DeltacellsError(message, { tag: "InvalidInput", ...fields });
}

const few = (keys: string[]) =>
  `${keys
    .slice(0, 5)
    .map((k) => JSON.stringify(k))
    .join(", ")}${keys.length > 5 ? ", ..." : ""}`;

/** A growable float64 array. */
class Totals {
  values = new Float64Array(1024);
  add(i: number, v: number): void {
    if (i >= this.values.length) {
      const grown = new Float64Array(Math.max(i + 1, this.values.length * 2));
      grown.set(this.values);
      this.values = grown;
    }
    this.values[i]! += v;
  }
}

/** The scans, read in input order by {@link geneSpace} (once, twice for an inner join). */
export interface ScanPass {
  count: number;
  summary(i: number): Promise<ScanSummary>;
}

function refuseRepeated(s: ScanSummary): void {
  const k = repeatedKey(s.keys);
  if (k !== undefined) {
    throw refuse(
      `${s.location}: gene key ${JSON.stringify(k)} appears twice, so its counts cannot be matched with the other inputs' genes; match on a unique var column (the var key option, e.g. gene_ids) or make the names unique first (AnnData.var_names_make_unique)`,
      { object: s.location, field: "var_key", found: k },
    );
  }
}

/** The keys all inputs share, in the first input's order. */
async function intersection(scans: ScanPass): Promise<string[]> {
  let keys: string[] = [];
  for (let i = 0; i < scans.count; i++) {
    const s = await scans.summary(i);
    refuseRepeated(s);
    if (i === 0) keys = s.keys;
    else {
      const here = new Set(s.keys);
      keys = keys.filter((k) => here.has(k));
    }
  }
  return keys;
}

/** The gene space of the scans (see the module comment); `onScan` sees each summary of the last pass. */
export async function geneSpace(
  scans: ScanPass,
  opts: GeneSpaceOptions = {},
  onScan?: (s: ScanSummary, i: number) => void,
): Promise<GeneSpace> {
  const join = opts.join ?? "outer";
  // One input is its own gene space: its keys need not be unique (10x symbols repeat), nothing is matched.
  const matched =
    scans.count > 1 || opts.genes !== undefined || opts.order !== undefined || opts.match === true;
  let fixed: string[] | undefined;
  if (opts.genes !== undefined) {
    const k = repeatedKey(opts.genes);
    if (k !== undefined)
      throw refuse(`the declared gene list names ${JSON.stringify(k)} twice`, { field: "genes", found: k });
    fixed = opts.genes;
  } else if (join === "inner" && matched) {
    fixed = await intersection(scans);
  }
  const keys: string[] = fixed ? [...fixed] : [];
  const where = positions(keys);
  const totals = new Totals();
  const firstOf: number[] = fixed ? new Array<number>(keys.length).fill(-1) : [];
  const rowOf: number[] = fixed ? new Array<number>(keys.length).fill(0) : [];
  let nnz = 0;
  let total = 0;
  const inputNnz: number[] = [];
  const inputTotal: number[] = [];
  const dropped: DroppedGenes[] = [];
  for (let input = 0; input < scans.count; input++) {
    const s = await scans.summary(input);
    if (matched && join !== "inner") refuseRepeated(s);
    const out: string[] = [];
    let lost = 0;
    let all = 0;
    let givenNnz = 0;
    let given = 0;
    for (let g = 0; g < s.keys.length; g++) {
      const t = s.totals[g]!;
      all += t;
      let u = matched ? where.get(s.keys[g]!) : g;
      if (u === undefined && fixed === undefined) {
        u = keys.length;
        keys.push(s.keys[g]!);
        where.set(s.keys[g]!, u);
        firstOf.push(input);
        rowOf.push(g);
      } else if (!matched) {
        keys.push(s.keys[g]!);
        firstOf.push(input);
        rowOf.push(g);
      }
      if (u === undefined) {
        out.push(s.keys[g]!);
        lost += t;
        continue;
      }
      if (firstOf[u] === -1) {
        firstOf[u] = input;
        rowOf[u] = g;
      }
      totals.add(u, t);
      given += t;
      givenNnz += s.geneNnz[g]!;
    }
    nnz += givenNnz;
    total += given;
    inputNnz.push(givenNnz);
    inputTotal.push(given);
    onScan?.(s, input);
    if (out.length === 0) continue;
    if (opts.genes !== undefined && !opts.dropUnlisted) {
      throw refuse(
        `${s.location}: ${out.length} of its ${s.keys.length} genes are not in ${opts.genesName ?? "the declared gene list"} (${few(out)}), holding ${lost} counts (${((100 * lost) / (all || 1)).toFixed(2)}% of this input's). ${opts.genesName ? `A dataset's genes are fixed: drop them with the drop-unlisted-genes option, or convert all the inputs anew` : "Add them to the list, or drop them with the drop-unlisted-genes option"}`,
        { object: s.location, field: "genes", found: out.slice(0, 20) },
      );
    }
    dropped.push({
      input,
      location: s.location,
      count: out.length,
      keys: out.slice(0, 20),
      counts: lost,
      share: all > 0 ? lost / all : 0,
    });
  }
  if (keys.length === 0) {
    throw refuse(
      join === "inner" && opts.genes === undefined
        ? `the ${scans.count} inputs share no gene, so an inner join keeps none; check that they are matched on the same kind of key (the var key option), or use the outer join`
        : "the gene space is empty",
      { field: "genes" },
    );
  }
  const sums = new Float64Array(keys.length);
  sums.set(totals.values.subarray(0, Math.min(keys.length, totals.values.length)));
  return {
    keys,
    matched,
    order: givenOrder(keys, where, opts.order) ?? orderGenesByTotal(sums),
    totals: sums,
    firstOf: Int32Array.from(firstOf),
    rowOf: Int32Array.from(rowOf),
    nnz,
    total,
    inputNnz,
    inputTotal,
    dropped,
  };
}

/** The order of `order` (keys) as indices into `keys`, refused unless it lists each key once. */
function givenOrder(
  keys: string[],
  where: Map<string, number>,
  order: string[] | undefined,
): Int32Array | undefined {
  if (order === undefined) return undefined;
  const out = new Int32Array(order.length);
  const used = new Uint8Array(keys.length);
  for (let j = 0; j < order.length; j++) {
    const u = where.get(order[j]!);
    if (u === undefined || used[u]) {
      throw refuse(
        `the gene order lists ${JSON.stringify(order[j])} ${u === undefined ? "which is not in the gene space" : "twice"}; it must list each of the ${keys.length} genes once`,
        { field: "gene_order", found: order[j] },
      );
    }
    used[u] = 1;
    out[j] = u;
  }
  if (order.length !== keys.length) {
    const missing = keys.filter((_, u) => !used[u]);
    throw refuse(
      `the gene order lists ${order.length} genes, the gene space has ${keys.length}: missing ${few(missing)}`,
      { field: "gene_order", found: missing.slice(0, 20) },
    );
  }
  return out;
}
