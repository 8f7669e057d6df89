/**
 * Colour scales of a gene: its counts, log1p(counts), counts per 10,000 (each cell's counts scaled
 * to a total of 10,000, the totals from the dataset's statistics) and log1p of those (the values
 * scanpy's markers test, and the page's). The range is the gene's own (0 to its largest value on
 * that scale) or one fixed by the user.
 */
export type Scale = "counts" | "log1p" | "cp10k" | "log1p_cp10k";

export const SCALES: { value: Scale; label: string; needsTotals: boolean }[] = [
  { value: "counts", label: "counts", needsTotals: false },
  { value: "log1p", label: "log1p(counts)", needsTotals: false },
  { value: "cp10k", label: "counts per 10,000", needsTotals: true },
  { value: "log1p_cp10k", label: "log1p(counts per 10,000)", needsTotals: true },
];

export const scaleLabel = (s: Scale) => SCALES.find((x) => x.value === s)!.label;

/** One count on `scale`, for a cell of `total` counts. */
export function onScale(scale: Scale, count: number, total: number): number {
  if (count === 0) return 0;
  switch (scale) {
    case "counts":
      return count;
    case "log1p":
      return Math.log1p(count);
    case "cp10k":
      return total > 0 ? (count * 1e4) / total : 0;
    case "log1p_cp10k":
      return total > 0 ? Math.log1p((count * 1e4) / total) : 0;
  }
}

/**
 * Every cell's value on `scale` from its counts (`counts`, dense), into `out`; returns the largest.
 * `totals` is needed by the per-10,000 scales only.
 */
export function toScale(
  scale: Scale,
  counts: Float32Array,
  totals: ArrayLike<number> | undefined,
  out: Float32Array,
): number {
  let max = 0;
  for (let i = 0; i < counts.length; i++) {
    const v = counts[i]!;
    const x = v === 0 ? 0 : onScale(scale, v, totals ? totals[i]! : 0);
    out[i] = x;
    if (x > max) max = x;
  }
  return max;
}
