/**
 * The viewer's two user-facing latencies in headless Chromium over `deltacells serve` on 127.0.0.1:
 * opening the page to the first drawn embedding, and choosing a gene to its colours on the plot.
 * Datasets: the pbmc68k demo (700 cells, real UMAP and cell types) and a synthetic one
 * (--cells, default 200,000; 2,000 genes, ~50 per cell; clustered 2-D coordinates as the UMAP).
 *
 * References measured in the same run and the same page: the viewer opened with no dataset (HTML,
 * the JS bundle and WebGL set-up: the floor of "open"), and two sequential fetches of a small object
 * (two round trips: the floor of "one gene in two reads").
 *
 *   node --import tsx --conditions=source bench/viewer.ts [--cells 200000] [--reps 5]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createTilePool, type DatasetSource, writeDataset } from "@deltacells/core";
import { zstdCompressor } from "@deltacells/core/node";
import { FolderStore } from "@deltacells/storage/node";
import { buildPbmc, buildViewer, VIEWER_DIST } from "../apps/viewer/test/fixtures.js";
import { writeCompanion } from "../packages/cli/src/companion.js";
import { ProgressBar } from "../packages/cli/src/progress.js";
import { startServer } from "../packages/cli/src/serve-http.js";
import { launchChromium } from "../test-utils/browser/index.js";
import { mulberry32 } from "../test-utils/prng.js";
import { syntheticSource } from "./synthetic-source.js";

const { values } = parseArgs({
  options: { cells: { type: "string", default: "200000" }, reps: { type: "string", default: "5" } },
});
const nCells = Number(values.cells);
const reps = Number(values.reps);
const root = mkdtempSync(join(tmpdir(), "deltacells-bench-viewer-"));

async function buildSynthetic(): Promise<void> {
  const dir = join(root, "synthetic");
  // 12 Gaussian clusters as the embedding, the cluster as a category: given to the writer as the
  // source's obs and obsm, which it writes as the obs sidecar (`cluster`, `X_umap_0`, `X_umap_1`).
  const rand = mulberry32(7);
  const gauss = () => Math.sqrt(-2 * Math.log(rand() + 1e-300)) * Math.cos(2 * Math.PI * rand());
  const centres = Array.from({ length: 12 }, () => [gauss() * 8, gauss() * 8] as const);
  const umap = new Float32Array(nCells * 2);
  const codes = new Int32Array(nCells);
  for (let i = 0; i < nCells; i++) {
    const k = Math.floor(rand() * 12);
    codes[i] = k;
    umap[2 * i] = centres[k]![0] + gauss();
    umap[2 * i + 1] = centres[k]![1] + gauss();
  }
  const source: DatasetSource = {
    ...syntheticSource({ nCells, nGenes: 2000, genesPerCell: 50 }),
    obs: async () => ({
      indexName: null,
      index: Array.from({ length: nCells }, (_, i) => `cell${i}`),
      columns: [
        {
          name: "cluster",
          kind: "category",
          codes,
          categories: centres.map((_, k) => `c${k}`),
          ordered: false,
        },
      ],
    }),
    obsmKeys: async () => ["X_umap"],
    obsm: async () => ({ X_umap: { kind: "dense", shape: [nCells, 2], values: umap } }),
  };
  const pool = createTilePool({ threads: 2 });
  try {
    await writeDataset(source, new FolderStore(dir), {
      encoder: pool,
      compress: zstdCompressor(3),
      level: 3,
      inFlight: 4,
    });
  } finally {
    await pool.close();
  }
  await writeCompanion(dir, 2, new ProgressBar(process.stderr, false));
}

const t0 = performance.now();
await Promise.all([buildViewer(), buildPbmc(root), buildSynthetic()]);
console.error(`datasets built in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const server = await startServer({ root, viewerDir: VIEWER_DIST, port: 0 });
const chromium = await launchChromium();

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

type V = {
  __viewer: {
    state: {
      ready: boolean;
      error?: string;
      busy: number;
      firstDrawMs?: number;
      geneMs?: number;
      draws: number[];
    };
    searchGene(n: string): Promise<void>;
    snapshot(): { history: { action: string; requests: number; waves: number; bytes: number }[] };
  };
};

try {
  const rows: string[] = [];
  for (const [name, genes] of [
    ["pbmc68k", ["CD74", "LYZ", "NKG7", "MS4A1", "FTL"]],
    ["synthetic", ["SYN0", "SYN17", "SYN500", "SYN1234", "SYN1999"]],
  ] as const) {
    const open: number[] = [];
    const blank: number[] = [];
    const gene: number[] = [];
    const floor: number[] = [];
    const frame: number[] = [];
    const zoom: number[] = [];
    let openCost = "";
    let geneCost = "";
    for (let r = 0; r < reps; r++) {
      const page = await chromium.browser.newPage({ viewport: { width: 1200, height: 760 } });
      // Reference: the page with no dataset.
      let t = performance.now();
      await page.goto(server.url);
      await page.waitForFunction(() => (window as unknown as V).__viewer?.state.ready);
      blank.push(performance.now() - t);
      t = performance.now();
      await page.goto(`${server.url}?data=/${name}/`);
      await page.waitForFunction(() => (window as unknown as V).__viewer?.state.ready, null, {
        timeout: 120_000,
      });
      open.push(performance.now() - t);
      for (const g of genes) {
        const ms = await page.evaluate(async (n) => {
          await (window as unknown as V).__viewer.searchGene(n);
          return (window as unknown as V).__viewer.state.geneMs!;
        }, g);
        gene.push(ms);
        floor.push(
          await page.evaluate(async (url) => {
            const s = performance.now();
            await (await fetch(url, { cache: "no-store" })).arrayBuffer();
            await (await fetch(url, { cache: "no-store" })).arrayBuffer();
            return performance.now() - s;
          }, `${server.url}${name}/manifest.json`),
        );
      }
      // Zoom in and out with the wheel over the plot's centre: the plot's redraws while it moves.
      const box = (await page.locator("#scatter").boundingBox())!;
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      const before = await page.evaluate(() => (window as unknown as V).__viewer.state.draws.length);
      const z0 = performance.now();
      for (let i = 0; i < 40; i++) await page.mouse.wheel(0, i < 20 ? -60 : 60);
      await page.waitForTimeout(300);
      const zoomMs = performance.now() - z0 - 300;
      const draws = await page.evaluate(
        (n) => (window as unknown as V).__viewer.state.draws.slice(n),
        before,
      );
      const gaps = draws.slice(1).map((t, i) => t - draws[i]!);
      frame.push(median(gaps));
      zoom.push(zoomMs / 40);
      const h = (await page.evaluate(() => (window as unknown as V).__viewer.snapshot())).history;
      const o = h.filter((x) => x.action === "open" || x.action === "embedding");
      openCost = `${o.reduce((a, x) => a + x.requests, 0)} requests, ${(o.reduce((a, x) => a + x.bytes, 0) / 1024).toFixed(0)} KB`;
      const gs = h.filter((x) => x.action.startsWith("gene "));
      // The first gene reads an indptr chunk the next ones may find in the reader's cache.
      const range = (xs: number[]) =>
        Math.min(...xs) === Math.max(...xs) ? `${xs[0]}` : `${Math.min(...xs)}-${Math.max(...xs)}`;
      geneCost = `${range(gs.map((x) => x.requests))} requests in ${range(gs.map((x) => x.waves))} waves, ${range(gs.map((x) => Math.round(x.bytes / 1024)))} KB`;
      await page.close();
    }
    const f = (x: number) => x.toFixed(0);
    rows.push(
      `| ${name} | ${f(median(open))} | ${f(median(blank))} | ${(median(open) / median(blank)).toFixed(2)}x | ${openCost} | ${f(median(gene))} | ${median(floor).toFixed(1)} | ${(median(gene) / median(floor)).toFixed(1)}x | ${geneCost} | ${median(frame).toFixed(0)} | ${median(zoom).toFixed(0)} |`,
    );
  }
  console.log(
    `cells (synthetic): ${nCells.toLocaleString("en-US")}, reps: ${reps} (medians; gene: ${reps} x 5 genes)\n\n` +
      "| dataset | open to first draw (ms) | blank page (ms) | ratio | open cost | gene to colours (ms) | two round trips (ms) | ratio | gene cost | frame while zooming (ms) | per wheel step (ms) |\n" +
      "|---|--:|--:|--:|---|--:|--:|--:|---|--:|--:|\n" +
      rows.join("\n"),
  );
} finally {
  await chromium.close();
  await server.close();
  rmSync(root, { recursive: true, force: true });
}
