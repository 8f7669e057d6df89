/**
 * The analyses over the statistics: the selection's markers against the rest or a category
 * (scanpy's t-test), markers of every category, dot plots, violins, means per category.
 */

import { type Moments, rankGenes, subtractMoments } from "@deltacells/core";
import { bars, fmt } from "./charts.js";
import { categoryColours } from "./colors.js";
import { totalsFor } from "./colouring.js";
import { searchGene } from "./genes.js";
import type { Codes, ObsValues } from "./obs.js";
import { $, act, ctx, MARKER_ROWS, MARKER_ROWS_SHOWN, showMessage, state } from "./page.js";
import { updateUrl } from "./page-url.js";
import { el } from "./panels/dom.js";
import { dotPlot, renderDotPlot } from "./panels/dotplot.js";
import { markerRows, renderMarkers } from "./panels/markers.js";
import { renderViolins, violins } from "./panels/violin.js";
import { SCALES, type Scale, scaleLabel, toScale } from "./scales.js";

/** The moments of the selection: its categories' statistics, or its rows' (read when selected). */
export async function groupMoments(signal: AbortSignal): Promise<Moments | undefined> {
  const from = state.selectionFrom;
  if (from.kind === "cells") return ctx.selectionMoments;
  const col = await ctx.session!.columnStats(from.column, signal);
  if (!col) return undefined;
  return sumMoments(from.categories.map((k) => col.moments(k)));
}

export function sumMoments(parts: Moments[]): Moments {
  const g = parts[0]!.sum.length;
  const out = { n: 0, sum: new Float64Array(g), sumSq: new Float64Array(g), nnz: new Float64Array(g) };
  for (const m of parts) {
    out.n += m.n;
    for (let j = 0; j < g; j++) {
      out.sum[j]! += m.sum[j]!;
      out.sumSq[j]! += m.sumSq[j]!;
      out.nnz[j]! += m.nnz[j]!;
    }
  }
  return out;
}

/** The selection's marker genes against the rest or a category (scanpy's t-test). */
export async function updateMarkers(): Promise<void> {
  const s = ctx.session!;
  const note = $("markers-note");
  const setNote = (text: string | undefined) => {
    state.markersNote = text;
    note.textContent = text ?? "";
  };
  if (!s.stats) {
    setNote(s.statsProblem);
    return;
  }
  if (state.selection.length < 2) {
    state.markers = undefined;
    $("markers").replaceChildren();
    setNote("Marker genes need at least 2 selected cells (a lasso, or a category in the legend).");
    return;
  }
  const started = performance.now();
  const done = await act("markers", s.url, async (signal) => {
    const group = await groupMoments(signal);
    if (!group) return undefined;
    const from = state.selectionFrom;
    let ref: Moments;
    let refLabel = "the rest";
    if (ctx.reference !== "rest" && from.kind === "categories") {
      const col = (await s.columnStats(from.column, signal))!;
      ref = col.moments(ctx.reference);
      refLabel = col.categories[ctx.reference]!;
    } else ref = subtractMoments(await s.geneStats(signal), group);
    if (ref.n < 2)
      return {
        error: `the reference (${refLabel}) has ${ref.n} cell${ref.n === 1 ? "" : "s"}: a t-test needs 2`,
      };
    const table = rankGenes(group, ref);
    return { table, refLabel, n: group.n, nRef: ref.n };
  });
  if (!done) return;
  if ("error" in done) {
    state.markers = undefined;
    $("markers").replaceChildren();
    setNote(done.error);
    return;
  }
  const from = state.selectionFrom;
  const groupLabel =
    from.kind === "categories" && ctx.colourValues?.kind === "category"
      ? from.categories
          .map((k) => (ctx.colourValues as Extract<ObsValues, { kind: "category" }>).categories[k])
          .join(" + ")
      : `${done.n.toLocaleString("en-US")} selected cells`;
  const rows = markerRows(done.table, s.nameOfColumn, MARKER_ROWS);
  state.markers = {
    group: groupLabel,
    reference: done.refLabel,
    nGroup: done.n,
    nReference: done.nRef,
    rows,
    ms: performance.now() - started,
  };
  setNote(
    `${groupLabel} against ${done.refLabel} (${done.nRef.toLocaleString("en-US")} cells): Welch's t-test on log1p(counts per 10,000), as scanpy's rank_genes_groups`,
  );
  renderMarkers($("markers"), rows.slice(0, MARKER_ROWS_SHOWN), (gene) => void searchGene(gene));
}

/** The markers of every category of the colouring column, each against the rest: statistics only. */
export async function allMarkers(): Promise<void> {
  const s = ctx.session;
  const c = ctx.colourValues;
  if (!s?.stats || c?.kind !== "category") return;
  const started = performance.now();
  const done = await act(`markers of every ${c.name}`, s.url, async (signal) => {
    const [col, total] = await Promise.all([s.columnStats(c.name, signal), s.geneStats(signal)]);
    if (!col)
      throw new Error(
        `the dataset's statistics have no column ${JSON.stringify(c.name)} (${s.stats?.index.skipped.find((k) => k.name === c.name)?.reason ?? "not categorical"})`,
      );
    return col.categories.flatMap((label, k) => {
      const m = col.moments(k);
      if (m.n < 2 || total.n - m.n < 2) return [];
      return [{ label, rows: markerRows(rankGenes(m, subtractMoments(total, m)), s.nameOfColumn, 5) }];
    });
  });
  if (!done) return;
  state.allMarkers = { column: c.name, groups: done, ms: performance.now() - started };
  const target = $("all-markers");
  target.replaceChildren(
    el("div", { class: "legend-title" }, `Top markers of each ${c.name}`),
    ...done.map((g) =>
      el(
        "div",
        { class: "all-markers-row", "data-category": g.label },
        el("span", { class: "all-markers-label", title: g.label }, g.label),
        ...g.rows.map((r) => {
          const b = el(
            "button",
            { type: "button", class: "gene-link", title: `score ${fmt(r.score)}` },
            r.gene,
          );
          b.addEventListener("click", () => void searchGene(r.gene));
          return b;
        }),
      ),
    ),
  );
}

/** The dot plot of `genes` per category of the colouring column (or the first with statistics). */
export async function drawDotPlot(genes: string[]): Promise<void> {
  const s = ctx.session;
  if (!s) return;
  $<HTMLInputElement>("dotplot-genes").value = genes.join(", ");
  if (!s.stats) {
    showMessage(`A dot plot needs the dataset's statistics: ${s.statsProblem}`);
    return;
  }
  const unknown = genes.filter((g) => !s.names.includes(g));
  if (unknown.length) {
    showMessage(`No gene named ${unknown.map((n) => JSON.stringify(n)).join(", ")} in this dataset.`);
    return;
  }
  const column = ctx.colourValues?.kind === "category" ? ctx.colourValues.name : s.stats.columns[0];
  if (!column) {
    showMessage("A dot plot needs a categorical obs column with statistics; this dataset has none.");
    return;
  }
  const started = performance.now();
  const col = await act(`dot plot of ${genes.length}`, s.url, (signal) => s.columnStats(column, signal));
  if (!col) return;
  const d = dotPlot(
    col,
    genes.map((name) => ({ name, column: s.columnOf[s.names.indexOf(name)]! })),
  );
  renderDotPlot($("dotplot"), d);
  state.dotplot = { ...d, ms: performance.now() - started };
  updateUrl();
}

/** The searched gene's violins per category of the colouring column, on the scale (counts: log1p). */
export async function drawViolins(): Promise<void> {
  const s = ctx.session;
  const g = state.gene;
  const c = ctx.colourValues;
  if (!s || !g || c?.kind !== "category") {
    state.violin = undefined;
    $("violin").replaceChildren();
    return;
  }
  const scale: Scale = state.scale;
  const totals = await act(`violins of ${g.name}`, s.url, (signal) =>
    totalsFor(scale, signal).then((t) => t),
  );
  if (SCALES.find((x) => x.value === scale)!.needsTotals && !totals) return;
  const values = new Float32Array(s.nCells);
  toScale(scale, g.values, totals, values);
  const v = violins(`${g.name} per ${c.name} (${scaleLabel(scale)})`, values, c.codes as Codes, c.categories);
  state.violin = v;
  renderViolins($("violin"), v);
}

/** Mean of the searched gene per category of the colouring column, over the selection (or all cells). */
export async function updateCategoryMeans(): Promise<void> {
  const target = $("category-means");
  const c = ctx.colourValues;
  const g = state.gene;
  if (!g || c?.kind !== "category") {
    state.categoryMeans = [];
    target.replaceChildren();
    return;
  }
  const sums = new Float64Array(c.categories.length + 1);
  const counts = new Float64Array(c.categories.length + 1);
  const visit = (i: number) => {
    const k = c.codes[i]!;
    sums[k]! += g.values[i]!;
    counts[k]!++;
  };
  if (state.selection.length) for (const i of state.selection) visit(i);
  else for (let i = 0; i < c.codes.length; i++) visit(i);
  const colours = categoryColours(c.categories.length);
  state.categoryMeans = c.categories
    .map((label, k) => ({
      label,
      value: counts[k] ? sums[k]! / counts[k]! : 0,
      colour: colours[k]!,
      n: counts[k]!,
    }))
    .filter((r) => r.n > 0)
    .map(({ label, value, colour }) => ({ label, value, colour }));
  bars(
    target,
    `Mean ${g.name} per ${c.name} (${state.selection.length ? "selected cells" : "all cells"})`,
    state.categoryMeans,
  );
}
