/**
 * The viewer as an explorer, in headless Chromium over `deltacells serve`: marker genes of a
 * selection (a lasso's cells, legend categories) against the rest or a category, markers of every
 * category and dot plots from the statistics alone, violins, gene sets, two genes side by side,
 * colour scales, a choice of embeddings with spatial coordinates, the hover beside the pointer,
 * a plot that keeps its size, the fixed defects, the view in the URL, a selection as CSV. What
 * the page shows is compared with the same numbers computed here from the tiles (expected.ts);
 * viewer-scanpy.conformance.test.ts compares them with scanpy.
 */
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Page } from "playwright-core";
import { type RunningServer, startServer } from "../../../packages/cli/src/serve/http.js";
import type { RunningBrowser } from "../../../test-utils/browser/browser.js";
import { launchChromium } from "../../../test-utils/browser/index.js";
import type { MarkerRow } from "../src/panels/markers.js";
import type { PlotState } from "../src/scatter.js";
import { close, quantile, truthOf } from "./expected.js";
import { buildPbmc, buildSpatial, buildViewer, deltacells, PBMC, REPO } from "./fixtures.js";
import {
  idle,
  inkOf,
  openViewer as openPage,
  plotSettled,
  screenAt,
  snapshot,
  sourceCategory,
  sourceObs,
} from "./viewer-page.js";

let root: string;
let pbmc: string;
let server: RunningServer;
let chromium: RunningBrowser;

before(async () => {
  root = mkdtempSync(join(tmpdir(), "deltacells-explorer-"));
  const [, dir] = await Promise.all([
    buildViewer(join(root, "viewer-dist")),
    buildPbmc(root),
    launchChromium().then((c) => (chromium = c)),
    buildSpatial(root),
    deltacells(
      "convert",
      join(REPO, "data/10x-v3-chr21/filtered_feature_bc_matrix.h5"),
      join(root, "chr21"),
      "--sporadik",
      "--quiet",
      "--threads",
      "1",
    ),
    deltacells("convert", PBMC, join(root, "pbmc-plain"), "--quiet", "--threads", "1"),
  ]);
  pbmc = dir;
  // Statistics of another version of the dataset (its tiles were others).
  cpSync(pbmc, join(root, "stale"), { recursive: true });
  const index = join(root, "stale/stats/stats.json");
  const json = JSON.parse(readFileSync(index, "utf8"));
  json.dataset.tiles_crc32 = "00000000";
  writeFileSync(index, JSON.stringify(json));
  server = await startServer({ root, viewerDir: join(root, "viewer-dist"), port: 0 });
});

after(async () => {
  await chromium?.close();
  await server?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

const openViewer = (data: string, query = "") => openPage(chromium.browser, server.url, data, query);

interface Explorer {
  markers?: { group: string; reference: string; nGroup: number; nReference: number; rows: MarkerRow[] };
  markersNote?: string;
  allMarkers?: { column: string; groups: { label: string; rows: MarkerRow[] }[] };
  dotplot?: { column: string; genes: string[]; categories: string[]; mean: number[][]; fraction: number[][] };
  violin?: {
    groups: {
      label: string;
      n: number;
      mean: number;
      min: number;
      q1: number;
      median: number;
      q3: number;
      max: number;
    }[];
  };
  geneSet?: { names: string[]; values: number[]; max: number };
  pair?: { a: string; b: string; expressingA: number; expressingB: number; both: number };
  histogram?: { counts: number[]; labels: [string, string] };
  selectionFrom: { kind: string; column?: string; categories?: number[] };
  hiddenCategories: number[];
  range: { mode: string; lo: number; hi: number };
  scale: string;
  embeddings: string[];
  hoverText: string;
}
const explorer = async (page: Page) =>
  (await snapshot(page)) as unknown as Explorer & Awaited<ReturnType<typeof snapshot>>;

type V = { __viewer: Record<string, (...args: never[]) => unknown> };
/** Calls the page's `__viewer[name](...args)` and waits for it. */
const call = (page: Page, name: string, ...args: unknown[]) =>
  page.evaluate(
    ([n, a]) =>
      ((window as unknown as V).__viewer[n as string] as (...x: unknown[]) => unknown)(...(a as unknown[])),
    [name, args] as const,
  );

const plotState = (page: Page, full = false) =>
  page.evaluate(
    (f) => (window as unknown as { __viewer: { plotState(f: boolean): PlotState } }).__viewer.plotState(f),
    full,
  );

/** The page's rows against the expected table's first `n` genes: the same genes, the same numbers. */
function assertMarkers(
  rows: MarkerRow[],
  table: ReturnType<Awaited<ReturnType<typeof truthOf>>["markers"]>,
  nameOfColumn: string[],
  n = 20,
) {
  for (let i = 0; i < n; i++) {
    const j = table.order[i]!;
    const r = rows[i]!;
    assert.equal(r.gene, nameOfColumn[j], `rank ${i}`);
    for (const [got, want, what] of [
      [r.score, table.scores[j]!, "score"],
      [r.logFoldChange, table.logFoldChanges[j]!, "log fold change"],
      [r.pval, table.pvals[j]!, "p"],
      [r.pvalAdj, table.pvalsAdj[j]!, "adjusted p"],
      [r.pts, table.pts[j]!, "pts"],
      [r.ptsRest, table.ptsRest[j]!, "pts rest"],
    ] as const)
      assert.ok(close(got, want, 1e-9), `${r.gene} ${what}: ${got} vs ${want}`);
  }
}

test("the markers of a selection come from its rows (one batch) and the statistics: its top genes against the rest, as computed from the tiles", async () => {
  const { page, errors } = await openViewer("/pbmc68k/");
  const truth = await truthOf(pbmc);
  const cells = Array.from({ length: 60 }, (_, i) => (i * 37) % 700);
  await call(page, "select", cells);
  await page.waitForFunction(
    () => (window as unknown as { __viewer: { state: { markers?: unknown } } }).__viewer.state.markers,
  );
  await idle(page);
  const s = await explorer(page);
  assert.equal(s.markers!.nGroup, 60);
  assert.equal(s.markers!.nReference, 640);
  assertMarkers(s.markers!.rows, truth.markers([...new Set(cells)]), truth.nameOfColumn);
  // The rows as one batch (two waves); the rest costs nothing (the statistics came with the page).
  const read = s.history.find((h) => h.action === "top genes of 60 cells")!;
  assert.equal(read.waves, 2);
  const markers = s.history.filter((h) => h.action === "markers").at(-1)!;
  assert.equal(markers.requests, 0);
  assert.equal(await page.locator("#markers tbody tr").count(), 20);
  assert.equal(
    await page.locator("#markers tbody tr").first().getAttribute("data-gene"),
    s.markers!.rows[0]!.gene,
  );
  // A gene of the table colours the plot.
  await page.locator("#markers tbody tr").first().locator("button").click();
  await page.waitForFunction(
    (g) =>
      (window as unknown as { __viewer: { state: { gene?: { name: string } } } }).__viewer.state.gene
        ?.name === g,
    s.markers!.rows[0]!.gene,
  );
  assert.deepEqual(errors, []);
  await page.close();
});

test("a click on a legend entry selects its category (shift adds one), whose markers come from the statistics; against another category too; the eye hides it", async () => {
  const { page, errors } = await openViewer("/pbmc68k/");
  const truth = await truthOf(pbmc);
  const obs = await sourceCategory(PBMC, "bulk_labels");
  const { cellsOf } = obs;
  await page.selectOption("#color-by", "bulk_labels");
  await page.waitForFunction(
    () =>
      (window as unknown as { __viewer: { state: { colourBy?: { name: string } } } }).__viewer.state.colourBy
        ?.name === "bulk_labels",
  );
  await idle(page);
  const b = obs.categories.indexOf("CD19+ B");
  const mono = obs.categories.indexOf("CD14+ Monocyte");
  const entry = (k: number) => page.locator(`#legend li[data-category="${obs.categories[k]}"] .legend-pick`);
  await entry(b).click();
  await page.waitForFunction(
    (n) =>
      (window as unknown as { __viewer: { state: { markers?: { nGroup: number } } } }).__viewer.state.markers
        ?.nGroup === n,
    cellsOf(b).length,
  );
  await idle(page);
  let s = await explorer(page);
  assert.deepEqual(s.selectionFrom, { kind: "categories", column: "bulk_labels", categories: [b] });
  assert.deepEqual(s.selection, cellsOf(b));
  assertMarkers(s.markers!.rows, truth.markers(cellsOf(b)), truth.nameOfColumn);
  // No count read for a category: its statistics only (the column's object, once).
  const first = s.history.filter((h) => h.action === "markers").at(-1)!;
  assert.ok(first.requests <= 1, JSON.stringify(first));
  assert.equal(
    s.history.some((h) => h.action.startsWith("top genes of")),
    false,
  );
  assert.equal(await page.locator(`#legend li[data-category="CD19+ B"].selected`).count(), 1);

  // Shift adds the monocytes.
  await entry(mono).click({ modifiers: ["Shift"] });
  await page.waitForFunction(
    (n) =>
      (window as unknown as { __viewer: { state: { markers?: { nGroup: number } } } }).__viewer.state.markers
        ?.nGroup === n,
    cellsOf(b).length + cellsOf(mono).length,
  );
  await idle(page);
  s = await explorer(page);
  const both = [...cellsOf(b), ...cellsOf(mono)].sort((x, y) => x - y);
  assertMarkers(s.markers!.rows, truth.markers(both), truth.nameOfColumn);
  assert.equal(s.history.filter((h) => h.action === "markers").at(-1)!.requests, 0);

  // B cells against the monocytes only (scanpy's reference=...).
  await entry(b).click();
  await page.waitForFunction(
    (n) =>
      (window as unknown as { __viewer: { state: { markers?: { nGroup: number } } } }).__viewer.state.markers
        ?.nGroup === n,
    cellsOf(b).length,
  );
  await page.selectOption("#reference", String(mono));
  await page.waitForFunction(
    () =>
      (window as unknown as { __viewer: { state: { markers?: { reference: string } } } }).__viewer.state
        .markers?.reference === "CD14+ Monocyte",
  );
  await idle(page);
  s = await explorer(page);
  assert.equal(s.markers!.nReference, cellsOf(mono).length);
  assertMarkers(s.markers!.rows, truth.markers(cellsOf(b), cellsOf(mono)), truth.nameOfColumn);

  // The eye hides the monocytes: the plot draws the other cells only.
  await page.locator(`#legend li[data-category="CD14+ Monocyte"] .legend-eye`).click();
  await plotSettled(page);
  assert.equal((await plotState(page)).drawn, 700 - cellsOf(mono).length);
  assert.deepEqual((await explorer(page)).hiddenCategories, [mono]);
  await page.locator(`#legend li[data-category="CD14+ Monocyte"] .legend-eye`).click();
  await plotSettled(page);
  assert.equal((await plotState(page)).drawn, 700);

  // A long name is cut in the legend and shown whole on hover (its title).
  const long = page.locator(`#legend li[data-category="CD4+/CD45RA+/CD25- Naive T"]`);
  assert.match((await long.getAttribute("title"))!, /^CD4\+\/CD45RA\+\/CD25- Naive T: \d+ cells$/);
  assert.equal(
    await long.locator(".legend-label").evaluate((e) => getComputedStyle(e).textOverflow),
    "ellipsis",
  );
  assert.deepEqual(errors, []);
  await page.close();
});

test("markers of every category and a dot plot of any genes are drawn from the statistics alone", async () => {
  const { page, errors } = await openViewer("/pbmc68k/");
  const truth = await truthOf(pbmc);
  const obs = await sourceCategory(PBMC, "bulk_labels");
  const { cellsOf } = obs;
  await call(page, "colourBy", "bulk_labels");
  await page.locator("#all-markers-button").click();
  await page.waitForFunction(
    () => (window as unknown as { __viewer: { state: { allMarkers?: unknown } } }).__viewer.state.allMarkers,
  );
  await idle(page);
  let s = await explorer(page);
  assert.equal(s.allMarkers!.groups.length, obs.categories.filter((_, k) => cellsOf(k).length >= 2).length);
  for (const g of s.allMarkers!.groups) {
    const table = truth.markers(cellsOf(obs.categories.indexOf(g.label)));
    assert.deepEqual(
      g.rows.map((r) => r.gene),
      Array.from(table.order.subarray(0, 5), (j) => truth.nameOfColumn[j]),
      g.label,
    );
  }
  const genes = ["CD74", "LYZ", "CST3", "NKG7", "MS4A1", "GNLY"];
  await page.locator("#dotplot-genes").fill(genes.join(", "));
  await page.locator("#dotplot-genes").press("Enter");
  await page.waitForFunction(
    () => (window as unknown as { __viewer: { state: { dotplot?: unknown } } }).__viewer.state.dotplot,
  );
  await idle(page);
  s = await explorer(page);
  const dot = s.dotplot!;
  assert.equal(dot.column, "bulk_labels");
  assert.deepEqual(dot.genes, genes);
  // No count was read for it.
  assert.equal(s.history.filter((h) => h.action.startsWith("dot plot")).at(-1)!.requests, 0);
  const values = Object.fromEntries(genes.map((g) => [g, truth.logNormalised(g)]));
  dot.categories.forEach((label, i) => {
    const cells = cellsOf(obs.categories.indexOf(label));
    genes.forEach((g, j) => {
      const v = cells.map((c) => values[g]![c]!);
      assert.ok(
        close(dot.mean[i]![j]!, v.reduce((a, b) => a + b, 0) / cells.length),
        `${g} in ${label}: mean`,
      );
      assert.equal(
        dot.fraction[i]![j],
        v.filter((x) => x > 0).length / cells.length,
        `${g} in ${label}: fraction`,
      );
    });
  });
  assert.equal(await page.locator("#dotplot circle").count(), dot.categories.length * genes.length);
  assert.deepEqual(errors, []);
  await page.close();
});

test("a gene's violins per category: quartiles, extremes and means of log1p(counts per 10,000), from its column and the statistics' totals", async () => {
  const { page, errors } = await openViewer("/pbmc68k/");
  const truth = await truthOf(pbmc);
  const obs = await sourceCategory(PBMC, "bulk_labels");
  await call(page, "colourBy", "bulk_labels");
  await call(page, "setScale", "log1p_cp10k");
  await call(page, "searchGene", "LYZ");
  await idle(page);
  const s = await explorer(page);
  const values = truth.logNormalised("LYZ");
  const f32 = 1e-6;
  for (const g of s.violin!.groups) {
    const k = obs.categories.indexOf(g.label);
    const v: number[] = [...obs.codes.keys()].filter((c) => obs.codes[c] === k).map((c) => values[c]!);
    assert.equal(g.n, v.length);
    for (const [got, want, what] of [
      [g.min, Math.min(...v), "min"],
      [g.q1, quantile(v, 0.25), "q1"],
      [g.median, quantile(v, 0.5), "median"],
      [g.q3, quantile(v, 0.75), "q3"],
      [g.max, Math.max(...v), "max"],
      [g.mean, v.reduce((a, b) => a + b, 0) / v.length, "mean"],
    ] as const)
      assert.ok(close(got, want, f32), `${g.label} ${what}: ${got} vs ${want}`);
  }
  assert.equal(await page.locator("#violin polygon").count(), s.violin!.groups.length);
  // The gene's column in two waves; the totals once (one request).
  const gene = s.history.find((h) => h.action === "gene LYZ")!;
  assert.equal(gene.waves, 2);
  assert.ok(
    s.history
      .filter((h) => h.action.startsWith("violins") || h.action.startsWith("scale"))
      .reduce((a, h) => a + h.requests, 0) <= 1,
  );
  assert.deepEqual(errors, []);
  await page.close();
});

test("a gene set colours each cell by its genes' mean; a second gene is drawn beside the first", async () => {
  const { page, errors } = await openViewer("/pbmc68k/");
  const truth = await truthOf(pbmc);
  await page.locator("#gene").fill("CD74, LYZ,CST3");
  await page.locator("#gene").press("Enter");
  await page.waitForFunction(
    () => (window as unknown as { __viewer: { state: { geneSet?: unknown } } }).__viewer.state.geneSet,
  );
  await idle(page);
  await plotSettled(page);
  const s = await explorer(page);
  assert.deepEqual(s.geneSet!.names, ["CD74", "LYZ", "CST3"]);
  const [a, b, c] = ["CD74", "LYZ", "CST3"].map((g) => truth.counts(g));
  const mean = a!.map((v, i) => Math.fround(v / 3 + b![i]! / 3 + c![i]! / 3));
  s.geneSet!.values.forEach((v, i) => {
    assert.ok(close(v, mean[i]!, 1e-6), `cell ${i}: ${v} vs ${mean[i]}`);
  });
  // Read together: two waves for the three genes.
  assert.equal(s.history.find((h) => h.action === "gene set of 3")!.waves, 2);
  const p = await plotState(page, true);
  const max = s.geneSet!.max;
  p.values.forEach((v, i) => {
    assert.ok(Math.abs(v - s.geneSet!.values[i]! / max) < 1e-6, `plot value ${i}`);
  });

  await call(page, "searchGene", "CD74");
  await page.locator("#gene2").fill("LYZ");
  await page.locator("#gene2").press("Enter");
  await page.waitForFunction(
    () => (window as unknown as { __viewer: { state: { pair?: unknown } } }).__viewer.state.pair,
  );
  const pair = (await explorer(page)).pair!;
  assert.deepEqual(pair, {
    a: "CD74",
    b: "LYZ",
    expressingA: a!.filter((v) => v > 0).length,
    expressingB: b!.filter((v) => v > 0).length,
    both: a!.filter((v, i) => v > 0 && b![i]! > 0).length,
  });
  assert.equal(await page.locator("#pair canvas").count(), 2);
  for (const canvas of await page.locator("#pair canvas").all()) {
    const ink = await inkOf(page, await canvas.screenshot());
    assert.ok(ink.ink > 300, JSON.stringify(ink));
  }
  assert.deepEqual(errors, []);
  await page.close();
});

test("colour scales: log1p(counts) and counts per 10,000 over the gene's range, then a fixed range", async () => {
  const { page, errors } = await openViewer("/pbmc68k/");
  const truth = await truthOf(pbmc);
  await call(page, "searchGene", "CD74");
  const counts = truth.counts("CD74");
  const check = async (expected: number[], lo: number, hi: number) => {
    await idle(page);
    await plotSettled(page);
    const p = await plotState(page, true);
    p.values.forEach((v, i) => {
      const want = Math.min(1, Math.max(0, (Math.fround(expected[i]!) - lo) / (hi - lo)));
      assert.ok(Math.abs(v - want) < 1e-6, `cell ${i}: ${v} vs ${want}`);
    });
  };
  await page.selectOption("#scale", "log1p");
  const log = Array.from(counts, (v) => Math.log1p(v));
  await check(log, 0, Math.max(...log.map(Math.fround)));
  await page.selectOption("#scale", "cp10k");
  const cp = Array.from(counts, (v, c) => (v ? (v * 1e4) / truth.total(c) : 0));
  await check(cp, 0, Math.max(...cp.map(Math.fround)));
  assert.ok(close((await explorer(page)).range.hi, Math.max(...cp), 1e-12));
  await page.selectOption("#range-mode", "fixed");
  await page.locator("#range-lo").fill("10");
  await page.locator("#range-hi").fill("200");
  await page.locator("#range-hi").dispatchEvent("change");
  await check(cp, 10, 200);
  assert.match((await page.locator("#legend").textContent())!, /CD74 \(counts per 10,000\)10200/);
  assert.deepEqual(errors, []);
  await page.close();
});

test("a choice of the stored embeddings, and spatial coordinates drawn as the tissue (rows of spots downwards)", async () => {
  const { page, errors } = await openViewer("/spatial/");
  const s = await explorer(page);
  assert.deepEqual([...s.embeddings].sort(), ["X_tsne", "X_umap", "spatial"]);
  assert.deepEqual(
    await page.locator("#embedding option").allTextContents(),
    s.embeddings.map((e) => e.replace(/^X_/, "")),
  );
  await page.selectOption("#embedding", "spatial");
  await page.waitForFunction(
    () =>
      (window as unknown as { __viewer: { state: { embedding?: string } } }).__viewer.state.embedding ===
      "spatial",
  );
  await plotSettled(page);
  // Spot i is at image column i % 20 and row floor(i / 20) (pixels, y downwards): on screen spot
  // 21 is right of spot 20 and below spot 1, as in the image.
  const [p1, p20, p21] = [await screenAt(page, 1), await screenAt(page, 20), await screenAt(page, 21)];
  assert.ok(p21[0] > p20[0] + 1, `${p21} right of ${p20}`);
  assert.ok(p21[1] > p1[1] + 1, `${p21} below ${p1}`);
  assert.ok(Math.abs(p21[0] - p1[0]) < 0.5 && Math.abs(p21[1] - p20[1]) < 0.5);
  // Square pixels: a row step equals a column step on screen.
  assert.ok(Math.abs(p21[1] - p1[1] - (p21[0] - p20[0])) < 0.5);
  // The colouring goes across: GENE0 is expressed in the left half only.
  await call(page, "searchGene", "GENE0");
  await plotSettled(page);
  const values = (await plotState(page, true)).values;
  assert.ok(values.every((v, i) => (i % 20 < 10 ? v > 0 : v === 0)));
  await page.selectOption("#embedding", "X_tsne");
  await page.waitForFunction(
    () =>
      (window as unknown as { __viewer: { state: { embedding?: string } } }).__viewer.state.embedding ===
      "X_tsne",
  );
  await plotSettled(page);
  assert.deepEqual((await plotState(page, true)).values, values, "the colouring stays");
  assert.deepEqual(errors, []);
  await page.close();
});

test("hover names the cell's barcode and value next to the pointer", async () => {
  const { page, errors } = await openViewer("/pbmc68k/");
  const obs = await sourceObs(PBMC);
  await call(page, "searchGene", "CD74");
  await plotSettled(page);
  const truth = await truthOf(pbmc);
  const box = (await page.locator("#scatter").boundingBox())!;
  const [x, y] = await screenAt(page, 123);
  await page.mouse.move(box.x + x, box.y + y);
  const barcode = obs.index[123]!;
  await page.waitForFunction(
    (b) =>
      (window as unknown as { __viewer: { state: { hoverText: string } } }).__viewer.state.hoverText.includes(
        b,
      ),
    barcode,
  );
  assert.equal(
    (await page.locator("#hover").textContent())!,
    `cell 123 · ${barcode} · CD74 ${truth.counts("CD74")[123]}`,
  );
  const tip = (await page.locator("#hover").boundingBox())!;
  const distance = Math.hypot(tip.x - (box.x + x), tip.y - (box.y + y));
  assert.ok(distance < 40, `the tooltip is ${distance} px from the pointer`);
  assert.deepEqual(errors, []);
  await page.close();
});

test("the plot keeps its size when the legend fills or a message comes and goes", async () => {
  const { page, errors } = await openViewer("/pbmc68k/");
  await plotSettled(page);
  const before = await page.locator("#scatter-wrap").boundingBox();
  await call(page, "colourBy", "louvain");
  await call(page, "searchGene", "NOT-A-GENE");
  assert.match((await explorer(page)).error!, /No gene named "NOT-A-GENE"/);
  assert.deepEqual(await page.locator("#scatter-wrap").boundingBox(), before);
  await call(page, "searchGene", "CD74");
  assert.equal(await page.locator("#message").isVisible(), false);
  await call(page, "colourBy", "");
  assert.deepEqual(await page.locator("#scatter-wrap").boundingBox(), before);
  assert.deepEqual(errors, []);
  await page.close();
});

test("fixed: the histogram's axis ends at the gene's maximum and its label clears the bars; an unknown gene clears the last; no embedding, no colour bar", async () => {
  const { page, errors } = await openViewer("/pbmc68k/");
  await call(page, "searchGene", "CD74");
  const s = await explorer(page);
  assert.equal(s.gene!.max, 123);
  assert.deepEqual(s.histogram!.labels, ["1", "123"]);
  assert.equal(
    s.histogram!.counts.reduce((a, b) => a + b, 0),
    s.gene!.nonzero,
  );
  // The top 16 rows hold the "N cells" label only: grey text, never a bar's colour.
  const coloured = await page.evaluate(() => {
    const c = document.getElementById("histogram") as HTMLCanvasElement;
    const d = c.getContext("2d")!.getImageData(0, 0, c.width, 16).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4)
      if (d[i + 3]! > 0 && (d[i] !== d[i + 1] || d[i + 1] !== d[i + 2])) n++;
    return n;
  });
  assert.equal(coloured, 0);
  await call(page, "searchGene", "NOT-A-GENE");
  const after = await explorer(page);
  assert.equal(after.gene, undefined);
  assert.equal(after.histogram, undefined);
  assert.equal(await page.locator("#histogram").isVisible(), false);
  assert.equal((await page.locator("#gene-summary").textContent())!, "");
  await page.close();

  const plain = await openViewer("/chr21/");
  const ds = await truthOf(join(root, "chr21"));
  await call(plain.page, "searchGene", ds.names[0]!);
  assert.equal(await plain.page.locator("#legend .colour-bar").count(), 0);
  assert.equal(await plain.page.locator("#legend").isVisible(), false);
  assert.equal(await plain.page.locator("#no-embedding").isVisible(), true);
  assert.deepEqual([...errors, ...plain.errors], []);
  await plain.page.close();
});

test("the view lives in the URL: a link opens the same gene, colouring, scale, embedding, selection, reference and dot plot", async () => {
  const { page, errors } = await openViewer("/pbmc68k/");
  const obs = await sourceCategory(PBMC, "bulk_labels");
  await call(page, "colourBy", "bulk_labels");
  await call(page, "searchGene", "CD74");
  await call(page, "setScale", "log1p");
  await call(page, "selectCategories", [3]);
  await call(page, "setReference", 5);
  await call(page, "dotPlot", ["CD74", "LYZ"]);
  await call(page, "toggleCategory", 7);
  await idle(page);
  const url = page.url();
  const want = await explorer(page);
  assert.match(url, /gene=CD74/);
  assert.match(url, /cats=3/);
  await page.close();
  const again = await chromium.browser.newPage({ viewport: { width: 1200, height: 760 } });
  await again.goto(url);
  await again.waitForFunction(
    () => (window as unknown as { __viewer?: { state: { ready: boolean } } }).__viewer?.state.ready,
  );
  await idle(again);
  const got = await explorer(again);
  assert.equal(got.gene!.name, "CD74");
  assert.equal(got.colourBy!.name, "bulk_labels");
  assert.equal(got.scale, "log1p");
  assert.deepEqual(got.selectionFrom, want.selectionFrom);
  assert.deepEqual(got.selection, want.selection);
  assert.deepEqual(got.hiddenCategories, [7]);
  assert.equal(got.markers!.reference, obs.categories[5]);
  assert.deepEqual(got.markers!.rows, want.markers!.rows);
  assert.deepEqual(got.dotplot!.genes, ["CD74", "LYZ"]);
  // A lasso's cells travel as a code.
  await call(again, "select", [5, 6, 7, 123, 400]);
  await again.waitForFunction(
    () =>
      (window as unknown as { __viewer: { state: { selection: number[] } } }).__viewer.state.selection
        .length === 5,
  );
  await idle(again);
  const third = await chromium.browser.newPage({ viewport: { width: 1200, height: 760 } });
  await third.goto(again.url());
  await third.waitForFunction(
    () => (window as unknown as { __viewer?: { state: { ready: boolean } } }).__viewer?.state.ready,
  );
  await third.waitForFunction(
    () =>
      (window as unknown as { __viewer: { state: { selection: number[] } } }).__viewer.state.selection
        .length === 5,
  );
  assert.deepEqual((await explorer(third)).selection, [5, 6, 7, 123, 400]);
  assert.deepEqual(errors, []);
  await again.close();
  await third.close();
});

test("a selection downloads as CSV of its cells' barcodes and obs, read from their tiles only", async () => {
  const { page, errors } = await openViewer("/pbmc68k/");
  const obs = await sourceObs(PBMC);
  await call(page, "select", [400, 5, 123]);
  await page.waitForFunction(
    () =>
      (window as unknown as { __viewer: { state: { selection: number[] } } }).__viewer.state.selection
        .length === 3,
  );
  await idle(page);
  const csv = (await call(page, "downloadSelection", false)) as string;
  const lines = csv.trimEnd().split("\n");
  const header = lines[0]!.split(",");
  assert.deepEqual(header.slice(0, 3), ["cell", "barcode", "bulk_labels"]);
  const labels = obs.columns.find((c) => c.name === "bulk_labels")!;
  if (labels.kind !== "category") throw new Error("bulk_labels is categorical");
  const selected = (await explorer(page)).selection;
  lines.slice(1).forEach((line, i) => {
    const c = selected[i]!;
    const [cell, barcode, label] = line.split(",");
    assert.deepEqual([Number(cell), barcode, label], [c, obs.index[c], labels.categories[labels.codes[c]!]]);
  });
  // One tile holds them: its shard's footer and a chunk per column, nothing else.
  const cost = (await explorer(page)).history.find((h) => h.action === "obs of 3 cells")!;
  assert.ok(cost.requests <= 2 + header.length, JSON.stringify(cost));
  assert.deepEqual(errors, []);
  await page.close();
});

test("without statistics, or with statistics of another version, the page works and says why there are no markers", async () => {
  for (const [name, message] of [
    ["/pbmc-plain/", /this dataset has no statistics: .*deltacells stats DATASET/],
    [
      "/stale/",
      /statistics cannot be used: .*describes another version of the dataset .*deltacells stats DATASET/,
    ],
  ] as const) {
    const { page, errors } = await openViewer(name);
    const s = await explorer(page);
    assert.equal(s.error, undefined);
    assert.match((s.dataset as { stats?: string }).stats!, message);
    assert.match((await page.locator("#markers-note").textContent())!, message);
    await call(page, "select", [1, 2, 3]);
    await idle(page);
    assert.equal((await explorer(page)).markers, undefined);
    assert.deepEqual(errors, []);
    await page.close();
  }
});
