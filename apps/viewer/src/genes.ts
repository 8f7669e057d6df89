/** The gene field (suggestions, gene sets) and the second gene drawn beside the first. */
import { drawViolins, updateCategoryMeans } from "./analyses.js";
import { drawHistogram, fmt, histogram } from "./charts.js";
import { paint, renderTable, totalsFor } from "./colouring.js";
import { $, act, ctx, showMessage, state } from "./page.js";
import { updateUrl } from "./page-url.js";
import { renderPair } from "./panels/compare.js";
import { scaleLabel, toScale } from "./scales.js";
import type { GeneValues, Session } from "./session.js";

// ---- gene search ------------------------------------------------------------------------------

export const geneInput = $<HTMLInputElement>("gene");
export const geneList = $<HTMLUListElement>("gene-list");
let matches: number[] = [];
let active = 0;

export function renderMatches(): void {
  geneList.replaceChildren(
    ...matches.map((j, i) => {
      const li = document.createElement("li");
      li.textContent = ctx.session!.names[j]!;
      if (i === active) li.setAttribute("aria-selected", "true");
      li.addEventListener("mousedown", (ev) => {
        ev.preventDefault();
        void searchGene(withLastReplaced(geneInput.value, ctx.session!.names[j]!));
      });
      return li;
    }),
  );
  geneList.hidden = matches.length === 0;
}

/** Gene names typed as a list: commas, semicolons or white space between them. */
export function splitGenes(text: string): string[] {
  return text
    .split(/[\s,;]+/)
    .map((g) => g.trim())
    .filter(Boolean);
}

/** `text` (a list being typed) with its last name replaced by `name`. */
export function withLastReplaced(text: string, name: string): string {
  const parts = text.split(",");
  parts[parts.length - 1] = parts.length > 1 ? ` ${name}` : name;
  return parts.join(",");
}

geneInput.addEventListener("input", () => {
  if (!ctx.session) return;
  // Suggestions for the name being typed (the last of a list).
  const q = (geneInput.value.split(",").at(-1) ?? "").trim().toLowerCase();
  active = 0;
  if (!q) {
    matches = [];
  } else {
    const starts: number[] = [];
    const contains: number[] = [];
    ctx.session.names.forEach((n, j) => {
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
      j !== undefined ? withLastReplaced(geneInput.value, ctx.session!.names[j]!) : geneInput.value.trim(),
    );
    ev.preventDefault();
  } else if (ev.key === "Escape") {
    matches = [];
    renderMatches();
  }
});
export const gene2Input = $<HTMLInputElement>("gene2");
gene2Input.addEventListener("keydown", (ev) => {
  if (ev.key === "Enter") void compareWith(gene2Input.value.trim());
});

/** Forgets the gene shown: its summary, histogram, violins and pair go with it. */
export function clearGene(): void {
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

export async function searchGene(text: string): Promise<void> {
  const s = ctx.session;
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
export async function searchGeneSet(s: Session, names: string[]): Promise<void> {
  const read = await act(`gene set of ${names.length}`, s.url, async (signal) => {
    const totals = await totalsFor(state.scale, signal);
    const mean = new Float32Array(s.nCells);
    const one = new Float32Array(s.nCells);
    // Each gene is folded into the mean as it arrives and dropped: the page holds two arrays of
    // cells whatever the set's size, not one per gene (20 genes at 5,000,000 cells: 400 MB).
    await Promise.all(
      names.map(async (n) => {
        const g = await s.gene(s.names.indexOf(n), signal);
        toScale(state.scale, g.values, totals, one);
        for (let i = 0; i < mean.length; i++) mean[i]! += one[i]! / names.length;
      }),
    );
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
export async function compareWith(name: string): Promise<void> {
  const s = ctx.session;
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
  state.pair = renderPair($("pair"), ctx.coords, on(first), on(read.g));
  updateUrl();
}
