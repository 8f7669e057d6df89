/**
 * The page's marker genes and dot plots, computed in Chromium from the companion and the
 * statistics, against scanpy's own (`rank_genes_groups(method="t-test", pts=True)` and
 * `pl.dotplot` on `log1p(normalize_total(target_sum=1e4))`, conformance/scanpy_markers.py), on
 * the pbmc68k demo and on a synthetic dataset of 3,000 cells in 6 clusters: a selection of cells
 * against the rest, a category against the rest and against another category. The same top genes,
 * scores and fold changes within float32 tolerance (scanpy normalises in float32), p-values and
 * adjusted p-values to the precision the scores give them, the fractions exactly.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { openDataset } from "@deltacells/core";
import { FolderStore } from "@deltacells/storage/node";
import type { Page } from "playwright-core";
import { type RunningServer, startServer } from "../../../packages/cli/src/serve/http.js";
import type { RunningBrowser } from "../../../test-utils/browser/browser.js";
import { launchChromium } from "../../../test-utils/browser/index.js";
import type { MarkerRow } from "../src/panels/markers.js";
import { buildPbmc, buildViewer, deltacells, PBMC, REPO } from "./fixtures.js";
import { idle, openViewer, snapshot, sourceCategory } from "./viewer-page.js";

const PYTHON = join(REPO, "conformance/.venv/bin/python");
const SCRIPT = join(REPO, "conformance/scanpy_markers.py");

let root: string;
let synthetic: string;
let server: RunningServer;
let chromium: RunningBrowser;

function python(args: string[], input?: string): Promise<string> {
  return new Promise((ok, fail) => {
    const child = spawn(PYTHON, [SCRIPT, ...args], { cwd: REPO });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("error", fail);
    child.on("close", (code) =>
      code === 0 ? ok(out) : fail(new Error(`scanpy_markers.py ${args[0]} failed (${code}): ${err}`)),
    );
    child.stdin.end(input ?? "");
  });
}

before(async () => {
  root = mkdtempSync(join(tmpdir(), "deltacells-scanpy-"));
  synthetic = join(root, "synthetic.h5ad");
  await Promise.all([
    buildViewer(join(root, "viewer-dist")),
    buildPbmc(root),
    deltacells(
      "convert",
      PBMC,
      join(root, "pbmc68k-rows"),
      "--sporadik",
      "--sporadik-rows",
      "--quiet",
      "--threads",
      "1",
    ),
    launchChromium().then((c) => (chromium = c)),
    python(["synthetic", synthetic]).then(() =>
      deltacells(
        "convert",
        synthetic,
        join(root, "synthetic"),
        "--sporadik",
        "--no-sporadik-rows",
        "--quiet",
        "--threads",
        "1",
      ),
    ),
  ]);
  server = await startServer({ root, viewerDir: join(root, "viewer-dist"), port: 0 });
});

after(async () => {
  await chromium?.close();
  await server?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

interface ScanpyMarkers {
  names: string[];
  scores: number[];
  pvals: number[];
  pvals_adj: number[];
  logfoldchanges: number[];
  pts: number[];
  pts_rest?: number[];
}
interface ScanpyDot {
  categories: string[];
  mean: number[][];
  fraction: number[][];
}

type V = { __viewer: Record<string, (...args: never[]) => unknown> };
const call = (page: Page, name: string, ...args: unknown[]) =>
  page.evaluate(
    ([n, a]) =>
      ((window as unknown as V).__viewer[n as string] as (...x: unknown[]) => unknown)(...(a as unknown[])),
    [name, args] as const,
  );

async function markersOf(page: Page): Promise<MarkerRow[]> {
  await page.waitForFunction(
    () => (window as unknown as { __viewer: { state: { markers?: unknown } } }).__viewer.state.markers,
  );
  await idle(page);
  return ((await snapshot(page)) as unknown as { markers: { rows: MarkerRow[] } }).markers.rows;
}

/** p-values agree to what scores within float32 tolerance allow: d ln p ≈ t·dt, both tiny alike. */
function pClose(a: number, b: number, t: number): boolean {
  if (a === b || (a < 1e-290 && b < 1e-290)) return true;
  const allowed = 1e-4 + 1e-5 * t * t;
  return Math.abs(Math.log(a) - Math.log(b)) <= allowed;
}

/** The page's ranked rows against scanpy's: the same genes in the same order (ties aside), the same statistics. */
function assertSameTable(rows: MarkerRow[], sc: ScanpyMarkers, what: string, reference: boolean): void {
  const n = 50;
  const scanpyAt = new Map(sc.names.map((g, i) => [g, i]));
  for (let i = 0; i < n; i++) {
    const r = rows[i]!;
    const k = scanpyAt.get(r.gene)!;
    // Same rank, or a swap with a gene scored the same to float32 precision.
    if (sc.names[i] !== r.gene)
      assert.ok(
        Math.abs(sc.scores[i]! - sc.scores[k]!) <= 1e-4 * Math.max(1, Math.abs(sc.scores[k]!)),
        `${what}: rank ${i} is ${r.gene} here, ${sc.names[i]} in scanpy (scores ${sc.scores[k]} and ${sc.scores[i]})`,
      );
    const near = (a: number, b: number, tol: number) => Math.abs(a - b) <= tol * Math.max(1, Math.abs(b));
    assert.ok(near(r.score, sc.scores[k]!, 1e-4), `${what} ${r.gene} score: ${r.score} vs ${sc.scores[k]}`);
    assert.ok(
      near(r.logFoldChange, sc.logfoldchanges[k]!, 1e-4),
      `${what} ${r.gene} log fold change: ${r.logFoldChange} vs ${sc.logfoldchanges[k]}`,
    );
    assert.ok(pClose(r.pval, sc.pvals[k]!, r.score), `${what} ${r.gene} p: ${r.pval} vs ${sc.pvals[k]}`);
    assert.ok(
      pClose(r.pvalAdj, sc.pvals_adj[k]!, r.score),
      `${what} ${r.gene} adjusted p: ${r.pvalAdj} vs ${sc.pvals_adj[k]}`,
    );
    assert.ok(near(r.pts, sc.pts[k]!, 1e-12), `${what} ${r.gene} pts: ${r.pts} vs ${sc.pts[k]}`);
    if (!reference) assert.ok(near(r.ptsRest, sc.pts_rest![k]!, 1e-12), `${what} ${r.gene} pts_rest`);
  }
}

async function compare(opts: {
  data: string;
  h5ad: string;
  column: string;
  group: string;
  reference: string;
  cells: number[];
  genes: string[];
  /** Where the selection's rows must be read from (default the companion). */
  read?: string;
}): Promise<void> {
  const obs = await sourceCategory(opts.h5ad, opts.column);
  const [selection, category, versus, dot] = JSON.parse(
    await python(
      ["answer"],
      JSON.stringify({
        h5ad: opts.h5ad,
        requests: [
          { kind: "markers", cells: opts.cells },
          { kind: "markers", column: opts.column, group: opts.group },
          { kind: "markers", column: opts.column, group: opts.group, reference: opts.reference },
          { kind: "dotplot", column: opts.column, genes: opts.genes },
        ],
      }),
    ),
  ) as [ScanpyMarkers, ScanpyMarkers, ScanpyMarkers, ScanpyDot];
  const { page, errors } = await openViewer(chromium.browser, server.url, opts.data);
  if (opts.read === "rows in embedding order") {
    // The order is computed once the plot is drawn, off the open's path.
    await page.waitForFunction(
      () =>
        (window as unknown as { __viewer: { state: { rowsOrderMs?: number } } }).__viewer.state.rowsOrderMs,
    );
  }
  await call(page, "select", opts.cells);
  assertSameTable(await markersOf(page), selection, `${opts.data} selection of ${opts.cells.length}`, false);
  const state = (await snapshot(page)) as unknown as { selectionRead: string; rowsProblem?: string };
  assert.equal(state.rowsProblem, undefined);
  assert.equal(state.selectionRead, opts.read ?? "companion");
  await call(page, "colourBy", opts.column);
  await call(page, "selectCategories", [obs.categories.indexOf(opts.group)]);
  assertSameTable(await markersOf(page), category, `${opts.data} ${opts.group} against the rest`, false);
  await call(page, "setReference", obs.categories.indexOf(opts.reference));
  assertSameTable(
    await markersOf(page),
    versus,
    `${opts.data} ${opts.group} against ${opts.reference}`,
    true,
  );
  await call(page, "dotPlot", opts.genes);
  await idle(page);
  const mine = ((await snapshot(page)) as unknown as { dotplot: ScanpyDot }).dotplot;
  assert.deepEqual(
    mine.categories,
    dot.categories.filter((c) => mine.categories.includes(c)),
  );
  mine.categories.forEach((label, i) => {
    const k = dot.categories.indexOf(label);
    opts.genes.forEach((g, j) => {
      const [a, b] = [mine.mean[i]![j]!, dot.mean[k]![j]!];
      assert.ok(Math.abs(a - b) <= 1e-5 * Math.max(1, b), `dot plot ${g} in ${label}: mean ${a} vs ${b}`);
      assert.ok(
        Math.abs(mine.fraction[i]![j]! - dot.fraction[k]![j]!) <= 1e-12,
        `dot plot ${g} in ${label}: fraction`,
      );
    });
  });
  assert.deepEqual(errors, []);
  await page.close();
}

test("pbmc68k: the page's markers (a selection, a cell type against the rest and against another) and dot plot are scanpy's", async () => {
  // A lasso's worth of cells: every fourth B cell and every tenth other cell.
  const obs = await sourceCategory(PBMC, "bulk_labels");
  const b = obs.categories.indexOf("CD19+ B");
  const cells = [...obs.codes.keys()].filter((c) => (obs.codes[c] === b ? c % 4 === 0 : c % 10 === 0));
  await compare({
    data: "/pbmc68k/",
    h5ad: PBMC,
    column: "bulk_labels",
    group: "CD14+ Monocyte",
    reference: "Dendritic",
    cells,
    genes: ["CD74", "LYZ", "CST3", "NKG7", "MS4A1", "GNLY", "FCGR3A"],
  });
});

test("pbmc68k with its rows in embedding order: a lasso's markers, read there, are scanpy's", async () => {
  // A lasso: the 300 cells nearest a B cell in the UMAP, scattered through the dataset's order.
  const ds = await openDataset(new FolderStore(join(root, "pbmc68k-rows")));
  const frame = await ds.obs(["X_umap_0", "X_umap_1"]);
  const [x, y] = ["X_umap_0", "X_umap_1"].map((name) => {
    const column = frame.columns.find((c) => c.name === name)!;
    const values: number[] = [];
    for (let t = 0; t < column.table.batches.length; t++)
      values.push(...(column.tile(t).toArray() as Float32Array));
    return values;
  }) as [number[], number[]];
  const obs = await sourceCategory(PBMC, "bulk_labels");
  const b = obs.codes.indexOf(obs.categories.indexOf("CD19+ B"));
  const near = Array.from({ length: ds.nCells }, (_, c) => c).sort(
    (p, q) => Math.hypot(x[p]! - x[b]!, y[p]! - y[b]!) - Math.hypot(x[q]! - x[b]!, y[q]! - y[b]!),
  );
  const cells = near.slice(0, 300).sort((p, q) => p - q);
  await compare({
    data: "/pbmc68k-rows/",
    h5ad: PBMC,
    column: "bulk_labels",
    group: "CD14+ Monocyte",
    reference: "Dendritic",
    cells,
    genes: ["CD74", "LYZ", "CST3", "NKG7", "MS4A1", "GNLY", "FCGR3A"],
    read: "rows in embedding order",
  });
});

test("rows in embedding order whose digest is not the dataset's embedding's are not used: the page says why and reads the companion", async () => {
  const copy = join(root, "pbmc68k-other-rows");
  cpSync(join(root, "pbmc68k-rows"), copy, { recursive: true });
  const manifest = JSON.parse(readFileSync(join(copy, "manifest.json"), "utf8"));
  manifest.metadata.sporadik_rows.digest = "00000000";
  writeFileSync(join(copy, "manifest.json"), `${JSON.stringify(manifest)}\n`);
  const { page, errors } = await openViewer(chromium.browser, server.url, "/pbmc68k-other-rows/");
  await page.waitForFunction(
    () => (window as unknown as { __viewer: { state: { rowsProblem?: string } } }).__viewer.state.rowsProblem,
  );
  await call(page, "select", [1, 2, 3, 50, 400]);
  await markersOf(page);
  const state = (await snapshot(page)) as unknown as { selectionRead: string; rowsProblem: string };
  assert.match(state.rowsProblem, /ordered by other coordinates than this dataset's X_umap_0\/X_umap_1/);
  assert.equal(state.selectionRead, "companion");
  assert.deepEqual(errors, []);
  await page.close();
});

test("a synthetic dataset of 6 clusters: the page's markers and dot plot are scanpy's", async () => {
  await compare({
    data: "/synthetic/",
    h5ad: synthetic,
    column: "cluster",
    group: "cluster 2",
    reference: "cluster 4",
    cells: Array.from({ length: 3000 }, (_, i) => i).filter((i) => i % 13 === 0 || i % 17 === 0),
    genes: ["G000", "G013", "G030", "G050", "G299"],
  });
});
