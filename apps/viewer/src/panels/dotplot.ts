/**
 * The dot plot of genes per category (scanpy's `pl.dotplot`): for each category and gene, the mean
 * of log1p(counts per 10,000) over the category's cells (zeros included) as the dot's colour, and
 * the fraction of them expressing the gene as its size. Both from the column's statistics: no
 * count is read.
 */
import type { ColumnStats } from "@deltacells/core";
import { viridis } from "../colors.js";
import { el, short, svg } from "./dom.js";

export interface DotPlot {
  column: string;
  genes: string[];
  /** The categories with cells (a category without any has no mean). */
  categories: string[];
  /** `mean[c][g]` and `fraction[c][g]`, category by gene. */
  mean: number[][];
  fraction: number[][];
}

/** The dot plot of `genes` (names and their statistics' columns) over `col`'s categories. */
export function dotPlot(col: ColumnStats, genes: { name: string; column: number }[]): DotPlot {
  const categories: string[] = [];
  const mean: number[][] = [];
  const fraction: number[][] = [];
  col.categories.forEach((label, k) => {
    const m = col.moments(k);
    if (m.n === 0) return;
    categories.push(label);
    mean.push(genes.map((g) => m.sum[g.column]! / m.n));
    fraction.push(genes.map((g) => m.nnz[g.column]! / m.n));
  });
  return { column: col.name, genes: genes.map((g) => g.name), categories, mean, fraction };
}

const CELL = 22;

/** Draws `d` as an SVG: a row per category, a column per gene, the largest dot a full cell. */
export function renderDotPlot(target: HTMLElement, d: DotPlot): void {
  const left = Math.min(140, 8 + 6.5 * Math.max(...d.categories.map((c) => c.length), 4));
  const top = 8 + 6.5 * Math.max(...d.genes.map((g) => g.length), 4);
  const width = left + CELL * d.genes.length + 4;
  const height = top + CELL * d.categories.length + 4;
  const plot = svg("svg", { width, height, class: "dotplot", role: "img" });
  let hi = 0;
  for (const row of d.mean) for (const v of row) hi = Math.max(hi, v);
  const colours = viridis(64);
  d.genes.forEach((g, j) => {
    const x = left + CELL * j + CELL / 2;
    plot.append(
      svg("text", { x, y: top - 4, transform: `rotate(-60 ${x} ${top - 4})`, class: "dot-gene" }, g),
    );
  });
  d.categories.forEach((c, i) => {
    const y = top + CELL * i + CELL / 2;
    const label = svg("text", { x: left - 4, y: y + 4, "text-anchor": "end", class: "dot-category" }, c);
    label.append(svg("title", {}, c));
    plot.append(label);
    d.genes.forEach((g, j) => {
      const f = d.fraction[i]![j]!;
      const m = d.mean[i]![j]!;
      const dot = svg("circle", {
        cx: left + CELL * j + CELL / 2,
        cy: y,
        r: Math.max(0.5, (CELL / 2 - 1) * Math.sqrt(f)),
        fill: colours[Math.round((hi > 0 ? m / hi : 0) * 63)]!,
        "data-gene": g,
        "data-category": c,
      });
      dot.append(svg("title", {}, `${g} in ${c}: mean ${short(m)}, ${(100 * f).toFixed(1)}% expressing`));
      plot.append(dot);
    });
  });
  target.replaceChildren(
    el(
      "div",
      { class: "legend-title" },
      `Dot plot per ${d.column}: colour mean log1p(counts per 10,000), 0 to ${short(hi)}; size fraction expressing`,
    ),
    plot,
  );
}
