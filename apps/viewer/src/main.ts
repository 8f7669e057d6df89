/**
 * The viewer page: open a dataset by URL, search a gene (or a gene set, or two side by side),
 * colour the embedding by it on a chosen scale or by an obs column, select cells (click, lasso,
 * legend), rank the selection's marker genes against the rest or a category, draw dot and violin
 * plots per category. Every action runs through the meter, whose costs the status line shows;
 * the view's state lives in the URL.
 *
 * `window.__viewer` exposes the page's state (what is drawn, as numbers) so end-to-end tests can
 * compare it with the readers' own answers instead of reading pixels.
 */
import { type Moments, rankGenes, subtractMoments } from "@deltacells/core";
import { bars, categoryLegend, colourBar, drawHistogram, fmt, histogram } from "./charts.js";
import { categoryColours } from "./colors.js";
import { explain } from "./explain.js";
import { type ActionCost, describeCost, formatBytes, Meter } from "./meter.js";
import { normalise } from "./normalise.js";
import type { Codes, ObsValues } from "./obs.js";
import { type Pair, renderPair } from "./panels/compare.js";
import { el } from "./panels/dom.js";
import { type DotPlot, dotPlot, renderDotPlot } from "./panels/dotplot.js";
import { type MarkerRow, markerRows, renderMarkers } from "./panels/markers.js";
import { renderViolins, type Violins, violins } from "./panels/violin.js";
import { SCALES, type Scale, scaleLabel, toScale } from "./scales.js";
import { createScatter, type Scatter } from "./scatter.js";
import { decodeCells, encodeCells } from "./selection-code.js";
import { absolute, type GeneValues, type Locations, Session } from "./session.js";
import { readViewState, type ViewState, writeViewState } from "./view-state.js";

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

/** Rows of a markers table the page shows and keeps. */
const MARKER_ROWS = 100;
const MARKER_ROWS_SHOWN = 20;

/** The state the tests read. Arrays are copied into plain ones on request (see `snapshot`). */
interface ViewerState {
  ready: boolean;
  error: string | undefined;
  dataset:
    | {
        url: string;
        nCells: number;
        nGenes: number;
        companion: string | undefined;
        obs: string[];
        stats: string | undefined;
      }
    | undefined;
  embedding: string | undefined;
  embeddings: string[];
  firstDrawMs: number | undefined;
  gene: GeneValues | undefined;
  geneMs: number | undefined;
  /** A gene set: its genes and each cell's mean over them, on the scale. */
  geneSet: { names: string[]; values: Float32Array; max: number } | undefined;
  pair: Pair | undefined;
  scale: Scale;
  /** The colour scale's range now: the gene's own, or fixed. */
  range: { mode: "gene" | "fixed"; lo: number; hi: number };
  colourBy: { name: string; kind: string; counts?: number[] } | undefined;
  /** The histogram under the gene: bin counts and its axis's end labels. */
  histogram: { counts: number[]; labels: [string, string] } | undefined;
  selection: number[];
  /** Where the selection came from: cells picked on the plot, or categories of a column. */
  selectionFrom: { kind: "cells" } | { kind: "categories"; column: string; categories: number[] };
  hiddenCategories: number[];
  topGenes: { name: string; mean: number }[];
  markers:
    | { group: string; reference: string; nGroup: number; nReference: number; rows: MarkerRow[]; ms: number }
    | undefined;
  markersNote: string | undefined;
  allMarkers: { column: string; groups: { label: string; rows: MarkerRow[] }[]; ms: number } | undefined;
  dotplot: (DotPlot & { ms: number }) | undefined;
  violin: Violins | undefined;
  categoryMeans: { label: string; value: number }[];
  /** The fallback table without an embedding: per category, cells, cells expressing the gene, mean. */
  table: { label: string; cells: number; expressing: number; mean: number }[];
  hovered: number | undefined;
  hoverText: string;
  history: ActionCost[];
  busy: number;
  /** When the plot last redrew (ms since page load), the latest 500: the bench's frame times. */
  draws: number[];
}

const meter = new Meter();
const state: ViewerState = {
  ready: false,
  error: undefined,
  dataset: undefined,
  embedding: undefined,
  embeddings: [],
  firstDrawMs: undefined,
  gene: undefined,
  geneMs: undefined,
  geneSet: undefined,
  pair: undefined,
  scale: "counts",
  range: { mode: "gene", lo: 0, hi: 0 },
  colourBy: undefined,
  histogram: undefined,
  selection: [],
  selectionFrom: { kind: "cells" },
  hiddenCategories: [],
  topGenes: [],
  markers: undefined,
  markersNote: undefined,
  allMarkers: undefined,
  dotplot: undefined,
  violin: undefined,
  categoryMeans: [],
  table: [],
  hovered: undefined,
  hoverText: "",
  history: meter.history,
  busy: 0,
  draws: [],
};
const pageStart = performance.now();

let session: Session | undefined;
let scatter: Scatter | undefined;
let coords: { x: Float32Array; y: Float32Array } | undefined;
let colourValues: ObsValues | undefined;
/** The reference of the markers: "rest", or a category (by index) of the selection's column. */
let reference: "rest" | number = "rest";
/** The latest selection's moments (by companion column), while it is the selection. */
let selectionMoments: Moments | undefined;
/** The plot's values on the current scale (per cell), reused between colourings. */
let scaled: Float32Array | undefined;

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
  select: (cells: number[]) => (scatter ? scatter.select(cells) : selectCells(cells)),
  /** Selects the cells of categories of the colouring column, as clicks on its legend do. */
  selectCategories: (categories: number[]) => selectCategories(categories),
  toggleCategory: (k: number) => toggleCategory(k),
  setReference: (ref: "rest" | number) => setReference(ref),
  allMarkers: () => allMarkers(),
  dotPlot: (genes: string[]) => drawDotPlot(genes),
  /** The selection's barcodes and obs as CSV (also offered to the browser as a download). */
  downloadSelection: (save = true) => downloadSelection(save),
  screenPosition: (cell: number) => scatter?.screenPosition(cell),
  /** The plot shows its latest colouring at its final size: positions hold, clicks land. */
  plotSettled: () => scatter?.settled() ?? false,
  /**
   * What the plot draws: cells drawn now (all, or the subset while the view moves), swaps to the
   * subset; with `full`, the plot's own per-cell colour values and selection.
   */
  plotState: (full = false) => scatter?.inspect(full),
  cancel: () => meter.cancel(),
};
(window as unknown as { __viewer: typeof api }).__viewer = api;

// ---- status line ----------------------------------------------------------------------------

const statusText = $<HTMLSpanElement>("status-text");
const cancelButton = $<HTMLButtonElement>("cancel");
cancelButton.addEventListener("click", () => meter.cancel());
meter.onLive = (live) => {
  state.busy = live ? 1 : 0;
  cancelButton.hidden = !live;
  if (live) {
    statusText.textContent = `${live.action}… ${live.requests} request${live.requests === 1 ? "" : "s"} (${live.inFlight} in flight), ${formatBytes(live.bytes)}`;
  } else {
    const last = meter.history.at(-1);
    if (last) statusText.textContent = describeCost(last);
  }
};

/** A message over the page (it never moves the plot: it is drawn over it). */
function showMessage(text: string | undefined): void {
  const box = $<HTMLDivElement>("message");
  box.hidden = text === undefined;
  box.textContent = text ?? "";
  state.error = text;
}

/** Runs an action; a failure becomes the page's message, never a blank screen. */
async function act<T>(
  name: string,
  where: string,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T | undefined> {
  try {
    return await meter.run(name, fn);
  } catch (err) {
    console.warn(err);
    showMessage(explain(err, where));
    return undefined;
  } finally {
    const last = meter.history.at(-1);
    if (last) statusText.textContent = describeCost(last);
  }
}

// ---- the URL ------------------------------------------------------------------------------------

function locationsFromPage(): Locations | undefined {
  const q = new URLSearchParams(location.search);
  const data = q.get("data");
  if (!data) return undefined;
  const sporadik = q.get("sporadik");
  return {
    data: absolute(data, location.href),
    ...(sporadik ? { sporadik: absolute(sporadik, location.href) } : {}),
    ...(q.get("endpoint") ? { endpoint: q.get("endpoint")! } : {}),
    ...(q.get("region") ? { region: q.get("region")! } : {}),
  };
}

/** The view as the URL keeps it (what a shared link opens). */
function viewState(): ViewState {
  const from = state.selectionFrom;
  return {
    gene: state.geneSet ? state.geneSet.names.join(",") : state.gene?.name,
    gene2: state.pair?.b,
    colour: colourValues?.name,
    scale: state.scale,
    range: state.range.mode === "fixed" ? [state.range.lo, state.range.hi] : undefined,
    embedding: state.embedding,
    selection:
      from.kind === "categories"
        ? { categories: from.categories }
        : state.selection.length
          ? { cells: encodeCells(state.selection) }
          : undefined,
    reference: reference === "rest" ? undefined : reference,
    hidden: state.hiddenCategories.length ? state.hiddenCategories : undefined,
    dotplot: state.dotplot?.genes,
  };
}

let restoring = false;
function updateUrl(): void {
  if (restoring || !session) return;
  const url = new URL(location.href);
  writeViewState(url.searchParams, viewState());
  history.replaceState(null, "", url);
}

// ---- opening ----------------------------------------------------------------------------------

async function openData(locs: Locations): Promise<void> {
  showMessage(undefined);
  scatter?.destroy();
  scatter = undefined;
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
  session = s;
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
  const s = session!;
  const emb = s.embeddings().find((e) => e.name === name);
  if (!emb) return;
  const cols = await act("embedding", s.url, (signal) => s.readObs([emb.x, emb.y], signal));
  if (!cols) return;
  const x = cols.get(emb.x) as Extract<ObsValues, { kind: "numeric" }>;
  const y = cols.get(emb.y) as Extract<ObsValues, { kind: "numeric" }>;
  // Spatial coordinates are image pixels, y downwards: flipped, the section shows as in its image.
  if (/spatial/i.test(name)) for (let i = 0; i < y.values.length; i++) y.values[i] = -y.values[i]!;
  coords = normalise(x.values, y.values);
  scatter?.destroy();
  // `?lod=N`: draw N cells while the view moves (tests use a small N on small data).
  const lod = Number(new URLSearchParams(location.search).get("lod") ?? Number.NaN);
  scatter = createScatter(
    $<HTMLCanvasElement>("scatter"),
    coords,
    {
      hover: (cell, px, py) => onHover(cell, px, py),
      select: (cells) => void selectCells(cells),
      drawn: () => {
        state.draws.push(performance.now());
        if (state.draws.length > 500) state.draws.shift();
      },
    },
    lod > 0 ? { lodPoints: lod } : {},
  );
  state.embedding = emb.name;
  $<HTMLSelectElement>("embedding").value = emb.name;
  await paint();
  if (state.hiddenCategories.length) applyHidden();
  if (state.selection.length && state.selectionFrom.kind === "cells") scatter.select(state.selection);
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
  const s = session!;
  restoring = true;
  try {
    if (view.scale && SCALES.some((x) => x.value === view.scale)) await setScale(view.scale as Scale);
    if (view.range) await setRange(view.range);
    if (view.colour) await colourBy(view.colour);
    if (view.hidden?.length && colourValues?.kind === "category") {
      for (const k of view.hidden) if (k >= 0 && k < colourValues.categories.length) toggleCategory(k);
    }
    if (view.gene) await searchGene(view.gene);
    if (view.gene2) await compareWith(view.gene2);
    if (view.reference !== undefined) reference = view.reference;
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
    restoring = false;
  }
  updateUrl();
}

// ---- gene search ------------------------------------------------------------------------------

const geneInput = $<HTMLInputElement>("gene");
const geneList = $<HTMLUListElement>("gene-list");
let matches: number[] = [];
let active = 0;

function renderMatches(): void {
  geneList.replaceChildren(
    ...matches.map((j, i) => {
      const li = document.createElement("li");
      li.textContent = session!.names[j]!;
      if (i === active) li.setAttribute("aria-selected", "true");
      li.addEventListener("mousedown", (ev) => {
        ev.preventDefault();
        void searchGene(withLastReplaced(geneInput.value, session!.names[j]!));
      });
      return li;
    }),
  );
  geneList.hidden = matches.length === 0;
}

/** Gene names typed as a list: commas, semicolons or white space between them. */
function splitGenes(text: string): string[] {
  return text
    .split(/[\s,;]+/)
    .map((g) => g.trim())
    .filter(Boolean);
}

/** `text` (a list being typed) with its last name replaced by `name`. */
function withLastReplaced(text: string, name: string): string {
  const parts = text.split(",");
  parts[parts.length - 1] = parts.length > 1 ? ` ${name}` : name;
  return parts.join(",");
}

geneInput.addEventListener("input", () => {
  if (!session) return;
  // Suggestions for the name being typed (the last of a list).
  const q = (geneInput.value.split(",").at(-1) ?? "").trim().toLowerCase();
  active = 0;
  if (!q) {
    matches = [];
  } else {
    const starts: number[] = [];
    const contains: number[] = [];
    session.names.forEach((n, j) => {
      const l = n.toLowerCase();
      if (l.startsWith(q)) starts.push(j);
      else if (l.includes(q)) contains.push(j);
    });
    matches = [...starts, ...contains].slice(0, 20);
  }
  renderMatches();
});
geneInput.addEventListener("keydown", (ev) => {
  if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
    active = Math.max(0, Math.min(matches.length - 1, active + (ev.key === "ArrowDown" ? 1 : -1)));
    renderMatches();
    ev.preventDefault();
  } else if (ev.key === "Enter") {
    const j = matches[active];
    void searchGene(
      j !== undefined ? withLastReplaced(geneInput.value, session!.names[j]!) : geneInput.value.trim(),
    );
    ev.preventDefault();
  } else if (ev.key === "Escape") {
    matches = [];
    renderMatches();
  }
});
const gene2Input = $<HTMLInputElement>("gene2");
gene2Input.addEventListener("keydown", (ev) => {
  if (ev.key === "Enter") void compareWith(gene2Input.value.trim());
});

/** Forgets the gene shown: its summary, histogram, violins and pair go with it. */
function clearGene(): void {
  state.gene = undefined;
  state.geneSet = undefined;
  state.histogram = undefined;
  state.violin = undefined;
  state.pair = undefined;
  $("gene-summary").textContent = "";
  const canvas = $<HTMLCanvasElement>("histogram");
  canvas.getContext("2d")?.clearRect(0, 0, canvas.width, canvas.height);
  canvas.hidden = true;
  $("violin").replaceChildren();
  $("pair").replaceChildren();
}

async function searchGene(text: string): Promise<void> {
  const s = session;
  if (!s) return;
  matches = [];
  renderMatches();
  const names = splitGenes(text);
  const unknown = names.filter((n) => !s.names.includes(n));
  if (names.length === 0 || unknown.length) {
    // The previous gene goes too: its histogram under the input would describe another gene.
    clearGene();
    await paint();
    showMessage(
      unknown.length === 1
        ? `No gene named ${JSON.stringify(unknown[0])} in this dataset.`
        : `No genes named ${unknown.map((n) => JSON.stringify(n)).join(", ")} in this dataset.`,
    );
    updateUrl();
    return;
  }
  showMessage(undefined);
  geneInput.value = names.join(", ");
  const typed = performance.now();
  if (names.length > 1) {
    await searchGeneSet(s, names);
    state.geneMs = performance.now() - typed;
    updateUrl();
    return;
  }
  const name = names[0]!;
  const j = s.names.indexOf(name);
  const g = await act(`gene ${name}`, s.url, (signal) => s.gene(j, signal));
  if (!g) return;
  clearGene();
  state.gene = g;
  const frac = g.nonzero / s.nCells;
  $("gene-summary").textContent =
    `${name}: expressed in ${g.nonzero.toLocaleString("en-US")} of ${s.nCells.toLocaleString("en-US")} cells (${(100 * frac).toFixed(1)}%), max ${fmt(g.max)}`;
  const h = histogram(g.stored, g.max);
  state.histogram = { counts: h.counts, labels: h.labels };
  const canvas = $<HTMLCanvasElement>("histogram");
  canvas.hidden = false;
  drawHistogram(canvas, h, `${name}, nonzero counts`);
  if ($<HTMLSelectElement>("color-by").value === "") await paint();
  else {
    renderTable();
    await updateCategoryMeans();
  }
  await drawViolins();
  const second = gene2Input.value.trim();
  if (second) await compareWith(second);
  state.geneMs = performance.now() - typed;
  updateUrl();
}

/** Several genes: each read (in parallel: two waves in all), their mean on the scale colours the cells. */
async function searchGeneSet(s: Session, names: string[]): Promise<void> {
  const read = await act(`gene set of ${names.length}`, s.url, async (signal) => {
    const genes = await Promise.all(names.map((n) => s.gene(s.names.indexOf(n), signal)));
    const totals = await totalsFor(state.scale, signal);
    const mean = new Float32Array(s.nCells);
    const one = new Float32Array(s.nCells);
    for (const g of genes) {
      toScale(state.scale, g.values, totals, one);
      for (let i = 0; i < mean.length; i++) mean[i]! += one[i]! / genes.length;
    }
    let max = 0;
    for (const v of mean) if (v > max) max = v;
    return { names, values: mean, max };
  });
  if (!read) return;
  clearGene();
  state.geneSet = read;
  $("gene-summary").textContent =
    `gene set of ${names.length} (${names.join(", ")}): each cell's mean ${scaleLabel(state.scale)}, max ${fmt(read.max)}`;
  if ($<HTMLSelectElement>("color-by").value === "") await paint();
}

/** The second gene beside the searched one: two small embeddings, each coloured by one of them. */
async function compareWith(name: string): Promise<void> {
  const s = session;
  const first = state.gene;
  gene2Input.value = name;
  if (!s) return;
  if (!name) {
    state.pair = undefined;
    $("pair").replaceChildren();
    updateUrl();
    return;
  }
  const j = s.names.indexOf(name);
  if (j < 0) {
    showMessage(`No gene named ${JSON.stringify(name)} in this dataset.`);
    return;
  }
  if (!first) return;
  const read = await act(`gene ${name}`, s.url, async (signal) => {
    const g = await s.gene(j, signal);
    return { g, totals: await totalsFor(state.scale, signal) };
  });
  if (!read) return;
  const on = (g: GeneValues) => {
    const values = new Float32Array(s.nCells);
    const max = toScale(state.scale, g.values, read.totals, values);
    return { name: g.name, values, max };
  };
  state.pair = renderPair($("pair"), coords, on(first), on(read.g));
  updateUrl();
}

// ---- colouring ---------------------------------------------------------------------------------

/** Every cell's total count, when `scale` needs it (one read of the statistics, kept). */
async function totalsFor(scale: Scale, signal: AbortSignal) {
  if (!SCALES.find((x) => x.value === scale)!.needsTotals) return undefined;
  const totals = session?.cellTotals(signal);
  if (!totals)
    throw new Error(`${scaleLabel(scale)} needs the dataset's statistics: ${session?.statsProblem}`);
  return totals;
}

async function setScale(scale: Scale): Promise<void> {
  state.scale = scale;
  $<HTMLSelectElement>("scale").value = scale;
  if (state.geneSet) await searchGeneSet(session!, state.geneSet.names);
  else await paint();
  await drawViolins();
  if (state.pair) await compareWith(state.pair.b);
  updateUrl();
}

async function setRange(range: [number, number] | undefined): Promise<void> {
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

async function colourBy(name: string): Promise<void> {
  const s = session;
  if (!s) return;
  $<HTMLSelectElement>("color-by").value = name;
  if (state.selectionFrom.kind === "categories" && state.selectionFrom.column !== name) await selectCells([]);
  state.hiddenCategories = [];
  scatter?.setHidden(undefined);
  state.allMarkers = undefined;
  $("all-markers").replaceChildren();
  if (name === "") {
    colourValues = undefined;
    state.colourBy = undefined;
    await paint();
    updateUrl();
    return;
  }
  const cols = await act(`obs ${name}`, s.url, (signal) => s.readObs([name], signal));
  if (!cols) return;
  colourValues = cols.get(name)!;
  await paint();
  await updateCategoryMeans();
  await drawViolins();
  fillReferences();
  if (state.dotplot) await drawDotPlot(state.dotplot.genes);
  updateUrl();
}

/** The gene (or gene set) on the current scale and range: per cell values and the range drawn. */
async function geneColouring(): Promise<
  { values: Float32Array; lo: number; hi: number; title: string } | undefined
> {
  const s = session!;
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
  scaled = scaled?.length === s.nCells ? scaled : new Float32Array(s.nCells);
  const max = toScale(state.scale, g.values, totals, scaled);
  return {
    values: scaled,
    lo: fixed ? state.range.lo : 0,
    hi: fixed ? state.range.hi : max,
    title: `${g.name} (${scaleLabel(state.scale)})`,
  };
}

async function paint(): Promise<void> {
  const legend = $("legend");
  const c = colourValues;
  if (c?.kind === "category") {
    const counts = new Array<number>(c.categories.length + 1).fill(0);
    for (let i = 0; i < c.codes.length; i++) counts[c.codes[i]!]!++;
    state.colourBy = { name: c.name, kind: "category", counts };
    drawLegend();
    await scatter?.setColouring({ kind: "category", codes: c.codes, nCategories: c.categories.length });
    renderTable();
  } else if (c?.kind === "numeric") {
    let [lo, hi] = [Infinity, -Infinity];
    for (const v of c.values) if (Number.isFinite(v)) [lo, hi] = [Math.min(lo, v), Math.max(hi, v)];
    if (scatter) colourBar(legend, c.name, lo, hi);
    state.colourBy = { name: c.name, kind: "numeric" };
    await scatter?.setColouring({ kind: "continuous", values: c.values, min: lo, max: hi });
  } else {
    const g = await geneColouring();
    if (g) {
      state.range = { mode: state.range.mode, lo: g.lo, hi: g.hi };
      // Without a plot there is nothing for a colour bar to explain.
      if (scatter) colourBar(legend, g.title, g.lo, g.hi);
      await scatter?.setColouring({ kind: "continuous", values: g.values, min: g.lo, max: g.hi });
    } else {
      legend.replaceChildren();
      await scatter?.setColouring({ kind: "none" });
    }
  }
}

/** The legend of the colouring category: click selects a category, shift adds one, the eye hides it. */
function drawLegend(): void {
  const c = colourValues;
  if (c?.kind !== "category" || !scatter) {
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

function toggleCategory(k: number): void {
  const hidden = new Set(state.hiddenCategories);
  if (hidden.has(k)) hidden.delete(k);
  else hidden.add(k);
  state.hiddenCategories = [...hidden].sort((a, b) => a - b);
  applyHidden();
  drawLegend();
  updateUrl();
}

function applyHidden(): void {
  const c = colourValues;
  if (!scatter || c?.kind !== "category") return;
  if (state.hiddenCategories.length === 0) {
    scatter.setHidden(undefined);
    return;
  }
  const hide = new Uint8Array(c.categories.length + 1);
  for (const k of state.hiddenCategories) hide[k] = 1;
  const mask = new Uint8Array(c.codes.length);
  for (let i = 0; i < c.codes.length; i++) mask[i] = hide[c.codes[i]!]!;
  scatter.setHidden(mask);
}

/** Without an embedding, the obs category as a table of cells, fraction expressing and mean. */
function renderTable(): void {
  const c = colourValues;
  const target = $("table");
  if (scatter || c?.kind !== "category") {
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

// ---- hover ----------------------------------------------------------------------------------

/** The tooltip beside the pointer: the cell, its barcode (read with its tile's obs) and its value. */
function onHover(cell: number | undefined, px: number, py: number): void {
  state.hovered = cell;
  const box = $("hover");
  if (cell === undefined || !session) {
    box.hidden = true;
    state.hoverText = "";
    return;
  }
  const parts = [`cell ${cell}`];
  const g = state.gene;
  if (state.geneSet) parts.push(`gene set ${fmt(state.geneSet.values[cell]!)}`);
  else if (g) parts.push(`${g.name} ${fmt(g.values[cell]!)}`);
  const c = colourValues;
  if (c?.kind === "category")
    parts.push(c.codes[cell]! === c.categories.length ? "(missing)" : c.categories[c.codes[cell]!]!);
  else if (c?.kind === "numeric") parts.push(`${c.name} ${fmt(c.values[cell]!)}`);
  const show = (text: string) => {
    box.textContent = text;
    state.hoverText = text;
  };
  show(parts.join(" · "));
  box.hidden = false;
  // Beside the pointer, kept inside the plot.
  const wrap = $("scatter-wrap").getBoundingClientRect();
  const w = box.offsetWidth;
  const h = box.offsetHeight;
  const x = px + 14 + w > wrap.width ? px - 14 - w : px + 14;
  const y = py + 14 + h > wrap.height ? py - 14 - h : py + 14;
  box.style.transform = `translate(${Math.max(0, x)}px, ${Math.max(0, y)}px)`;
  void session.barcode(cell).then(
    (code) => {
      if (code !== undefined && state.hovered === cell) show([parts[0], code, ...parts.slice(1)].join(" · "));
    },
    () => undefined,
  );
}

// ---- selection ----------------------------------------------------------------------------------

async function selectCategories(categories: number[]): Promise<void> {
  const c = colourValues;
  if (c?.kind !== "category") return;
  const ks = [...new Set(categories)].filter((k) => k >= 0 && k < c.categories.length).sort((a, b) => a - b);
  if (ks.length === 0) return selectCells([]);
  const want = new Uint8Array(c.categories.length + 1);
  for (const k of ks) want[k] = 1;
  const cells: number[] = [];
  for (let i = 0; i < c.codes.length; i++) if (want[c.codes[i]!]) cells.push(i);
  state.selectionFrom = { kind: "categories", column: c.name, categories: ks };
  if (reference !== "rest" && ks.includes(reference)) reference = "rest";
  // The plot shows the selection; its select event comes back here as cells (then ignored).
  pendingPlotSelection = cells.length;
  scatter?.select(cells);
  await selectCells(cells, true);
}

/** The plot's own select event that follows a legend selection (its cells are the same). */
let pendingPlotSelection: number | undefined;

async function selectCells(cells: number[], fromCategories = false): Promise<void> {
  const s = session;
  if (!s) return;
  if (!fromCategories) {
    if (pendingPlotSelection !== undefined && cells.length === pendingPlotSelection) {
      pendingPlotSelection = undefined;
      return;
    }
    pendingPlotSelection = undefined;
    state.selectionFrom = { kind: "cells" };
    if (reference !== "rest") reference = "rest";
  }
  state.selection = cells;
  selectionMoments = undefined;
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
  clear.addEventListener("click", () => (scatter ? scatter.select([]) : void selectCells([])));
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
    selectionMoments = summary.moments;
    bars(
      target,
      `Top genes, mean count over ${cells.length.toLocaleString("en-US")} selected cell${cells.length === 1 ? "" : "s"}`,
      summary.top.map((t) => ({ label: t.name, value: t.mean })),
    );
  }
  await updateMarkers();
  await updateCategoryMeans();
  updateUrl();
}

/** The categories of the selection's column as references, when the selection is a category. */
function fillReferences(): void {
  const select = $<HTMLSelectElement>("reference");
  const c = colourValues;
  const from = state.selectionFrom;
  const options = [new Option("the rest", "rest")];
  if (from.kind === "categories" && c?.kind === "category" && c.name === from.column) {
    c.categories.forEach((label, k) => {
      if (!from.categories.includes(k)) options.push(new Option(label, String(k)));
    });
  }
  select.replaceChildren(...options);
  select.value = String(reference);
  $<HTMLButtonElement>("all-markers-button").hidden = !(c?.kind === "category" && session?.stats);
}

async function setReference(ref: "rest" | number): Promise<void> {
  reference = ref;
  $<HTMLSelectElement>("reference").value = String(ref);
  await updateMarkers();
  updateUrl();
}

/** The moments of the selection: its categories' statistics, or its rows' (read when selected). */
async function groupMoments(signal: AbortSignal): Promise<Moments | undefined> {
  const from = state.selectionFrom;
  if (from.kind === "cells") return selectionMoments;
  const col = await session!.columnStats(from.column, signal);
  if (!col) return undefined;
  return sumMoments(from.categories.map((k) => col.moments(k)));
}

function sumMoments(parts: Moments[]): Moments {
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
async function updateMarkers(): Promise<void> {
  const s = session!;
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
    if (reference !== "rest" && from.kind === "categories") {
      const col = (await s.columnStats(from.column, signal))!;
      ref = col.moments(reference);
      refLabel = col.categories[reference]!;
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
    from.kind === "categories" && colourValues?.kind === "category"
      ? from.categories
          .map((k) => (colourValues as Extract<ObsValues, { kind: "category" }>).categories[k])
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
async function allMarkers(): Promise<void> {
  const s = session;
  const c = colourValues;
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
async function drawDotPlot(genes: string[]): Promise<void> {
  const s = session;
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
  const column = colourValues?.kind === "category" ? colourValues.name : s.stats.columns[0];
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
async function drawViolins(): Promise<void> {
  const s = session;
  const g = state.gene;
  const c = colourValues;
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
async function updateCategoryMeans(): Promise<void> {
  const target = $("category-means");
  const c = colourValues;
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

/** The selection as CSV: each cell's index and obs (barcodes first), read from its tiles only. */
async function downloadSelection(save: boolean): Promise<string | undefined> {
  const s = session;
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
