/**
 * A gene's distribution per category as violins with their box (quartiles, numpy's linear
 * interpolation) and mean, from the gene's value in every cell and the column's codes.
 */
import { categoryColours } from "../colors.js";
import type { Codes } from "../obs.js";
import { el, short, svg } from "./dom.js";

export interface ViolinGroup {
  label: string;
  n: number;
  mean: number;
  min: number;
  q1: number;
  median: number;
  q3: number;
  max: number;
  /** Cells per bin over `[0, top]`, as a fraction of the group's cells. */
  density: number[];
}

export interface Violins {
  title: string;
  top: number;
  groups: ViolinGroup[];
}

const BINS = 40;

/** numpy's `quantile(x, p)` (method "linear") of sorted `x`. */
function quantile(x: Float32Array, p: number): number {
  const h = (x.length - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.min(x.length - 1, lo + 1);
  return x[lo]! + (h - lo) * (x[hi]! - x[lo]!);
}

/**
 * The violins of `values` (one per cell) per category of `codes` (code `categories.length`:
 * missing, left out); categories without cells are left out.
 */
export function violins(title: string, values: Float32Array, codes: Codes, categories: string[]): Violins {
  const k = categories.length;
  const counts = new Int32Array(k + 1);
  for (let i = 0; i < codes.length; i++) counts[codes[i]!]!++;
  // Each category's values in one array, by a counting sort of the cells.
  const start = new Int32Array(k + 2);
  for (let c = 0; c <= k; c++) start[c + 1] = start[c]! + counts[c]!;
  const next = start.slice(0, k + 1);
  const sorted = new Float32Array(values.length);
  for (let i = 0; i < codes.length; i++) sorted[next[codes[i]!]!++] = values[i]!;
  let top = 0;
  for (let i = 0; i < values.length; i++) if (values[i]! > top) top = values[i]!;
  const groups: ViolinGroup[] = [];
  for (let c = 0; c < k; c++) {
    const n = counts[c]!;
    if (n === 0) continue;
    const x = sorted.subarray(start[c]!, start[c + 1]!).sort();
    let sum = 0;
    const density = new Array<number>(BINS).fill(0);
    for (let i = 0; i < n; i++) {
      sum += x[i]!;
      density[Math.min(BINS - 1, top > 0 ? Math.floor((x[i]! / top) * BINS) : 0)]! += 1 / n;
    }
    groups.push({
      label: categories[c]!,
      n,
      mean: sum / n,
      min: x[0]!,
      q1: quantile(x, 0.25),
      median: quantile(x, 0.5),
      q3: quantile(x, 0.75),
      max: x[n - 1]!,
      density,
    });
  }
  return { title, top, groups };
}

const WIDTH = 30;
const HEIGHT = 140;

/** Draws the violins side by side, the values' axis upwards. */
export function renderViolins(target: HTMLElement, v: Violins): void {
  const left = 34;
  const bottom = 70;
  const width = left + WIDTH * v.groups.length + 4;
  const plot = svg("svg", { width, height: HEIGHT + bottom, class: "violins", role: "img" });
  const y = (value: number) => 6 + (HEIGHT - 6) * (1 - (v.top > 0 ? value / v.top : 0));
  plot.append(
    svg("text", { x: left - 4, y: y(v.top) + 4, "text-anchor": "end", class: "axis" }, short(v.top)),
    svg("text", { x: left - 4, y: y(0) + 4, "text-anchor": "end", class: "axis" }, "0"),
  );
  const colours = categoryColours(v.groups.length);
  v.groups.forEach((g, i) => {
    const cx = left + WIDTH * i + WIDTH / 2;
    const peak = Math.max(...g.density, 1e-12);
    const half = (d: number) => ((WIDTH / 2 - 2) * d) / peak;
    const bin = (b: number) => y(((b + 0.5) / g.density.length) * v.top);
    const right = g.density.map((d, b) => `${cx + half(d)},${bin(b)}`);
    const leftSide = g.density.map((d, b) => `${cx - half(d)},${bin(b)}`).reverse();
    const shape = svg("polygon", {
      points: [...right, ...leftSide].join(" "),
      fill: colours[i]!,
      "fill-opacity": 0.55,
      stroke: colours[i]!,
      "data-category": g.label,
    });
    shape.append(
      svg(
        "title",
        {},
        `${g.label}: ${g.n} cells, median ${short(g.median)}, quartiles ${short(g.q1)}–${short(g.q3)}, mean ${short(g.mean)}`,
      ),
    );
    plot.append(
      shape,
      svg("rect", { x: cx - 3, y: y(g.q3), width: 6, height: Math.max(1, y(g.q1) - y(g.q3)), fill: "#333" }),
      svg("line", {
        x1: cx - 6,
        x2: cx + 6,
        y1: y(g.median),
        y2: y(g.median),
        stroke: "#fff",
        "stroke-width": 2,
      }),
    );
    const label = svg(
      "text",
      { x: cx, y: HEIGHT + 8, transform: `rotate(60 ${cx} ${HEIGHT + 8})`, class: "axis" },
      g.label.length > 12 ? `${g.label.slice(0, 11)}…` : g.label,
    );
    label.append(svg("title", {}, g.label));
    plot.append(label);
  });
  target.replaceChildren(el("div", { class: "legend-title" }, v.title), plot);
}
