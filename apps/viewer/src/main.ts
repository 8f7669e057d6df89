/**
 * The viewer page: open a dataset by URL, search a gene, colour the embedding by it or by an obs
 * column, select cells. Every action runs through the meter, whose costs the status line shows.
 *
 * `window.__viewer` exposes the page's state (what is drawn, as numbers) so end-to-end tests can
 * compare it with the readers' own answers instead of reading pixels.
 */
import { bars, categoryLegend, colourBar, drawHistogram, fmt, histogram } from "./charts.js";
import { categoryColours } from "./colors.js";
import { explain } from "./explain.js";
import { type ActionCost, describeCost, formatBytes, Meter } from "./meter.js";
import { normalise } from "./normalise.js";
import type { ObsValues } from "./obs.js";
import { createScatter, type Scatter } from "./scatter.js";
import { absolute, type GeneValues, type Locations, Session } from "./session.js";

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

/** The state the tests read. Arrays are copied into plain ones on request (see `snapshot`). */
interface ViewerState {
  ready: boolean;
  error: string | undefined;
  dataset:
    | { url: string; nCells: number; nGenes: number; companion: string | undefined; obs: string[] }
    | undefined;
  embedding: string | undefined;
  firstDrawMs: number | undefined;
  gene: GeneValues | undefined;
  geneMs: number | undefined;
  colourBy: { name: string; kind: string; counts?: number[] } | undefined;
  selection: number[];
  topGenes: { name: string; mean: number }[];
  categoryMeans: { label: string; value: number }[];
  /** The fallback table without an embedding: per category, cells, cells expressing the gene, mean. */
  table: { label: string; cells: number; expressing: number; mean: number }[];
  hovered: number | undefined;
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
  firstDrawMs: undefined,
  gene: undefined,
  geneMs: undefined,
  colourBy: undefined,
  selection: [],
  topGenes: [],
  categoryMeans: [],
  table: [],
  hovered: undefined,
  history: meter.history,
  busy: 0,
  draws: [],
};
const pageStart = performance.now();

let session: Session | undefined;
let scatter: Scatter | undefined;
let colourValues: ObsValues | undefined;

const api = {
  state,
  /** A JSON-able copy of the state (typed arrays as plain arrays). */
  snapshot() {
    const g = state.gene;
    return {
      ...state,
      gene: g ? { ...g, values: Array.from(g.values), stored: Array.from(g.stored) } : undefined,
      history: [...meter.history],
    };
  },
  searchGene: (name: string) => searchGene(name),
  colourBy: (name: string) => colourBy(name),
  /** Selects cells as a click or lasso on the plot would (the plot's own selection too). */
  select: (cells: number[]) => (scatter ? scatter.select(cells) : selectCells(cells)),
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

// ---- opening ----------------------------------------------------------------------------------

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

async function openData(locs: Locations): Promise<void> {
  showMessage(undefined);
  scatter?.destroy();
  scatter = undefined;
  const s = await act("open", locs.data, async (signal) => Session.open(locs, meter, signal));
  if (!s) return;
  session = s;
  state.dataset = {
    url: s.url,
    nCells: s.nCells,
    nGenes: s.ds.nGenes,
    companion: s.companionUrl,
    obs: s.obs?.columns.map((c) => c.name) ?? [],
  };
  $("dataset-info").textContent =
    `${s.nCells.toLocaleString("en-US")} cells × ${s.ds.nGenes.toLocaleString("en-US")} genes` +
    (s.companion
      ? ""
      : " — no sporadik companion: a gene reads every tile once (convert with --sporadik for two reads per gene)");
  $("main").hidden = false;
  fillColourChoices(s);
  const emb = s.embeddings()[0];
  $("no-embedding").hidden = emb !== undefined;
  $("scatter-wrap").hidden = emb === undefined;
  if (emb) {
    const cols = await act("embedding", locs.data, (signal) => s.readObs([emb.x, emb.y], signal));
    if (cols) {
      const x = cols.get(emb.x) as Extract<ObsValues, { kind: "numeric" }>;
      const y = cols.get(emb.y) as Extract<ObsValues, { kind: "numeric" }>;
      // `?lod=N`: draw N cells while the view moves (tests use a small N on small data).
      const lod = Number(new URLSearchParams(location.search).get("lod") ?? Number.NaN);
      scatter = createScatter(
        $<HTMLCanvasElement>("scatter"),
        normalise(x.values, y.values),
        {
          hover: (cell) => onHover(cell),
          select: (cells) => void selectCells(cells),
          drawn: () => {
            state.draws.push(performance.now());
            if (state.draws.length > 500) state.draws.shift();
          },
        },
        lod > 0 ? { lodPoints: lod } : {},
      );
      await scatter.setColouring({ kind: "none" });
      state.embedding = emb.name;
      state.firstDrawMs = performance.now() - pageStart;
    }
  }
  state.ready = true;
}

function fillColourChoices(s: Session): void {
  const select = $<HTMLSelectElement>("color-by");
  const options = [new Option("the searched gene", "")];
  for (const c of s.colourColumns()) options.push(new Option(`${c.name} (${c.kind})`, c.name));
  select.replaceChildren(...options);
  select.onchange = () => void colourBy(select.value);
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
        void searchGene(session!.names[j]!);
      });
      return li;
    }),
  );
  geneList.hidden = matches.length === 0;
}

geneInput.addEventListener("input", () => {
  if (!session) return;
  const q = geneInput.value.trim().toLowerCase();
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
    void searchGene(j !== undefined ? session!.names[j]! : geneInput.value.trim());
    ev.preventDefault();
  } else if (ev.key === "Escape") {
    matches = [];
    renderMatches();
  }
});

async function searchGene(name: string): Promise<void> {
  const s = session;
  if (!s) return;
  const j = s.names.indexOf(name);
  matches = [];
  renderMatches();
  if (j < 0) {
    showMessage(`No gene named ${JSON.stringify(name)} in this dataset.`);
    return;
  }
  showMessage(undefined);
  geneInput.value = name;
  const typed = performance.now();
  const g = await act(`gene ${name}`, s.url, (signal) => s.gene(j, signal));
  if (!g) return;
  state.gene = g;
  const frac = g.nonzero / s.nCells;
  $("gene-summary").textContent =
    `${name}: expressed in ${g.nonzero.toLocaleString("en-US")} of ${s.nCells.toLocaleString("en-US")} cells (${(100 * frac).toFixed(1)}%), max ${fmt(g.max)}`;
  drawHistogram($<HTMLCanvasElement>("histogram"), histogram(g.stored, g.max), `${name}, nonzero counts`);
  const select = $<HTMLSelectElement>("color-by");
  if (select.value === "") await paint();
  else {
    renderTable();
    await updateCategoryMeans();
  }
  state.geneMs = performance.now() - typed;
}

// ---- colouring ---------------------------------------------------------------------------------

async function colourBy(name: string): Promise<void> {
  const s = session;
  if (!s) return;
  $<HTMLSelectElement>("color-by").value = name;
  if (name === "") {
    colourValues = undefined;
    state.colourBy = undefined;
    await paint();
    return;
  }
  const cols = await act(`obs ${name}`, s.url, (signal) => s.readObs([name], signal));
  if (!cols) return;
  colourValues = cols.get(name)!;
  await paint();
  await updateCategoryMeans();
}

async function paint(): Promise<void> {
  const legend = $("legend");
  const c = colourValues;
  if (c?.kind === "category") {
    const counts = new Array<number>(c.categories.length + 1).fill(0);
    for (const code of c.codes) counts[code < 0 ? c.categories.length : code]!++;
    categoryLegend(legend, c.name, c.categories, counts);
    state.colourBy = { name: c.name, kind: "category", counts };
    await scatter?.setColouring({ kind: "category", codes: c.codes, nCategories: c.categories.length });
    renderTable();
  } else if (c?.kind === "numeric") {
    let [lo, hi] = [Infinity, -Infinity];
    for (const v of c.values) if (Number.isFinite(v)) [lo, hi] = [Math.min(lo, v), Math.max(hi, v)];
    colourBar(legend, c.name, lo, hi);
    state.colourBy = { name: c.name, kind: "numeric" };
    const shifted = c.values.map((v) => (Number.isFinite(v) ? v - lo : 0));
    await scatter?.setColouring({ kind: "continuous", values: shifted, max: hi - lo });
  } else if (state.gene) {
    colourBar(legend, `${state.gene.name} (counts)`, 0, state.gene.max);
    await scatter?.setColouring({ kind: "continuous", values: state.gene.values, max: state.gene.max });
  } else {
    legend.replaceChildren();
    await scatter?.setColouring({ kind: "none" });
  }
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
    return `<tr><td>${escapeHtml(name)}</td><td>${n}</td><td>${g ? `${((100 * expressing) / Math.max(1, n)).toFixed(1)}%` : "–"}</td><td>${g ? fmt(sum / Math.max(1, n)) : "–"}</td></tr>`;
  });
  target.innerHTML = `<table><thead><tr><th>${escapeHtml(c.name)}</th><th>cells</th><th>expressing</th><th>mean</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"]/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[ch]!);
}

// ---- selection ----------------------------------------------------------------------------------

function onHover(cell: number | undefined): void {
  state.hovered = cell;
  const box = $("hover");
  if (cell === undefined || !session) {
    box.hidden = true;
    return;
  }
  const parts = [`cell ${cell}`];
  if (state.gene) parts.push(`${state.gene.name} ${fmt(state.gene.values[cell]!)}`);
  const c = colourValues;
  if (c?.kind === "category") parts.push(c.codes[cell]! < 0 ? "(missing)" : c.categories[c.codes[cell]!]!);
  else if (c?.kind === "numeric") parts.push(`${c.name} ${fmt(c.values[cell]!)}`);
  box.textContent = parts.join(" · ");
  box.hidden = false;
}

async function selectCells(cells: number[]): Promise<void> {
  const s = session;
  if (!s) return;
  state.selection = cells;
  const target = $("selection");
  if (cells.length === 0) {
    state.topGenes = [];
    target.replaceChildren();
    await updateCategoryMeans();
    return;
  }
  const top = await act(
    `top genes of ${cells.length} cell${cells.length === 1 ? "" : "s"}`,
    s.url,
    (signal) => s.topGenes(cells, 10, signal),
  );
  if (!top) return;
  state.topGenes = top;
  bars(
    target,
    `Top genes, mean count over ${cells.length.toLocaleString("en-US")} selected cell${cells.length === 1 ? "" : "s"}`,
    top.map((t) => ({ label: t.name, value: t.mean })),
  );
  await updateCategoryMeans();
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
  const sums = new Float64Array(c.categories.length);
  const counts = new Float64Array(c.categories.length);
  const visit = (i: number) => {
    const k = c.codes[i]!;
    if (k < 0) return;
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

// ---- start ----------------------------------------------------------------------------------------

$<HTMLFormElement>("open-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const value = $<HTMLInputElement>("data-url").value.trim();
  if (!value) return;
  const url = new URL(location.href);
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
