/** The selection (plot, lasso, legend categories): its top genes, its references, its CSV. */
import { updateCategoryMeans, updateMarkers } from "./analyses.js";
import { bars } from "./charts.js";
import { drawLegend } from "./colouring.js";
import { $, act, ctx, state } from "./page.js";
import { updateUrl } from "./page-url.js";
import { el } from "./panels/dom.js";

// ---- selection ----------------------------------------------------------------------------------

export async function selectCategories(categories: number[]): Promise<void> {
  const c = ctx.colourValues;
  if (c?.kind !== "category") return;
  const ks = [...new Set(categories)].filter((k) => k >= 0 && k < c.categories.length).sort((a, b) => a - b);
  if (ks.length === 0) return selectCells([]);
  const want = new Uint8Array(c.categories.length + 1);
  for (const k of ks) want[k] = 1;
  const cells: number[] = [];
  for (let i = 0; i < c.codes.length; i++) if (want[c.codes[i]!]) cells.push(i);
  state.selectionFrom = { kind: "categories", column: c.name, categories: ks };
  if (ctx.reference !== "rest" && ks.includes(ctx.reference)) ctx.reference = "rest";
  // The plot shows the selection; its select event comes back here as cells (then ignored).
  ctx.pendingPlotSelection = cells.length;
  ctx.scatter?.select(cells);
  await selectCells(cells, true);
}

/** The plot's own select event that follows a legend selection (its cells are the same). */

export async function selectCells(cells: number[], fromCategories = false): Promise<void> {
  const s = ctx.session;
  if (!s) return;
  if (!fromCategories) {
    if (ctx.pendingPlotSelection !== undefined && cells.length === ctx.pendingPlotSelection) {
      ctx.pendingPlotSelection = undefined;
      return;
    }
    ctx.pendingPlotSelection = undefined;
    state.selectionFrom = { kind: "cells" };
    if (ctx.reference !== "rest") ctx.reference = "rest";
  }
  state.selection = cells;
  ctx.selectionMoments = undefined;
  // Where a selection's time goes (performance measures from here, which the bench reads): its
  // rows read, their moments, the markers in the page, then the next frame painted with them.
  performance.mark("selection");
  drawLegend();
  fillReferences();
  const target = $("selection");
  $("selection-info").replaceChildren();
  if (cells.length === 0) {
    state.topGenes = [];
    state.markers = undefined;
    $("markers").replaceChildren();
    target.replaceChildren();
    await updateCategoryMeans();
    updateUrl();
    return;
  }
  const download = el("button", { type: "button" }, "Download CSV");
  download.addEventListener("click", () => void downloadSelection(true));
  const clear = el("button", { type: "button" }, "Clear");
  clear.addEventListener("click", () => (ctx.scatter ? ctx.scatter.select([]) : void selectCells([])));
  $("selection-info").replaceChildren(
    el("span", {}, `${cells.length.toLocaleString("en-US")} cell${cells.length === 1 ? "" : "s"} selected `),
    download,
    clear,
  );
  if (state.selectionFrom.kind === "categories" && s.stats) {
    // A category: everything comes from its statistics, no count is read.
    state.topGenes = [];
    target.replaceChildren();
  } else {
    const summary = await act(
      `top genes of ${cells.length} cell${cells.length === 1 ? "" : "s"}`,
      s.url,
      (signal) => s.selectionSummary(cells, 10, signal),
    );
    if (!summary || state.selection !== cells) return;
    state.topGenes = summary.top;
    state.selectionRead = summary.from;
    ctx.selectionMoments = summary.moments;
    bars(
      target,
      `Top genes, mean count over ${cells.length.toLocaleString("en-US")} selected cell${cells.length === 1 ? "" : "s"}`,
      summary.top.map((t) => ({ label: t.name, value: t.mean })),
    );
  }
  await updateMarkers();
  if (state.selection === cells) {
    performance.measure("selection: markers shown", "selection");
    requestAnimationFrame(() =>
      setTimeout(() => {
        if (state.selection === cells) performance.measure("selection: painted", "selection");
      }),
    );
  }
  await updateCategoryMeans();
  updateUrl();
}

/** The categories of the selection's column as references, when the selection is a category. */
export function fillReferences(): void {
  const select = $<HTMLSelectElement>("reference");
  const c = ctx.colourValues;
  const from = state.selectionFrom;
  const options = [new Option("the rest", "rest")];
  if (from.kind === "categories" && c?.kind === "category" && c.name === from.column) {
    c.categories.forEach((label, k) => {
      if (!from.categories.includes(k)) options.push(new Option(label, String(k)));
    });
  }
  select.replaceChildren(...options);
  select.value = String(ctx.reference);
  $<HTMLButtonElement>("all-markers-button").hidden = !(c?.kind === "category" && ctx.session?.stats);
}

export async function setReference(ref: "rest" | number): Promise<void> {
  ctx.reference = ref;
  $<HTMLSelectElement>("reference").value = String(ref);
  await updateMarkers();
  updateUrl();
}

/** The selection as CSV: each cell's index and obs (barcodes first), read from its tiles only. */
export async function downloadSelection(save: boolean): Promise<string | undefined> {
  const s = ctx.session;
  if (!s || state.selection.length === 0) return undefined;
  const cells = state.selection;
  const rows = await act(`obs of ${cells.length} cells`, s.url, (signal) => s.obsRows(cells, signal));
  if (!rows) return undefined;
  const quote = (v: unknown) => {
    if (v === null || v === undefined) return "";
    const t = String(v);
    return /[",\n\r]/.test(t) ? `"${t.replaceAll('"', '""')}"` : t;
  };
  const lines = [["cell", ...rows.columns].map(quote).join(",")];
  cells.forEach((c, i) => {
    lines.push([c, ...rows.rows[i]!].map(quote).join(","));
  });
  const text = `${lines.join("\n")}\n`;
  if (save) {
    const a = el("a", {
      href: URL.createObjectURL(new Blob([text], { type: "text/csv" })),
      download: `selection-${cells.length}-cells.csv`,
    });
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  }
  return text;
}
