/** Colour maps: viridis for counts and numeric columns, a qualitative palette for categories. */

// Viridis at 9 stops (matplotlib), interpolated linearly: close enough to the full table by eye.
const VIRIDIS_STOPS = [
  [68, 1, 84],
  [71, 44, 122],
  [59, 81, 139],
  [44, 113, 142],
  [33, 144, 141],
  [39, 173, 129],
  [92, 200, 99],
  [170, 220, 50],
  [253, 231, 37],
];

/** `n` hex colours from dark purple (0) to yellow (1). */
export function viridis(n: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const t = (i / Math.max(1, n - 1)) * (VIRIDIS_STOPS.length - 1);
    const k = Math.min(VIRIDIS_STOPS.length - 2, Math.floor(t));
    const f = t - k;
    const [a, b] = [VIRIDIS_STOPS[k]!, VIRIDIS_STOPS[k + 1]!];
    const c = a.map((v, j) => Math.round(v + (b[j]! - v) * f));
    out.push(`#${c.map((v) => v.toString(16).padStart(2, "0")).join("")}`);
  }
  return out;
}

/** Tableau 20: distinguishable categories; more categories repeat the cycle. */
const TAB20 = [
  "#1f77b4",
  "#ff7f0e",
  "#2ca02c",
  "#d62728",
  "#9467bd",
  "#8c564b",
  "#e377c2",
  "#7f7f7f",
  "#bcbd22",
  "#17becf",
  "#aec7e8",
  "#ffbb78",
  "#98df8a",
  "#ff9896",
  "#c5b0d5",
  "#c49c94",
  "#f7b6d2",
  "#c7c7c7",
  "#dbdb8d",
  "#9edae5",
];

/** A colour per category, plus grey for missing values at the end. */
export function categoryColours(n: number): string[] {
  return [...Array.from({ length: n }, (_, i) => TAB20[i % TAB20.length]!), "#dddddd"];
}
