/**
 * The viewer page: open a dataset by URL, search a gene (or a gene set, or two side by side),
 * colour the embedding by it on a chosen scale or by an obs column, select cells (click, lasso,
 * legend), rank the selection's marker genes against the rest or a category, draw dot and violin
 * plots per category. Every action runs through the meter (page.ts), whose costs the status line
 * shows; the view's state lives in the URL (page-url.ts). This module opens datasets, draws the
 * embedding, restores a shared view and exposes the page.
 *
 * `window.__viewer` exposes the page's state (what is drawn, as numbers) and its actions, so
 * end-to-end tests can compare it with the readers' own answers instead of reading pixels.
 */
import { allMarkers, drawDotPlot } from "./analyses.js";
import { applyHidden, colourBy, paint, setRange, setScale, toggleCategory } from "./colouring.js";
import { compareWith, searchGene, splitGenes } from "./genes.js";
import { onHover } from "./hover.js";
import { normalise } from "./normalise.js";
import type { ObsValues } from "./obs.js";
import { $, act, ctx, meter, pageStart, showMessage, state, statusText } from "./page.js";
import { locationsFromPage, updateUrl } from "./page-url.js";
import { SCALES, type Scale } from "./scales.js";
import { createScatter } from "./scatter.js";
import { downloadSelection, selectCategories, selectCells, setReference } from "./selection.js";
import { decodeCells } from "./selection-code.js";
import { type Locations, Session } from "./session.js";
import { readViewState, type ViewState } from "./view-state.js";

const api = {
  state,
  /** A JSON-able copy of the state (typed arrays as plain arrays). */
  snapshot() {
    const g = state.gene;
    return {
      ...state,
      gene: g ? { ...g, values: Array.from(g.values), stored: Array.from(g.stored) } : undefined,
      geneSet: state.geneSet ? { ...state.geneSet, values: Array.from(state.geneSet.values) } : undefined,
      history: [...meter.history],
    };
  },
  /** A gene, or several separated by commas (a gene set). */
  searchGene: (name: string) => searchGene(name),
  compareWith: (name: string) => compareWith(name),
  colourBy: (name: string) => colourBy(name),
  setScale: (scale: Scale) => setScale(scale),
  /** A fixed range, or the gene's own without one. */
  setRange: (range?: [number, number]) => setRange(range),
  setEmbedding: (name: string) => setEmbedding(name),
  /** Selects cells as a click or lasso on the plot would (the plot's own selection too). */
  select: (cells: number[]) => (ctx.scatter ? ctx.scatter.select(cells) : selectCells(cells)),
  /** Selects the cells of categories of the colouring column, as clicks on its legend do. */
  selectCategories: (categories: number[]) => selectCategories(categories),
  toggleCategory: (k: number) => toggleCategory(k),
  setReference: (ref: "rest" | number) => setReference(ref),
  allMarkers: () => allMarkers(),
  dotPlot: (genes: string[]) => drawDotPlot(genes),
  /** The selection's barcodes and obs as CSV (also offered to the browser as a download). */
  downloadSelection: (save = true) => downloadSelection(save),
  screenPosition: (cell: number) => ctx.scatter?.screenPosition(cell),
  /** The plot shows its latest colouring at its final size: positions hold, clicks land. */
  plotSettled: () => ctx.scatter?.settled() ?? false,
  /**
   * What the plot draws: cells drawn now (all, or the subset while the view moves), swaps to the
   * subset; with `full`, the plot's own per-cell colour values and selection.
   */
  plotState: (full = false) => ctx.scatter?.inspect(full),
  cancel: () => meter.cancel(),
};
(window as unknown as { __viewer: typeof api }).__viewer = api;

// ---- opening ----------------------------------------------------------------------------------

async function openData(locs: Locations): Promise<void> {
  showMessage(undefined);
  ctx.scatter?.destroy();
  ctx.scatter = undefined;
  const s = await act("open", locs.data, async (signal) => {
    const opened = await Session.open(locs, meter, signal);
    // The per-gene statistics now: every selection's markers need them (a few hundred KB).
    if (opened.stats) await opened.geneStats(signal);
    return opened;
  });
  if (!s) {
    state.ready = true;
    return;
  }
  ctx.session = s;
  state.dataset = {
    url: s.url,
    nCells: s.nCells,
    nGenes: s.ds.nGenes,
    companion: s.companionUrl,
    obs: s.obs?.columns.map((c) => c.name) ?? [],
    stats: s.statsProblem,
  };
  $("dataset-info").textContent =
    `${s.nCells.toLocaleString("en-US")} cells × ${s.ds.nGenes.toLocaleString("en-US")} genes` +
    (s.companion
      ? ""
      : " — no sporadik companion: a gene reads every tile once (convert with --sporadik for two reads per gene)");
  $("main").hidden = false;
  fillChoices(s);
  const view = readViewState(new URLSearchParams(location.search));
  const embeddings = s.embeddings();
  state.embeddings = embeddings.map((e) => e.name);
  const emb = embeddings.find((e) => e.name === view.embedding) ?? embeddings[0];
  $("no-embedding").hidden = emb !== undefined;
  $("scatter-wrap").hidden = emb === undefined;
  $("legend").hidden = emb === undefined;
  $("embedding-field").hidden = emb === undefined;
  if (emb) await drawEmbedding(emb.name);
  state.firstDrawMs = performance.now() - pageStart;
  await restore(view);
  state.ready = true;
}

/** Draws the embedding `name` (its two obs columns), replacing the plot; the colouring stays. */
async function drawEmbedding(name: string): Promise<void> {
  const s = ctx.session!;
  const emb = s.embeddings().find((e) => e.name === name);
  if (!emb) return;
  const cols = await act("embedding", s.url, (signal) => s.readObs([emb.x, emb.y], signal));
  if (!cols) return;
  const x = cols.get(emb.x) as Extract<ObsValues, { kind: "numeric" }>;
  const y = cols.get(emb.y) as Extract<ObsValues, { kind: "numeric" }>;
  // The coordinates as stored, for the rows in embedding order (computed once the plot is drawn).
  const stored = { x: x.values, y: /spatial/i.test(name) ? y.values.slice() : y.values };
  // Spatial coordinates are image pixels, y downwards: flipped, the section shows as in its image.
  if (/spatial/i.test(name)) for (let i = 0; i < y.values.length; i++) y.values[i] = -y.values[i]!;
  ctx.coords = normalise(x.values, y.values);
  ctx.scatter?.destroy();
  // `?lod=N`: draw N cells while the view moves (tests use a small N on small data); a page that
  // defines `__viewerDrawAllAfter` (a promise: the tests') draws every cell once it settles.
  const lod = Number(new URLSearchParams(location.search).get("lod") ?? Number.NaN);
  const allCellsAfter = (window as { __viewerDrawAllAfter?: Promise<unknown> }).__viewerDrawAllAfter;
  ctx.scatter = createScatter(
    $<HTMLCanvasElement>("scatter"),
    ctx.coords,
    {
      hover: (cell, px, py) => onHover(cell, px, py),
      select: (cells) => void selectCells(cells),
      firstFrame: () => {
        state.firstFrameMs ??= performance.now() - pageStart;
      },
      drawn: () => {
        state.draws.push(performance.now());
        if (state.draws.length > 500) state.draws.shift();
      },
    },
    { ...(lod > 0 ? { lodPoints: lod } : {}), allCellsAfter },
  );
  state.embedding = emb.name;
  $<HTMLSelectElement>("embedding").value = emb.name;
  const drawn = ctx.scatter;
  void drawn.allDrawn.then(() => {
    if (ctx.scatter === drawn) state.allCellsMs ??= performance.now() - pageStart;
  });
  await paint();
  // After the first draw, on a worker: a selection before it is done reads the companion's rows.
  state.rowsProblem = s.rowsProblem;
  void s.useEmbedding([emb.x, emb.y], stored.x, stored.y).then(
    () => {
      state.rowsOrderMs = s.rowsOrderMs;
      state.rowsProblem = s.rowsProblem;
    },
    (err: unknown) => {
      state.rowsProblem = (err as Error).message;
    },
  );
  if (state.hiddenCategories.length) applyHidden();
  if (state.selection.length && state.selectionFrom.kind === "cells") ctx.scatter.select(state.selection);
}

async function setEmbedding(name: string): Promise<void> {
  await drawEmbedding(name);
  if (state.pair && state.gene) await compareWith(state.pair.b);
  updateUrl();
}

function fillChoices(s: Session): void {
  const select = $<HTMLSelectElement>("color-by");
  const options = [new Option("the searched gene", "")];
  for (const c of s.colourColumns()) options.push(new Option(`${c.name} (${c.kind})`, c.name));
  select.replaceChildren(...options);
  select.onchange = () => void colourBy(select.value);
  const emb = $<HTMLSelectElement>("embedding");
  emb.replaceChildren(
    ...s
      .embeddings()
      .map((e) => new Option(e.name.replace(/^X_/, "").replace(/^pca$/, "PCA (1, 2)"), e.name)),
  );
  emb.onchange = () => void setEmbedding(emb.value);
  const scale = $<HTMLSelectElement>("scale");
  scale.replaceChildren(
    ...SCALES.map((x) => {
      const o = new Option(x.label, x.value);
      o.disabled = x.needsTotals && !s.stats;
      return o;
    }),
  );
  scale.value = state.scale;
  scale.onchange = () => void setScale(scale.value as Scale);
  const mode = $<HTMLSelectElement>("range-mode");
  const lo = $<HTMLInputElement>("range-lo");
  const hi = $<HTMLInputElement>("range-hi");
  const onRange = () =>
    void setRange(mode.value === "fixed" ? [Number(lo.value), Number(hi.value)] : undefined);
  mode.onchange = onRange;
  lo.onchange = onRange;
  hi.onchange = onRange;
  $<HTMLSelectElement>("reference").onchange = () => {
    const v = $<HTMLSelectElement>("reference").value;
    void setReference(v === "rest" ? "rest" : Number(v));
  };
  const allButton = $<HTMLButtonElement>("all-markers-button");
  allButton.onclick = () => void allMarkers();
  const dot = $<HTMLInputElement>("dotplot-genes");
  dot.onkeydown = (ev) => {
    if (ev.key === "Enter") void drawDotPlot(splitGenes(dot.value));
  };
  $("markers-note").textContent = s.statsProblem ?? "";
}

/** Puts the view of a shared URL back. */
async function restore(view: ViewState): Promise<void> {
  const s = ctx.session!;
  ctx.restoring = true;
  try {
    if (view.scale && SCALES.some((x) => x.value === view.scale)) await setScale(view.scale as Scale);
    if (view.range) await setRange(view.range);
    if (view.colour) await colourBy(view.colour);
    if (view.hidden?.length && ctx.colourValues?.kind === "category") {
      for (const k of view.hidden) if (k >= 0 && k < ctx.colourValues.categories.length) toggleCategory(k);
    }
    if (view.gene) await searchGene(view.gene);
    if (view.gene2) await compareWith(view.gene2);
    if (view.reference !== undefined) ctx.reference = view.reference;
    if (view.selection && "categories" in view.selection) await selectCategories(view.selection.categories);
    else if (view.selection && "cells" in view.selection) {
      try {
        api.select(decodeCells(view.selection.cells, s.nCells));
      } catch (err) {
        showMessage((err as Error).message);
      }
    }
    if (view.dotplot?.length) await drawDotPlot(view.dotplot);
  } finally {
    ctx.restoring = false;
  }
  updateUrl();
}

// ---- start ----------------------------------------------------------------------------------------

$<HTMLFormElement>("open-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const value = $<HTMLInputElement>("data-url").value.trim();
  if (!value) return;
  const url = new URL(location.href);
  url.search = "";
  url.searchParams.set("data", value);
  history.pushState(null, "", url);
  const locs = locationsFromPage();
  if (locs) void openData(locs);
});

const initial = locationsFromPage();
if (initial) {
  $<HTMLInputElement>("data-url").value = new URLSearchParams(location.search).get("data") ?? "";
  void openData(initial);
} else {
  statusText.textContent = "no dataset open: enter a URL above";
  state.ready = true;
}
