/**
 * What colours the plot: the gene on its scale and range, or an obs column with its legend
 * (select, shift-add, hide); without a plot, the category table.
 */
import { drawDotPlot, drawViolins, updateCategoryMeans } from "./analyses.js";
import { categoryLegend, colourBar, fmt } from "./charts.js";
import { compareWith, searchGeneSet } from "./genes.js";
import { $, act, ctx, state } from "./page.js";
import { updateUrl } from "./page-url.js";
import { el } from "./panels/dom.js";
import { SCALES, type Scale, scaleLabel, toScale } from "./scales.js";
import { fillReferences, selectCategories, selectCells } from "./selection.js";

// ---- colouring ---------------------------------------------------------------------------------

/** Every cell's total count, when `scale` needs it (one read of the statistics, kept). */
export async function totalsFor(scale: Scale, signal: AbortSignal) {
  if (!SCALES.find((x) => x.value === scale)!.needsTotals) return undefined;
  const totals = ctx.session?.cellTotals(signal);
  if (!totals)
    throw new Error(`${scaleLabel(scale)} needs the dataset's statistics: ${ctx.session?.statsProblem}`);
  return totals;
}

export async function setScale(scale: Scale): Promise<void> {
  state.scale = scale;
  $<HTMLSelectElement>("scale").value = scale;
  if (state.geneSet) await searchGeneSet(ctx.session!, state.geneSet.names);
  else await paint();
  await drawViolins();
  if (state.pair) await compareWith(state.pair.b);
  updateUrl();
}

export async function setRange(range: [number, number] | undefined): Promise<void> {
  const mode = $<HTMLSelectElement>("range-mode");
  mode.value = range ? "fixed" : "gene";
  $("range-fixed").hidden = !range;
  if (range) {
    $<HTMLInputElement>("range-lo").value = String(range[0]);
    $<HTMLInputElement>("range-hi").value = String(range[1]);
    state.range = { mode: "fixed", lo: range[0], hi: range[1] };
  } else state.range = { mode: "gene", lo: 0, hi: 0 };
  await paint();
  updateUrl();
}

export async function colourBy(name: string): Promise<void> {
  const s = ctx.session;
  if (!s) return;
  $<HTMLSelectElement>("color-by").value = name;
  if (state.selectionFrom.kind === "categories" && state.selectionFrom.column !== name) await selectCells([]);
  state.hiddenCategories = [];
  ctx.scatter?.setHidden(undefined);
  state.allMarkers = undefined;
  $("all-markers").replaceChildren();
  if (name === "") {
    ctx.colourValues = undefined;
    state.colourBy = undefined;
    await paint();
    updateUrl();
    return;
  }
  const cols = await act(`obs ${name}`, s.url, (signal) => s.readObs([name], signal));
  if (!cols) return;
  ctx.colourValues = cols.get(name)!;
  await paint();
  await updateCategoryMeans();
  await drawViolins();
  fillReferences();
  if (state.dotplot) await drawDotPlot(state.dotplot.genes);
  updateUrl();
}

/** The gene (or gene set) on the current scale and range: per cell values and the range drawn. */
export async function geneColouring(): Promise<
  { values: Float32Array; lo: number; hi: number; title: string } | undefined
> {
  const s = ctx.session!;
  const fixed = state.range.mode === "fixed";
  if (state.geneSet) {
    const { values, max } = state.geneSet;
    return {
      values,
      lo: fixed ? state.range.lo : 0,
      hi: fixed ? state.range.hi : max,
      title: `gene set (${scaleLabel(state.scale)})`,
    };
  }
  const g = state.gene;
  if (!g) return undefined;
  if (state.scale === "counts") {
    return {
      values: g.values,
      lo: fixed ? state.range.lo : 0,
      hi: fixed ? state.range.hi : g.max,
      title: `${g.name} (counts)`,
    };
  }
  const totals = await act(`scale ${state.scale}`, s.url, (signal) =>
    totalsFor(state.scale, signal).then((t) => t),
  );
  if (state.scale !== "log1p" && !totals) return undefined;
  ctx.scaled = ctx.scaled?.length === s.nCells ? ctx.scaled : new Float32Array(s.nCells);
  const max = toScale(state.scale, g.values, totals, ctx.scaled);
  return {
    values: ctx.scaled,
    lo: fixed ? state.range.lo : 0,
    hi: fixed ? state.range.hi : max,
    title: `${g.name} (${scaleLabel(state.scale)})`,
  };
}

export async function paint(): Promise<void> {
  const legend = $("legend");
  const c = ctx.colourValues;
  if (c?.kind === "category") {
    const counts = new Array<number>(c.categories.length + 1).fill(0);
    for (let i = 0; i < c.codes.length; i++) counts[c.codes[i]!]!++;
    state.colourBy = { name: c.name, kind: "category", counts };
    drawLegend();
    await ctx.scatter?.setColouring({ kind: "category", codes: c.codes, nCategories: c.categories.length });
    renderTable();
  } else if (c?.kind === "numeric") {
    let [lo, hi] = [Infinity, -Infinity];
    for (const v of c.values) if (Number.isFinite(v)) [lo, hi] = [Math.min(lo, v), Math.max(hi, v)];
    if (ctx.scatter) colourBar(legend, c.name, lo, hi);
    state.colourBy = { name: c.name, kind: "numeric" };
    await ctx.scatter?.setColouring({ kind: "continuous", values: c.values, min: lo, max: hi });
  } else {
    const g = await geneColouring();
    if (g) {
      state.range = { mode: state.range.mode, lo: g.lo, hi: g.hi };
      // Without a plot there is nothing for a colour bar to explain.
      if (ctx.scatter) colourBar(legend, g.title, g.lo, g.hi);
      await ctx.scatter?.setColouring({ kind: "continuous", values: g.values, min: g.lo, max: g.hi });
    } else {
      legend.replaceChildren();
      await ctx.scatter?.setColouring({ kind: "none" });
    }
  }
}

/** The legend of the colouring category: click selects a category, shift adds one, the eye hides it. */
export function drawLegend(): void {
  const c = ctx.colourValues;
  if (c?.kind !== "category" || !ctx.scatter) {
    if (c?.kind === "category") $("legend").replaceChildren();
    return;
  }
  const from = state.selectionFrom;
  const selected = new Set(from.kind === "categories" && from.column === c.name ? from.categories : []);
  categoryLegend($("legend"), c.name, c.categories, state.colourBy?.counts ?? [], {
    select: (k, add) => {
      const now = [...selected];
      const next = add ? (selected.has(k) ? now.filter((x) => x !== k) : [...now, k]) : [k];
      void selectCategories(next);
    },
    toggle: (k) => toggleCategory(k),
    selected,
    hidden: new Set(state.hiddenCategories),
  });
}

export function toggleCategory(k: number): void {
  const hidden = new Set(state.hiddenCategories);
  if (hidden.has(k)) hidden.delete(k);
  else hidden.add(k);
  state.hiddenCategories = [...hidden].sort((a, b) => a - b);
  applyHidden();
  drawLegend();
  updateUrl();
}

export function applyHidden(): void {
  const c = ctx.colourValues;
  if (!ctx.scatter || c?.kind !== "category") return;
  if (state.hiddenCategories.length === 0) {
    ctx.scatter.setHidden(undefined);
    return;
  }
  const hide = new Uint8Array(c.categories.length + 1);
  for (const k of state.hiddenCategories) hide[k] = 1;
  const mask = new Uint8Array(c.codes.length);
  for (let i = 0; i < c.codes.length; i++) mask[i] = hide[c.codes[i]!]!;
  ctx.scatter.setHidden(mask);
}

/** Without an embedding, the obs category as a table of cells, fraction expressing and mean. */
export function renderTable(): void {
  const c = ctx.colourValues;
  const target = $("table");
  if (ctx.scatter || c?.kind !== "category") {
    state.table = [];
    target.replaceChildren();
    return;
  }
  const g = state.gene;
  state.table = [];
  const rows = c.categories.map((name, k) => {
    let n = 0;
    let expressing = 0;
    let sum = 0;
    for (let i = 0; i < c.codes.length; i++) {
      if (c.codes[i] !== k) continue;
      n++;
      const v = g?.values[i] ?? 0;
      if (v > 0) expressing++;
      sum += v;
    }
    state.table.push({ label: name, cells: n, expressing, mean: sum / Math.max(1, n) });
    return el(
      "tr",
      {},
      el("td", {}, name),
      el("td", {}, String(n)),
      el("td", {}, g ? `${((100 * expressing) / Math.max(1, n)).toFixed(1)}%` : "–"),
      el("td", {}, g ? fmt(sum / Math.max(1, n)) : "–"),
    );
  });
  const head = el("tr", {}, ...[c.name, "cells", "expressing", "mean"].map((h) => el("th", {}, h)));
  target.replaceChildren(el("table", {}, el("thead", {}, head), el("tbody", {}, ...rows)));
}
