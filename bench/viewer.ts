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
 *   node --import tsx --conditions=source bench/viewer.ts [--cells 200000] [--reps 5] [--data DIR]
 *
 * `--data DIR` keeps the datasets in DIR and reuses them on the next run.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { buildPbmc, buildViewer } from "../apps/viewer/test/fixtures.js";
import { startServer } from "../packages/cli/src/serve/http.js";
import { launchChromium } from "../test-utils/browser/index.js";
import { buildSynthetic } from "./viewer-data.js";

const { values } = parseArgs({
  options: {
    cells: { type: "string", default: "200000" },
    reps: { type: "string", default: "5" },
    data: { type: "string" },
  },
});
const nCells = Number(values.cells);
const reps = Number(values.reps);
const root = values.data ?? mkdtempSync(join(tmpdir(), "deltacells-bench-viewer-"));
mkdirSync(root, { recursive: true });
const synthetic = `synthetic-${nCells}`;

const t0 = performance.now();
await Promise.all([
  buildViewer(join(root, "viewer-dist")),
  existsSync(join(root, "pbmc68k")) ? undefined : buildPbmc(root),
  existsSync(join(root, synthetic)) ? undefined : buildSynthetic(root, nCells, synthetic),
]);
console.error(`datasets built in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const server = await startServer({ root, viewerDir: join(root, "viewer-dist"), port: 0 });
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
    [synthetic, ["SYN0", "SYN17", "SYN500", "SYN1234", "SYN1999"]],
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
    `cells (synthetic): ${nCells.toLocaleString("en-US")}, reps: ${reps} (medians; gene: ${reps} x 5 genes); load average at the end ${loadavg()
      .map((x) => x.toFixed(1))
      .join(" ")}\n\n` +
      "| dataset | open to first draw (ms) | blank page (ms) | ratio | open cost | gene to colours (ms) | two round trips (ms) | ratio | gene cost | frame while zooming (ms) | per wheel step (ms) |\n" +
      "|---|--:|--:|--:|---|--:|--:|--:|---|--:|--:|\n" +
      rows.join("\n"),
  );
} finally {
  await chromium.close();
  await server.close();
  if (!values.data) rmSync(root, { recursive: true, force: true });
}
