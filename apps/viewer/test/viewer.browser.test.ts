/**
 * The viewer end to end in headless Chromium: the page built by Vite and the data both handed out
 * by `deltacells serve`, the pbmc68k demo converted by the real CLI with its sporadik companion and
 * obs (cell types, UMAP). What the page draws is read from its state and compared with the readers'
 * own answers, taken here from the tiles (an independent path from the companion the page reads).
 */
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { openDataset } from "@deltacells/core/node";
import type { Page } from "playwright-core";
import { type RunningServer, startServer } from "../../../packages/cli/src/serve/http.js";
import type { RunningBrowser } from "../../../test-utils/browser/browser.js";
import { launchChromium, serveDirectory } from "../../../test-utils/browser/index.js";
import type { StaticServer } from "../../../test-utils/browser/server.js";
import type { PlotState } from "../src/scatter.js";
import { buildPbmc, buildViewer, deltacells, PBMC, REPO } from "./fixtures.js";
import {
  assertRingOn,
  idle,
  inkOf,
  openViewer as openPage,
  plotSettled,
  screenAt,
  snapshot,
  sourceObs,
} from "./viewer-page.js";

const openViewer = (data: string, query = "", init?: () => void) =>
  openPage(chromium.browser, server.url, data, query, init);

/** 50 pbmc68k cells with their obs (cell types) and no obsm: no embedding. */
const NO_EMBEDDING = join(REPO, "data/anndata/obs-compound.h5ad");

let root: string;
let pbmc: string;
let server: RunningServer;
let plain: StaticServer;
let chromium: RunningBrowser;

before(async () => {
  root = mkdtempSync(join(tmpdir(), "deltacells-viewer-"));
  const chr21 = join(REPO, "data/10x-v3-chr21/filtered_feature_bc_matrix.h5");
  const convert = (input: string, name: string, ...flags: string[]) =>
    deltacells("convert", input, join(root, name), ...flags, "--quiet", "--threads", "1");
  // All at once: the file has 5 minutes in all, and on a loaded machine the fixtures take most of it.
  const [, dir] = await Promise.all([
    buildViewer(join(root, "viewer-dist")),
    buildPbmc(root),
    launchChromium().then((c) => (chromium = c)),
    // No obs, so no embedding.
    convert(chr21, "chr21", "--sporadik"),
    // Obs (cell types) but no embedding: the fallback's table.
    convert(NO_EMBEDDING, "no-umap", "--sporadik"),
    // No companion: genes come from the tiles.
    convert(chr21, "chr21-plain"),
    // 44 tiles: opening reads each obs column as 44 ranges.
    convert(PBMC, "pbmc-small-tiles", "--tile-size", "16", "--obs-tiles-per-file", "4"),
  ]);
  pbmc = dir;
  // A torn copy: the companion's completion block never written.
  cpSync(pbmc, join(root, "torn"), { recursive: true });
  rmSync(join(root, "torn/sporadik/zarr.json"));
  // A damaged copy: every chunk of the gene layout's values with its stored checksum changed.
  cpSync(pbmc, join(root, "bad-checksum"), { recursive: true });
  const values = join(root, "bad-checksum/sporadik/layouts/axis1/data/c");
  for (const name of readdirSync(values)) {
    const bytes = readFileSync(join(values, name));
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 0x01;
    writeFileSync(join(values, name), bytes);
  }
  // A manifest naming a companion outside its own prefix (chr21's, beside it, of the same shape).
  cpSync(join(root, "chr21"), join(root, "escaping"), { recursive: true });
  const escaping = join(root, "escaping/manifest.json");
  const manifest = JSON.parse(readFileSync(escaping, "utf8"));
  manifest.metadata.sporadik = "../chr21/sporadik";
  writeFileSync(escaping, `${JSON.stringify(manifest)}\n`);
  server = await startServer({ root, viewerDir: join(root, "viewer-dist"), port: 0 });
  // Another origin: the same files without CORS, and a path that always answers 403 (with CORS, so
  // the page can see the status).
  plain = await serveDirectory(root, {
    route: (req, res, path) => {
      if (path.startsWith("/slow/")) return slowProxy(req, res, path.slice("/slow".length));
      if (!path.startsWith("/forbidden/")) return false;
      res.writeHead(403, { "Access-Control-Allow-Origin": "*", "Content-Type": "application/xml" });
      res.end("<Error><Code>AccessDenied</Code></Error>");
      return true;
    },
  });
});

after(async () => {
  await chromium?.close();
  await server?.close();
  await plain?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

/**
 * `/slow/NAME/...`: the files of `deltacells serve`, except the gene layout's indices and data,
 * which never answer (until the page gives up on them).
 */
function slowProxy(req: IncomingMessage, res: ServerResponse, path: string): boolean {
  if (/\/sporadik\/layouts\/axis1\/(data|indices)\/c\//.test(path)) {
    res.setHeader("Access-Control-Allow-Origin", "*");
    return true;
  }
  const headers = { ...req.headers };
  delete headers.host;
  delete headers.origin;
  const up = httpRequest(`${server.url}${path.slice(1)}`, { headers }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  up.on("error", () => res.destroy());
  up.end();
  return true;
}

test("pbmc68k over serve: embedding, gene search, obs colouring, a clicked cell, the costs shown", async () => {
  const { page, errors } = await openViewer("/pbmc68k/");
  let s = await snapshot(page);
  assert.equal(s.error, undefined);
  assert.equal(s.embedding, "X_umap");
  assert.deepEqual([s.dataset!.nCells, s.dataset!.nGenes], [700, 765]);
  assert.ok(s.history.some((h) => h.action === "open" && h.requests > 0 && h.outcome === "done"));

  // The tiles, read in Node: every cell's counts, in the dataset's gene order.
  const ds = await openDataset(pbmc);
  const names = (await ds.geneNames())!;
  const rows = await ds.cells(0, ds.nCells);
  const countOf = (cell: number, gene: number) => {
    for (let k = rows.indptr[cell]!; k < rows.indptr[cell + 1]!; k++)
      if (rows.indices[k] === gene) return Number(rows.data[k]);
    return 0;
  };

  // Type a prefix, pick the gene from the suggestions.
  await page.locator("#gene").click();
  await page.keyboard.type("CD7");
  await page.locator("#gene-list li", { hasText: /^CD74$/ }).click();
  await page.waitForFunction(
    () =>
      (window as unknown as { __viewer: { state: { gene?: { name: string } } } }).__viewer.state.gene
        ?.name === "CD74",
  );
  await idle(page);
  s = await snapshot(page);
  const j = names.indexOf("CD74");
  const expected = Array.from({ length: ds.nCells }, (_, c) => countOf(c, j));
  assert.deepEqual(s.gene!.values, expected);
  assert.equal(s.gene!.nonzero, expected.filter((v) => v > 0).length);
  assert.equal(s.gene!.max, Math.max(...expected));
  // One gene across all cells: the indptr bracket, then the indices and data runs.
  const geneCost = s.history.find((h) => h.action === "gene CD74")!;
  assert.equal(geneCost.waves, 2);
  assert.ok(geneCost.requests >= 2 && geneCost.requests <= 4, `${geneCost.requests} requests`);
  assert.match((await page.locator("#status-text").textContent())!, /gene CD74: \d+ requests in 2 waves/);
  assert.match(
    (await page.locator("#gene-summary").textContent())!,
    new RegExp(`expressed in ${s.gene!.nonzero} of 700 cells`),
  );

  // Colour by the cell types: legend counts equal the obs column's.
  await page.selectOption("#color-by", "bulk_labels");
  await page.waitForFunction(
    () =>
      (window as unknown as { __viewer: { state: { colourBy?: { name: string } } } }).__viewer.state.colourBy
        ?.name === "bulk_labels",
  );
  await idle(page);
  s = await snapshot(page);
  // Expected from the h5ad itself (the input reader), not from the sidecar the page reads.
  const obs = (await sourceObs(PBMC)).columns.find((c) => c.name === "bulk_labels")!;
  assert.equal(obs.kind, "category");
  const counts = new Array<number>(obs.kind === "category" ? obs.categories.length + 1 : 0).fill(0);
  if (obs.kind === "category") for (const c of obs.codes) counts[c < 0 ? obs.categories.length : c]!++;
  assert.deepEqual(s.colourBy!.counts, counts);
  assert.equal(await page.locator("#legend li").count(), 10);
  assert.ok(s.categoryMeans.length > 0);

  // CD74's mean per cell type over all cells (no selection yet), against the tiles and the h5ad.
  const means =
    obs.kind === "category"
      ? obs.categories.map((label, k) => {
          const cells = [...obs.codes.keys()].filter((c) => obs.codes[c] === k);
          return {
            label,
            value: cells.reduce((a, c) => a + expected[c]!, 0) / cells.length,
            n: cells.length,
          };
        })
      : [];
  assert.deepEqual(
    s.categoryMeans.map(({ label, value }) => ({ label, value })),
    means.filter((m) => m.n > 0).map(({ label, value }) => ({ label, value })),
  );
  assert.equal(await page.locator("#category-means .bar").count(), s.categoryMeans.length);

  // Click one cell on the canvas, where the plot says it is drawn, once the new colours and the
  // legend below the plot (which resizes it) are in place: regl-scatterplot ignores a press while
  // it replaces the points, and a resize moves every cell.
  await plotSettled(page);
  const cell = 123;
  const pos = await screenAt(page, cell);
  const box = (await page.locator("#scatter").boundingBox())!;
  // The pointer goes there first, and the click follows once the page has seen it (it hovers the
  // cell): pressed in the same frame as a jump of the pointer across the plot, the camera takes
  // the jump for a drag and pans, as it would never see from a real mouse.
  await page.mouse.move(box.x + pos[0], box.y + pos[1]);
  await page.waitForFunction(
    (c) => (window as unknown as { __viewer: { state: { hovered?: number } } }).__viewer.state.hovered === c,
    cell,
  );
  await page.mouse.click(box.x + pos[0], box.y + pos[1]);
  await page
    .waitForFunction(
      () =>
        (window as unknown as { __viewer: { state: { topGenes: unknown[] } } }).__viewer.state.topGenes
          .length > 0,
    )
    .catch(async (err: unknown) => {
      // Say where the click went and what the page holds (a dropped click is otherwise mute).
      const now = await snapshot(page);
      const where = await page.evaluate(
        (i) =>
          (window as unknown as { __viewer: { screenPosition(i: number): unknown } }).__viewer.screenPosition(
            i,
          ),
        cell,
      );
      throw new Error(
        `the click on cell ${cell} at ${pos} selected nothing (it is drawn at ${where} now; box ${JSON.stringify(box)}; selection ${JSON.stringify(now.selection)}; error ${now.error})`,
        { cause: err },
      );
    });
  await idle(page);
  s = await snapshot(page);
  assert.deepEqual(s.selection, [cell]);
  for (const t of s.topGenes) assert.equal(t.mean, countOf(cell, names.indexOf(t.name)), t.name);
  const own = Array.from({ length: ds.nGenes }, (_, g) => countOf(cell, g))
    .sort((a, b) => b - a)
    .slice(0, s.topGenes.length);
  assert.deepEqual(
    s.topGenes.map((t) => t.mean),
    own,
  );
  // The mean of CD74 in the clicked cell's category is its own count.
  assert.equal(s.categoryMeans.length, 1);
  assert.equal(s.categoryMeans[0]!.value, countOf(cell, j));
  const selectCost = s.history.find((h) => h.action === "top genes of 1 cell")!;
  assert.equal(selectCost.waves, 2);
  assert.match(
    (await page.locator("#status-text").textContent())!,
    /top genes of 1 cell: \d+ requests in 2 waves/,
  );

  // The picture is not blank, and neither is the one the docs show (VIEWER_SCREENSHOT=docs/viewer.png
  // writes this one there).
  const shot = await page.screenshot();
  const plot = await page.locator("#scatter").screenshot();
  const ink = await inkOf(page, plot);
  assert.ok(ink.ink > 2000 && ink.colours > 10, JSON.stringify(ink));
  const docs = await inkOf(page, readFileSync(join(REPO, "docs/viewer.png")));
  assert.ok(docs.ink > 20_000 && docs.colours > 50, `docs/viewer.png: ${JSON.stringify(docs)}`);
  if (process.env.VIEWER_SCREENSHOT)
    (await import("node:fs")).writeFileSync(process.env.VIEWER_SCREENSHOT, shot);
  assert.deepEqual(errors, []);
  await page.close();
});

test("hover shows a cell, shift-drag lassoes cells (one batch), a numeric column gets a colour bar", async () => {
  const { page, errors } = await openViewer("/pbmc68k/");
  await plotSettled(page);
  type W = {
    __viewer: {
      state: { hovered?: number; selection: number[] };
    };
  };
  const box = (await page.locator("#scatter").boundingBox())!;
  const [hx, hy] = await screenAt(page, 123);
  await page.mouse.move(box.x + hx, box.y + hy);
  await page.waitForFunction(() => (window as unknown as W).__viewer.state.hovered === 123);
  assert.match((await page.locator("#hover").textContent())!, /^cell 123/);

  // A square of 80 px around cell 123, drawn with the shift key held.
  const [x0, y0, x1, y1] = [hx - 40, hy - 40, hx + 40, hy + 40];
  await lassoSquare(page, box, x0, y0, x1, y1);
  await idle(page);
  const s = await snapshot(page);
  // Every selected cell lies in the square (a pixel of slack for the lasso's smoothing).
  for (const c of s.selection) {
    const [x, y] = await screenAt(page, c);
    assert.ok(x >= x0 - 2 && x <= x1 + 2 && y >= y0 - 2 && y <= y1 + 2, `cell ${c} at ${x},${y}`);
  }
  const ds = await openDataset(pbmc);
  const names = (await ds.geneNames())!;
  const rows = await ds.cells(0, ds.nCells);
  const sums = new Float64Array(ds.nGenes);
  for (const c of s.selection)
    for (let k = rows.indptr[c]!; k < rows.indptr[c + 1]!; k++)
      sums[rows.indices[k]!]! += Number(rows.data[k]);
  for (const t of s.topGenes)
    assert.ok(Math.abs(t.mean - sums[names.indexOf(t.name)]! / s.selection.length) < 1e-9, t.name);
  const cost = s.history.find((h) => h.action === `top genes of ${s.selection.length} cells`)!;
  assert.equal(cost.waves, 2, "the selection's rows are read as one batch");

  // ctrl-click adds a cell to the selection, alt-click takes it out again (the page combines them:
  // the plot never holds a selection). A cell far outside the square, hovered before it is clicked.
  const lassoed = [...s.selection].sort((a, b) => a - b);
  let outside = -1;
  for (let c = 0; c < ds.nCells && outside < 0; c += 7) {
    const [x, y] = await screenAt(page, c);
    if (Math.min(Math.abs(x - hx), Math.abs(y - hy)) > 120 && x > 10 && y > 10) outside = c;
  }
  assert.ok(outside >= 0 && !lassoed.includes(outside));
  const clickWith = async (cell: number, key: "Control" | "Alt", expected: number[]) => {
    const [x, y] = await screenAt(page, cell);
    await page.mouse.move(box.x + x, box.y + y);
    await page.waitForFunction((c) => (window as unknown as W).__viewer.state.hovered === c, cell);
    await page.keyboard.down(key);
    await page.mouse.click(box.x + x, box.y + y);
    await page.keyboard.up(key);
    await page.waitForFunction(
      (want) =>
        JSON.stringify([...(window as unknown as W).__viewer.state.selection].sort((a, b) => a - b)) === want,
      JSON.stringify(expected),
    );
  };
  await clickWith(
    outside,
    "Control",
    [...lassoed, outside].sort((a, b) => a - b),
  );
  await clickWith(outside, "Alt", lassoed);
  await idle(page);

  await page.selectOption("#color-by", "n_counts");
  await page.waitForFunction(
    () =>
      (window as unknown as { __viewer: { state: { colourBy?: { name: string } } } }).__viewer.state.colourBy
        ?.name === "n_counts",
  );
  assert.equal((await snapshot(page)).colourBy!.kind, "numeric");
  assert.equal(await page.locator("#legend .colour-bar").count(), 1);
  assert.deepEqual(errors, []);
  await page.close();
});

const plotState = (page: Page, full = false) =>
  page.evaluate(
    (f) => (window as unknown as { __viewer: { plotState(f: boolean): PlotState } }).__viewer.plotState(f),
    full,
  );

test("while the view moves a subset of the cells is drawn; once still, every cell with its colour and the selection", async () => {
  // `lod=200`: the 700 cells are drawn as 200 while the view moves (500,000 as 40,000 by default),
  // and first, until every cell is drawn, with a note over the plot (recorded as it appears).
  const { page, errors } = await openViewer("/pbmc68k/", "&lod=200", () => {
    const seen: string[] = [];
    (window as unknown as { __notes: string[] }).__notes = seen;
    new MutationObserver((records) => {
      for (const r of records)
        for (const node of r.addedNodes)
          if (node instanceof HTMLElement && node.classList.contains("plot-note"))
            seen.push(node.textContent ?? "");
    }).observe(document, { childList: true, subtree: true });
  });
  type W = {
    __viewer: {
      searchGene(g: string): Promise<void>;
      select(cells: number[]): void;
      screenPosition(i: number): [number, number] | undefined;
      state: { hovered?: number; selection: number[] };
    };
  };
  await page.evaluate(() => (window as unknown as W).__viewer.searchGene("CD74"));
  await page.evaluate(() => (window as unknown as W).__viewer.select([5, 123, 400]));
  await page.waitForFunction(() => (window as unknown as W).__viewer.state.selection.length === 3);
  await idle(page);
  await plotSettled(page);
  assert.deepEqual(await page.evaluate(() => (window as unknown as { __notes: string[] }).__notes), [
    "200 of 700 cells shown while every cell is drawn; clicks and lassos select among all of them",
  ]);
  assert.equal(await page.locator(".plot-note").count(), 0, "the note goes once every cell is drawn");
  assert.equal((await plotState(page)).swaps, 0);
  // Read in every frame a bench measures, the plot's state allocates nothing: one object, updated.
  assert.equal(
    await page.evaluate(() => {
      const v = (window as unknown as { __viewer: { plotState(): PlotState } }).__viewer;
      const first = v.plotState();
      return v.plotState() === first;
    }),
    true,
  );

  // Zoom with the wheel over the plot, then drag it: the plot switches to the subset and back.
  const box = (await page.locator("#scatter").boundingBox())!;
  const [cx, cy] = [box.x + box.width / 2, box.y + box.height / 2];
  await page.mouse.move(cx, cy);
  for (let k = 0; k < 5; k++) await page.mouse.wheel(0, -120);
  await page.waitForFunction(
    () =>
      (window as unknown as { __viewer: { plotState(): PlotState } }).__viewer.plotState().subsetFrames > 0,
  );
  let p = await plotState(page);
  assert.ok(p.swaps >= 1, JSON.stringify(p));
  // 200 sampled cells, and the 3 selected ones drawn over them (the overlay) while moving.
  assert.equal(p.subsetCells, 200, JSON.stringify(p));
  assert.equal(p.subsetSelected, 3);
  await plotSettled(page);
  const swaps = (await plotState(page)).swaps;
  await page.mouse.down();
  for (let k = 1; k <= 5; k++) await page.mouse.move(cx + 10 * k, cy + 5 * k);
  await page.mouse.up();
  await page.waitForFunction(
    (n) => (window as unknown as { __viewer: { plotState(): PlotState } }).__viewer.plotState().swaps > n,
    swaps,
  );

  // Still again: every cell drawn, coloured by CD74's counts over its stored maximum (the values the
  // plot itself holds, against the tiles), and the same three cells selected.
  await plotSettled(page);
  p = await plotState(page, true);
  assert.equal(p.subset, false);
  assert.equal(p.drawn, 700);
  assert.deepEqual(
    [...p.selected].sort((a, b) => a - b),
    [5, 123, 400],
  );
  assert.deepEqual((await snapshot(page)).selection, [5, 123, 400]);
  const ds = await openDataset(pbmc);
  const j = (await ds.geneNames())!.indexOf("CD74");
  const rows = await ds.cells(0, ds.nCells);
  const counts = new Float64Array(ds.nCells);
  for (let c = 0; c < ds.nCells; c++)
    for (let k = rows.indptr[c]!; k < rows.indptr[c + 1]!; k++)
      if (rows.indices[k] === j) counts[c] = Number(rows.data[k]);
  const max = Math.max(...counts);
  assert.equal(p.colorBy, "valueW"); // the page's valueB
  assert.deepEqual(
    p.values,
    Array.from(counts, (v) => Math.fround(Math.min(1, v * (1 / max)))),
  );

  // Hover in the moved view names the cell under the pointer: one with no other cell near it. Its
  // ring is drawn where the page maps the cell (scatter.ts's copy of regl-scatterplot's transform,
  // which picking uses too): where the plot itself draws it, for a few cells.
  const isolated = await page.evaluate(
    ({ w, h }) => {
      const v = (window as unknown as W).__viewer;
      const at = Array.from({ length: 700 }, (_, i) => v.screenPosition(i)!);
      return [...at.keys()].filter((i) => {
        const [x, y] = at[i]!;
        return (
          x > 20 &&
          y > 20 &&
          x < w - 20 &&
          y < h - 20 &&
          at.every(([x2, y2], k) => k === i || Math.hypot(x2 - x, y2 - y) > 12)
        );
      });
    },
    { w: box.width, h: box.height },
  );
  assert.ok(isolated.length > 0, "an isolated cell in view");
  for (const c of [...isolated.slice(1, 3), isolated[0]!]) {
    const [hx, hy] = await screenAt(page, c);
    await page.mouse.move(box.x + hx, box.y + hy);
    await page.waitForFunction((i) => (window as unknown as W).__viewer.state.hovered === i, c);
    await assertRingOn(page, c);
  }
  const target = isolated[0]!;

  // Zoomed in far about that cell, points are drawn larger: the pointer just inside the edge of
  // its drawn point (read from the plot's pixels) hovers it, beyond the 9 px a fixed radius reached.
  let edge = 0;
  for (let k = 0; k < 40 && edge < 13; k++) {
    const [tx, ty] = await screenAt(page, target);
    await page.mouse.move(box.x + tx, box.y + ty);
    await page.mouse.wheel(0, -120);
    await plotSettled(page);
    edge = await page.evaluate((c) => {
      const [x, y] = (window as unknown as W).__viewer.screenPosition(c)!.map(Math.round) as [number, number];
      const canvas = document.getElementById("scatter") as HTMLCanvasElement;
      const row = canvas.getContext("2d")!.getImageData(x, y, 100, 1).data;
      // The first pixel to the right that is background (white, or off the canvas), not ink. No
      // inner functions here: tsx would name them through a helper the page does not have.
      let e = 0;
      while (e < 100 && row[4 * e + 3]! > 0 && Math.min(row[4 * e]!, row[4 * e + 1]!, row[4 * e + 2]!) < 235)
        e++;
      return e;
    }, target);
  }
  assert.ok(edge >= 13, `the cell's point is drawn ${edge} px to the right of its centre`);
  const [zx, zy] = await screenAt(page, target);
  const others = await page.evaluate(
    ({ c, zx, zy }) => {
      const v = (window as unknown as W).__viewer;
      let near = Infinity;
      for (let i = 0; i < 700; i++)
        if (i !== c)
          near = Math.min(near, Math.hypot(...v.screenPosition(i)!.map((p, k) => p - [zx, zy][k]!)));
      return near;
    },
    { c: target, zx, zy },
  );
  assert.ok(others > 2 * edge, `the nearest other cell is ${others} px away`);
  await page.mouse.move(box.x + 1, box.y + 1);
  await page.waitForFunction(() => (window as unknown as W).__viewer.state.hovered === undefined);
  await page.mouse.move(box.x + Math.round(zx) + edge - 1, box.y + zy);
  await page.waitForFunction((c) => (window as unknown as W).__viewer.state.hovered === c, target);
  await assertRingOn(page, target);
  assert.deepEqual(errors, []);
  await page.close();
});

test("while only the first subset is drawn, a click and a lasso select among all cells and a colouring shows on the subset, then on every cell", async () => {
  // `lod=200`: the 700 cells are first drawn as 200; every cell waits for the test's release (5,000,000
  // cells without a GPU took 20-30 s there, the plot ignoring clicks and lassos meanwhile).
  const { page, errors } = await openViewer("/pbmc68k/", "&lod=200", () => {
    const w = window as unknown as { __viewerDrawAllAfter: Promise<void>; __drawAll: () => void };
    w.__viewerDrawAllAfter = new Promise((resolve) => (w.__drawAll = resolve));
  });
  type W = {
    __viewer: {
      searchGene(g: string): Promise<void>;
      screenPosition(i: number): [number, number] | undefined;
      plotState(full?: boolean): PlotState;
      state: { selection: number[]; busy: number };
    };
  };
  // Positions hold: the page done with its actions, the plot at its box's size.
  await idle(page);
  await page.waitForFunction(() => (window as unknown as W).__viewer.plotState().placed);
  let p = await plotState(page, true);
  assert.equal(p.preview, true, JSON.stringify({ ...p, previewCells: p.previewCells.length }));
  assert.equal(p.drawn, 200);
  const subset = new Set(p.previewCells);
  assert.equal(subset.size, 200);
  assert.match((await page.locator(".plot-note").textContent())!, /select among all of them/);
  // Where every cell is drawn once drawn (the page's map of the plot's camera, as picking uses),
  // once the plot's box and camera have settled: on a loaded machine the page's layout can still
  // move the plot after it is placed, and a click aimed before that misses by hundreds of pixels.
  const where = async () => ({
    box: (await page.locator("#scatter").boundingBox())!,
    at: await page.evaluate(() =>
      Array.from({ length: 700 }, (_, i) => (window as unknown as W).__viewer.screenPosition(i)!),
    ),
  });
  let settled = await where();
  for (let same = 0, tries = 0; same < 3 && tries < 60; tries++) {
    await new Promise((r) => setTimeout(r, 250));
    const next = await where();
    same = JSON.stringify(next) === JSON.stringify(settled) ? same + 1 : 0;
    settled = next;
  }
  const { box, at } = settled;

  // A click on a cell that is not drawn yet, with no other cell within 12 px: that cell.
  const lone = [...at.keys()].filter(
    (i) =>
      !subset.has(i) &&
      at[i]![0] > 20 &&
      at[i]![1] > 20 &&
      at[i]![0] < box.width - 20 &&
      at[i]![1] < box.height - 20 &&
      at.every(([x, y], k) => k === i || Math.hypot(x - at[i]![0], y - at[i]![1]) > 12),
  );
  assert.ok(lone.length > 0, "a cell outside the subset with none near it");
  const clicked = lone[0]!;
  await page.mouse.click(box.x + at[clicked]![0], box.y + at[clicked]![1]);
  await page
    .waitForFunction(
      (c) => JSON.stringify((window as unknown as W).__viewer.state.selection) === JSON.stringify([c]),
      clicked,
      { timeout: 30_000 },
    )
    .catch(async (err) => {
      const now = await page.evaluate(
        (c) => [
          (window as unknown as W).__viewer.screenPosition(c),
          (window as unknown as W).__viewer.state.selection,
        ],
        clicked,
      );
      throw new Error(
        `the click on cell ${clicked} at ${at[clicked]} selected ${JSON.stringify(now[1])} (the cell is at ${now[0]} now)`,
        { cause: err },
      );
    });

  // A shift-drag square of 100 px around the plot's densest spot: the cells inside it among all
  // 700 (computed here from their positions), not only those drawn.
  const side = 100;
  let best = [0, 0, -1];
  for (let gx = 60; gx < box.width - 60; gx += 20)
    for (let gy = 60; gy < box.height - 60; gy += 20) {
      const k = at.filter(([x, y]) => Math.abs(x - gx) < side / 2 && Math.abs(y - gy) < side / 2).length;
      if (k > best[2]!) best = [gx, gy, k];
    }
  const [x0, y0, x1, y1] = [
    best[0]! - side / 2,
    best[1]! - side / 2,
    best[0]! + side / 2,
    best[1]! + side / 2,
  ];
  await lassoSquare(page, box, x0, y0, x1, y1);
  const lassoed = (await snapshot(page)).selection;
  // Inside by more than the lasso's smoothing (3 px): selected; outside by more: not.
  const inside = (c: number, m: number) =>
    at[c]![0] > x0 + m && at[c]![0] < x1 - m && at[c]![1] > y0 + m && at[c]![1] < y1 - m;
  const sure = [...at.keys()].filter((c) => inside(c, 3));
  const chosen = new Set(lassoed);
  assert.deepEqual(
    sure.filter((c) => !chosen.has(c)),
    [],
    "every cell well inside the square is selected",
  );
  assert.deepEqual(
    lassoed.filter((c) => !inside(c, -3)),
    [],
    "no cell well outside it is",
  );
  assert.ok(
    lassoed.filter((c) => !subset.has(c)).length > lassoed.filter((c) => subset.has(c)).length,
    `most of the ${lassoed.length} cells lassoed are not drawn yet`,
  );

  // A gene now: on the subset at once (the plot's values are CD74's counts over its maximum at the
  // subset's cells), every cell still held back.
  await page.evaluate(() => (window as unknown as W).__viewer.searchGene("CD74"));
  const ds = await openDataset(pbmc);
  const j = (await ds.geneNames())!.indexOf("CD74");
  const rows = await ds.cells(0, ds.nCells);
  const counts = new Float64Array(ds.nCells);
  for (let c = 0; c < ds.nCells; c++)
    for (let k = rows.indptr[c]!; k < rows.indptr[c + 1]!; k++)
      if (rows.indices[k] === j) counts[c] = Number(rows.data[k]);
  const max = Math.max(...counts);
  const scaled = Array.from(counts, (v) => Math.fround(Math.min(1, v * (1 / max))));
  p = await plotState(page, true);
  assert.equal(p.preview, true);
  assert.equal(p.colorBy, "valueW");
  assert.deepEqual(
    p.values,
    p.previewCells.map((c) => scaled[c]!),
  );

  // Released: every cell, coloured by CD74, the selection kept; the note gone.
  await page.evaluate(() => (window as unknown as { __drawAll(): void }).__drawAll());
  await plotSettled(page);
  p = await plotState(page, true);
  assert.equal(p.preview, false);
  assert.equal(p.drawn, 700);
  assert.equal(p.colorBy, "valueW");
  assert.deepEqual(p.values, scaled);
  assert.deepEqual(
    [...p.selected].sort((a, b) => a - b),
    [...lassoed].sort((a, b) => a - b),
  );
  assert.equal(await page.locator(".plot-note").count(), 0);
  assert.deepEqual(errors, []);
  await page.close();
});

test("a dataset without an embedding falls back to the histogram and tables", async () => {
  const { page, errors } = await openViewer("/chr21/");
  assert.equal(await page.locator("#no-embedding").isVisible(), true);
  const ds = await openDataset(join(root, "chr21"));
  const name = (await ds.geneNames())![0]!;
  await page.evaluate(
    (n) =>
      (window as unknown as { __viewer: { searchGene(n: string): Promise<void> } }).__viewer.searchGene(n),
    name,
  );
  const s = await snapshot(page);
  assert.equal(s.error, undefined);
  assert.equal(s.gene!.name, name);
  assert.ok(s.gene!.nonzero > 0);
  const hist = await inkOf(page, await page.locator("#histogram").screenshot());
  assert.ok(hist.ink > 100, JSON.stringify(hist));
  assert.deepEqual(errors, []);
  await page.close();
});

test("without an embedding, a category column is a table of cells, cells expressing and mean", async () => {
  const { page, errors } = await openViewer("/no-umap/");
  assert.equal(await page.locator("#no-embedding").isVisible(), true);
  assert.equal(await page.locator("#scatter-wrap").isVisible(), false);
  const ds = await openDataset(join(root, "no-umap"));
  const names = (await ds.geneNames())!;
  const rows = await ds.cells(0, ds.nCells);
  const j = names.indexOf("CD74");
  const counts = Array.from({ length: ds.nCells }, (_, c) => {
    for (let k = rows.indptr[c]!; k < rows.indptr[c + 1]!; k++)
      if (rows.indices[k] === j) return Number(rows.data[k]);
    return 0;
  });
  const obs = (await sourceObs(NO_EMBEDDING)).columns.find((c) => c.name === "bulk_labels")!;
  assert.equal(obs.kind, "category");
  if (obs.kind !== "category") return;
  type W = { __viewer: { colourBy(n: string): Promise<void>; searchGene(n: string): Promise<void> } };
  // The column first, then the gene: the table follows the gene.
  await page.evaluate(() => (window as unknown as W).__viewer.colourBy("bulk_labels"));
  let s = await snapshot(page);
  assert.deepEqual(
    s.table.map((r) => [r.label, r.cells]),
    obs.categories.map((label, k) => [label, obs.codes.filter((c) => c === k).length]),
  );
  await page.evaluate(() => (window as unknown as W).__viewer.searchGene("CD74"));
  s = await snapshot(page);
  assert.equal(s.error, undefined);
  const expected = obs.categories.map((label, k) => {
    const cells = [...obs.codes.keys()].filter((c) => obs.codes[c] === k);
    const sum = cells.reduce((a, c) => a + counts[c]!, 0);
    return {
      label,
      cells: cells.length,
      expressing: cells.filter((c) => counts[c]! > 0).length,
      mean: sum / Math.max(1, cells.length),
    };
  });
  assert.ok(expected.some((r) => r.expressing > 0));
  assert.deepEqual(s.table, expected);
  assert.equal(await page.locator("#table tbody tr").count(), obs.categories.length);
  // The first row as shown (the mean to the 3 significant digits the page prints).
  const first = expected[0]!;
  const shown = await page.locator("#table tbody tr").first().locator("td").allTextContents();
  assert.deepEqual(shown.slice(0, 3), [
    first.label,
    String(first.cells),
    `${((100 * first.expressing) / first.cells).toFixed(1)}%`,
  ]);
  assert.equal(Number(shown[3]), Number(first.mean.toPrecision(3)));
  // The histogram of CD74's nonzero counts is drawn.
  const hist = await inkOf(page, await page.locator("#histogram").screenshot());
  assert.ok(hist.ink > 100, JSON.stringify(hist));
  assert.deepEqual(errors, []);
  await page.close();
});

test("without a companion a gene is read from the tiles, once, and says so", async () => {
  const { page, errors } = await openViewer("/chr21-plain/");
  assert.match(
    (await page.locator("#dataset-info").textContent())!,
    /no sporadik companion: a gene reads every tile once/,
  );
  const ds = await openDataset(join(root, "chr21-plain"));
  const names = (await ds.geneNames())!;
  const rows = await ds.cells(0, ds.nCells);
  type W = { __viewer: { searchGene(n: string): Promise<void> } };
  for (const j of [0, 7, names.length - 1]) {
    await page.evaluate((n) => (window as unknown as W).__viewer.searchGene(n), names[j]!);
    const s = await snapshot(page);
    assert.equal(s.error, undefined);
    const expected = Array.from({ length: ds.nCells }, (_, c) => {
      for (let k = rows.indptr[c]!; k < rows.indptr[c + 1]!; k++)
        if (rows.indices[k] === j) return Number(rows.data[k]);
      return 0;
    });
    assert.deepEqual(s.gene!.values, expected, names[j]);
  }
  // The tiles were read for the first gene only.
  const genes = (await snapshot(page)).history.filter((h) => h.action.startsWith("gene "));
  assert.equal(genes[0]!.requests, ds.manifest.tile_cells.length);
  assert.deepEqual(
    genes.slice(1).map((h) => h.requests),
    [0, 0],
  );
  assert.deepEqual(errors, []);
  await page.close();
});

const refusals: [string, () => string, RegExp][] = [
  [
    "a URL that is not a dataset",
    () => "/nothing-here/",
    /is not a deltacells dataset: it has no manifest\.json/,
  ],
  ["a torn companion", () => "/torn/", /sporadik store of .* is torn/],
  [
    "a manifest naming a companion outside the dataset",
    () => "/escaping/",
    /metadata\.sporadik must be a relative path inside the dataset/,
  ],
  ["a server without CORS", () => `${plain.url}/pbmc68k/`, /does not allow cross-origin reads \(CORS/],
  ["a 403", () => `${plain.url}/forbidden/pbmc68k/`, /Access denied \(HTTP 403\)/],
  ["a URL the page cannot read", () => "ftp://example.org/x/", /not a URL this page can read/],
];
for (const [what, data, message] of refusals) {
  test(`${what}: a clear message in the page`, async () => {
    const { page, errors } = await openViewer(data());
    const s = await snapshot(page);
    assert.match(s.error ?? "", message);
    assert.equal(await page.locator("#message").isVisible(), true);
    assert.match((await page.locator("#message").textContent())!, message);
    assert.deepEqual(errors, []);
    await page.close();
  });
}

test("the companion convert --sporadik writes is checksummed, reads in the page, and a chunk failing its checksum is refused there naming it", async () => {
  const meta = JSON.parse(readFileSync(join(pbmc, "sporadik/layouts/axis1/data/zarr.json"), "utf8"));
  assert.deepEqual(meta.codecs[1], { name: "zstd", configuration: { level: 0, checksum: true } });
  // The pbmc68k test above reads genes from this companion; its damaged copy:
  const { page, errors } = await openViewer("/bad-checksum/");
  type W = { __viewer: { searchGene(n: string): Promise<void> } };
  await page.evaluate(() => (window as unknown as W).__viewer.searchGene("CD74"));
  const s = await snapshot(page);
  assert.match(s.error ?? "", /is damaged: \/layouts\/axis1\/data\/c\/\d+ fails its zstd content checksum/);
  assert.equal(s.gene?.name === "CD74" && s.gene.values.some((v) => v > 0), false, "no values shown");
  assert.match((await page.locator("#message").textContent())!, /fails its zstd content checksum/);
  assert.deepEqual(errors, []);
  await page.close();
});

test("a read that hangs shows its progress and Cancel aborts its requests", async () => {
  const { page, errors } = await openViewer(`${plain.url}/slow/pbmc68k/`);
  assert.equal((await snapshot(page)).error, undefined);
  const seen = plain.requests.length;
  void page.evaluate(() => {
    void (window as unknown as { __viewer: { searchGene(n: string): Promise<void> } }).__viewer.searchGene(
      "CD74",
    );
  });
  // The gene's counts (the layout's data and indices) never come. Cancel once the server holds
  // them: before that the page may still be in its first wave (the layout's offsets, which answer,
  // slowly on a loaded machine), and a Cancel then leaves nothing hanging to abort.
  const hung = () =>
    plain.requests.slice(seen).filter((r) => /layouts\/axis1\/(data|indices)\/c\//.test(r.path));
  for (let i = 0; i < 600 && hung().length === 0; i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(hung().length > 0, "the page asked for the gene's counts");
  await page.locator("#cancel").waitFor({ state: "visible" });
  await page.waitForFunction(() =>
    /in flight/.test(document.getElementById("status-text")!.textContent ?? ""),
  );
  assert.match(
    (await page.locator("#status-text").textContent())!,
    /gene CD74… \d+ requests? \([1-9]\d* in flight\)/,
  );
  await page.locator("#cancel").click();
  await idle(page);
  const s = await snapshot(page);
  assert.equal(s.history.at(-1)!.action, "gene CD74");
  assert.equal(s.history.at(-1)!.outcome, "cancelled");
  assert.equal(s.gene, undefined);
  assert.match((await page.locator("#status-text").textContent())!, /gene CD74 cancelled after/);
  // The server saw the hanging requests closed by the page. Each hung request's abort reaches the
  // server on its own schedule: wait for all of them.
  for (let i = 0; i < 100 && !(hung().length > 0 && hung().every((r) => r.aborted)); i++)
    await new Promise((r) => setTimeout(r, 100));
  assert.ok(hung().length > 0 && hung().every((r) => r.aborted), JSON.stringify(hung()));
  assert.deepEqual(errors, []);
  await page.close();
});

test("a dataset of many tiles opens with at most 12 requests pending per store, 24 in the page (Chromium refuses thousands at once)", async () => {
  const page = await chromium.browser.newPage({ viewport: { width: 1200, height: 760 } });
  page.setDefaultTimeout(120_000);
  // The page's fetches, counted as they start and settle.
  await page.addInitScript(() => {
    const w = window as unknown as { __fetches: { now: number; most: number; total: number } };
    w.__fetches = { now: 0, most: 0, total: 0 };
    const original = window.fetch.bind(window);
    window.fetch = async (...args: Parameters<typeof fetch>) => {
      const f = w.__fetches;
      f.now++;
      f.total++;
      f.most = Math.max(f.most, f.now);
      try {
        return await original(...args);
      } finally {
        f.now--;
      }
    };
  });
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${server.url}?data=/pbmc-small-tiles/`);
  await page.waitForFunction(
    () => (window as unknown as { __viewer?: { state: { ready: boolean } } }).__viewer?.state.ready,
  );
  const s = await snapshot(page);
  assert.equal(s.error, undefined);
  assert.equal(s.embedding, "X_umap");
  const f = await page.evaluate(
    () => (window as unknown as { __fetches: { most: number; total: number } }).__fetches,
  );
  // More requests than the page may have in flight (the embedding's chunks are merged into a few
  // reads, the other columns and the companion's are not), so the cap is what held them back.
  assert.ok(f.total > 24, `${f.total} requests`);
  assert.ok(f.most <= 24, `${f.most} requests at once`);
  assert.deepEqual(errors, []);
  await page.close();
});

/**
 * A shift-drag lasso around the square (x0, y0)-(x1, y1) of the plot's box, until the page has a
 * selection. The lasso samples the pointer at most every 10 ms, and a release where the press was
 * counts as a click: the path is walked slowly and ends short of its start.
 */
async function lassoSquare(
  page: Page,
  box: { x: number; y: number },
  x0: number,
  y0: number,
  x1: number,
  y1: number,
): Promise<void> {
  await page.keyboard.down("Shift");
  await page.mouse.move(box.x + x0, box.y + y0);
  await page.mouse.down();
  let [px, py] = [x0, y0];
  for (const [x, y] of [
    [x1, y0],
    [x1, y1],
    [x0, y1],
    [x0, y0 + 12],
  ] as const) {
    for (let k = 1; k <= 8; k++) {
      await page.mouse.move(box.x + px + ((x - px) * k) / 8, box.y + py + ((y - py) * k) / 8);
      await page.waitForTimeout(20);
    }
    [px, py] = [x, y];
  }
  await page.mouse.up();
  await page.keyboard.up("Shift");
  await page.waitForFunction(
    () =>
      (window as unknown as { __viewer: { state: { selection: number[] } } }).__viewer.state.selection
        .length > 1,
  );
}
