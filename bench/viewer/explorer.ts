/**
 * The viewer as an explorer at atlas scale, in headless Chromium: synthetic datasets of --cells
 * cells (default 1,000,000 and 5,000,000; 2,000 genes, ~50 per cell, a UMAP of 12 clusters and 3
 * categorical columns: bench/viewer-data.ts), served by `deltacells serve` and, with --s3, from the
 * local S3 server (moto, public-read, CORS) through the page's own unsigned S3 reads.
 *
 * Per action, its time, requests and bytes (the page's meter), each against a reference measured in
 * the same run: opening to the first drawn embedding against the page opened with no dataset; a
 * gene to its colours against two round trips of a small object (its two waves' floor); the
 * markers of a 10,000-cell lasso (the 10,000 cells nearest a cluster's centre) and a dot plot of 20
 * genes (its column's statistics loaded first, then 20 other genes), against the same floor. The
 * page's memory: the renderer's peak resident set (VmHWM) with every cell drawn, the GPU process's
 * (SwiftShader draws there), and the JS heap, against the blank page's. Where the lasso's time goes
 * comes from the page's own performance measures (from the selection: its rows read, their
 * moments, the markers shown, the next frame painted); the first frame of the embedding (a subset
 * above 40,000 cells) from the page's `firstFrameMs`, the embedding with its colouring
 * (`firstDrawMs`, on the subset above 40,000 cells) and every cell drawn (`allCellsMs`). While only
 * the subset is drawn, a real click on a cell: the time from the click to the cell in the page's
 * selection, as this process sees it (a frame of every cell under way holds the page's main thread).
 *
 *   node --import tsx --conditions=source bench/viewer/explorer.ts [--cells 1000000,5000000] [--reps 3] [--data DIR] [--s3] [--no-comparison]
 *
 * Each dataset also has its companion's rows in embedding order (`--sporadik-rows`); the lasso is
 * read from them, and (unless --no-comparison) from the companion's rows through a copy of the
 * manifest that names none ("serve, companion rows"), in the same run.
 *
 * `--data DIR` keeps the datasets (default bench/out/viewer) and reuses them.
 */
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { EMBEDDING_ROWS_PATH } from "@deltacells/core";
import { writeEmbeddingRows } from "@deltacells/core/node";
import { FolderStore } from "@deltacells/storage/node";
import type { Page } from "playwright-core";
import { buildViewer, publicBucket } from "../../apps/viewer/test/fixtures.js";
import { startServer } from "../../packages/cli/src/serve/http.js";
import { launchChromium } from "../../test-utils/browser/index.js";
import { startMoto } from "../../test-utils/servers.js";
import { buildSynthetic, clusters } from "../viewer-data.js";

const { values } = parseArgs({
  options: {
    cells: { type: "string", default: "1000000,5000000" },
    reps: { type: "string", default: "3" },
    data: { type: "string", default: "bench/out/viewer" },
    s3: { type: "boolean", default: false },
    "no-comparison": { type: "boolean", default: false },
  },
});
const sizes = values.cells.split(",").map(Number);
const reps = Number(values.reps);
const root = resolve(values.data);
mkdirSync(root, { recursive: true });

for (const n of sizes) {
  const dir = join(root, `synthetic-${n}`);
  if (!existsSync(join(dir, "stats"))) {
    const t = performance.now();
    await buildSynthetic(root, n, `synthetic-${n}`);
    console.error(`synthetic-${n} built in ${((performance.now() - t) / 1000).toFixed(0)} s`);
  } else if (!existsSync(join(dir, EMBEDDING_ROWS_PATH, "zarr.json"))) {
    const t = performance.now();
    await writeEmbeddingRows(dir, { openStore: (location) => new FolderStore(location), threads: 2 });
    console.error(
      `synthetic-${n}: rows in embedding order written in ${((performance.now() - t) / 1000).toFixed(0)} s`,
    );
  }
  // The same dataset without its rows in embedding order (its manifest names none; every other
  // object linked): a lasso's rows from the companion, for comparison in the same run.
  const plain = join(root, `synthetic-${n}-companion-rows`);
  rmSync(plain, { recursive: true, force: true });
  mkdirSync(plain);
  for (const entry of readdirSync(dir)) {
    if (entry !== "manifest.json") symlinkSync(join(dir, entry), join(plain, entry));
  }
  const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
  delete manifest.metadata.sporadik_rows;
  writeFileSync(join(plain, "manifest.json"), `${JSON.stringify(manifest)}\n`);
}
await buildViewer(join(root, "viewer-dist"));
const server = await startServer({ root, viewerDir: join(root, "viewer-dist"), port: 0 });
const chromium = await launchChromium();

type Cost = { action: string; requests: number; waves: number; bytes: number; ms: number };
type V = {
  __viewer: {
    state: {
      ready: boolean;
      error?: string;
      busy: number;
      firstDrawMs?: number;
      firstFrameMs?: number;
      allCellsMs?: number;
      selection: number[];
      rowsOrderMs?: number;
      selectionRead?: string;
      geneMs?: number;
      markers?: unknown;
      dotplot?: { ms: number };
    };
    searchGene(n: string): Promise<void>;
    colourBy(n: string): Promise<void>;
    select(cells: number[]): void;
    dotPlot(genes: string[]): Promise<void>;
    plotSettled(): boolean;
    plotState(): { drawn: number; preview: boolean };
    screenPosition(cell: number): [number, number] | undefined;
    snapshot(): { history: Cost[] };
  };
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const f0 = (x: number) => x.toFixed(0);
const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

/** Peak and current resident set (kB) of this browser's processes of `type` (renderer, gpu-process). */
function processMemory(type: string): { hwm: number; rss: number } {
  const out = execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" });
  let best = { hwm: 0, rss: 0 };
  for (const line of out.split("\n")) {
    const m = /^\s*(\d+)\s+(.*)$/.exec(line);
    if (!m || !m[2]!.includes("chromium") || !m[2]!.includes(`--type=${type}`)) continue;
    try {
      const status = readFileSync(`/proc/${m[1]}/status`, "utf8");
      const hwm = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
      const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      if (hwm > best.hwm) best = { hwm, rss };
    } catch {
      // the process ended meanwhile
    }
  }
  return best;
}

const jsHeap = (page: Page) =>
  page.evaluate(
    () => (performance as unknown as { memory?: { usedJSHeapSize: number } }).memory?.usedJSHeapSize ?? 0,
  );

/** Two sequential fetches of a small object: the floor of an action of two waves. */
const roundTrips = (page: Page, url: string) =>
  page.evaluate(async (u) => {
    const s = performance.now();
    await (await fetch(u, { cache: "no-store" })).arrayBuffer();
    await (await fetch(u, { cache: "no-store" })).arrayBuffer();
    return performance.now() - s;
  }, url);

const waitReady = (page: Page) =>
  page.waitForFunction(() => (window as unknown as V).__viewer?.state.ready, null, { timeout: 600_000 });
const idle = (page: Page) =>
  page.waitForFunction(() => (window as unknown as V).__viewer.state.busy === 0, null, { timeout: 600_000 });

/** Moto with every object of `dirs` uploaded (public-read) and a CORS rule; undefined without --s3. */
async function bucket(dirs: string[]) {
  if (!values.s3) return undefined;
  const moto = await startMoto();
  await publicBucket(
    moto.url,
    "viewer",
    dirs.map((dir) => ({ prefix: dir, dir: join(root, dir) })),
  );
  return moto;
}

const names = sizes.map((n) => `synthetic-${n}`);
const moto = await bucket(names);
const rows: string[] = [];
const splitRows: string[] = [];
const costRows: string[] = [];
const memoryRows: string[] = [];
try {
  for (const [i, n] of sizes.entries()) {
    const name = names[i]!;
    // The lasso: the 10,000 cells nearest the first cluster's centre (what a lasso around it takes).
    const { umap, centres } = clusters(n);
    const [cx, cy] = centres[0]!;
    const distance = new Float64Array(n);
    for (let c = 0; c < n; c++) distance[c] = Math.hypot(umap[2 * c]! - cx, umap[2 * c + 1]! - cy);
    const lasso = Array.from({ length: n }, (_, c) => c)
      .sort((a, b) => distance[a]! - distance[b]!)
      .slice(0, 10_000)
      .sort((a, b) => a - b);
    const genes = Array.from({ length: 40 }, (_, k) => `SYN${(k * 47) % 2000}`);
    const comparison = values["no-comparison"] ? [] : ["serve, companion rows"];
    for (const where of ["serve", ...comparison, ...(moto ? ["s3"] : [])]) {
      const data =
        where === "serve"
          ? `/${name}/`
          : where === "serve, companion rows"
            ? `/${name}-companion-rows/`
            : `s3://viewer/${name}&endpoint=${encodeURIComponent(moto!.url)}`;
      const m: Record<string, number[]> = {};
      const push = (k: string, v: number) => (m[k] ??= []).push(v);
      let history: Cost[] = [];
      let read = "";
      let memory = { renderer: 0, gpu: 0, heap: 0, blankRenderer: 0, blankHeap: 0, drawn: 0 };
      for (let r = 0; r < reps; r++) {
        const blankPage = await chromium.browser.newPage({ viewport: { width: 1200, height: 760 } });
        let t = performance.now();
        await blankPage.goto(server.url);
        await waitReady(blankPage);
        push("blank", performance.now() - t);
        const blankMemory = { renderer: processMemory("renderer").hwm, heap: await jsHeap(blankPage) };
        await blankPage.close();

        const page = await chromium.browser.newPage({ viewport: { width: 1200, height: 760 } });
        page.setDefaultTimeout(600_000);
        t = performance.now();
        await page.goto(`${server.url}?data=${data}`);
        // Once the first frame is drawn: a real click on cell 0, timed to the cell in the selection
        // (a frame of every cell under way holds it), if only the subset was drawn when it was made.
        await page.waitForFunction(
          () => (window as unknown as V).__viewer?.state.firstFrameMs !== undefined,
          null,
          {
            timeout: 600_000,
          },
        );
        const [preview, at] = await page.evaluate(() => {
          const v = (window as unknown as V).__viewer;
          return [v.plotState().preview, v.screenPosition(0)] as const;
        });
        const box = (await page.locator("#scatter").boundingBox())!;
        const clickAt = performance.now();
        await page.mouse.click(box.x + at![0], box.y + at![1]);
        await page.waitForFunction(
          () => (window as unknown as V).__viewer.state.selection.length === 1,
          null,
          {
            timeout: 600_000,
          },
        );
        if (preview) push("clickDuring", performance.now() - clickAt);
        await waitReady(page);
        push("open", performance.now() - t);
        const error = await page.evaluate(() => (window as unknown as V).__viewer.state.error);
        if (error) throw new Error(`${name} over ${where}: ${error}`);
        push("firstDraw", (await page.evaluate(() => (window as unknown as V).__viewer.state.firstDrawMs))!);
        push(
          "firstFrame",
          (await page.evaluate(() => (window as unknown as V).__viewer.state.firstFrameMs))!,
        );
        await page.waitForFunction(() => (window as unknown as V).__viewer.plotSettled(), null, {
          timeout: 600_000,
        });
        push("allCells", (await page.evaluate(() => (window as unknown as V).__viewer.state.allCellsMs))!);
        // Genes, each against two round trips of the manifest.
        const manifest =
          where !== "s3" ? `${server.url}${name}/manifest.json` : `${moto!.url}/viewer/${name}/manifest.json`;
        for (const g of genes.slice(0, 3)) {
          push(
            "gene",
            await page.evaluate(async (x) => {
              await (window as unknown as V).__viewer.searchGene(x);
              return (window as unknown as V).__viewer.state.geneMs!;
            }, g),
          );
          push("floor", await roundTrips(page, manifest));
        }
        // Every cell drawn once still.
        await page.waitForFunction(() => (window as unknown as V).__viewer.plotSettled(), null, {
          timeout: 600_000,
        });
        const drawn = await page.evaluate(() => (window as unknown as V).__viewer.plotState().drawn);
        // The lasso's markers (once the page has computed the rows' order, if it has them).
        await page.evaluate(() => (window as unknown as V).__viewer.colourBy("cluster"));
        await idle(page);
        const ordered = await page.evaluate(() => {
          const st = (window as unknown as V).__viewer.state;
          return st.rowsOrderMs;
        });
        if (ordered !== undefined) push("rowsOrder", ordered);
        t = performance.now();
        await page.evaluate((cells) => (window as unknown as V).__viewer.select(cells), lasso);
        await page.waitForFunction(() => (window as unknown as V).__viewer.state.markers, null, {
          timeout: 600_000,
        });
        await idle(page);
        push("markers", performance.now() - t);
        // The page's own split of it (the latest of each measure; painted comes a frame later).
        await page.waitForFunction(
          () => performance.getEntriesByName("selection: painted").length > 0,
          null,
          {
            timeout: 600_000,
          },
        );
        const split = await page.evaluate(() => {
          // No named functions in here: the bench's transpiler would wrap them in a helper the page lacks.
          const [read, moments, shown, painted] = [
            "selection: rows read",
            "selection: rows' moments",
            "selection: markers shown",
            "selection: painted",
          ].map((name) => performance.getEntriesByName(name).at(-1)?.duration ?? Number.NaN);
          performance.clearMeasures();
          return { read, moments, shown, painted };
        });
        for (const [k, v] of Object.entries(split)) push(`sel.${k}`, v ?? Number.NaN);
        read = (await page.evaluate(() => (window as unknown as V).__viewer.state.selectionRead)) ?? "";
        push("markersFloor", await roundTrips(page, manifest));
        // Dot plots: the first loads the column's statistics, the second draws from them.
        for (const [k, set] of [genes.slice(0, 20), genes.slice(20, 40)].entries()) {
          // The page's own time, from the call to the plot drawn (no round trip to this process).
          const ms = await page.evaluate(async (g) => {
            await (window as unknown as V).__viewer.dotPlot(g);
            return (window as unknown as V).__viewer.state.dotplot!.ms;
          }, set);
          push(k === 0 ? "dotFirst" : "dot", ms);
        }
        history = (await page.evaluate(() => (window as unknown as V).__viewer.snapshot())).history;
        memory = {
          renderer: processMemory("renderer").hwm,
          gpu: processMemory("gpu-process").hwm,
          heap: await jsHeap(page),
          blankRenderer: blankMemory.renderer,
          blankHeap: blankMemory.heap,
          drawn,
        };
        await page.close();
      }
      const x = (a: string, b: string) => `${(median(m[a]!) / median(m[b]!)).toFixed(1)}x`;
      rows.push(
        `| ${n.toLocaleString("en-US")} | ${where} | ${f0(median(m.open!))} (${f0(median(m.firstDraw!))}) | ${f0(median(m.blank!))} | ${x("open", "blank")} | ${f0(median(m.gene!))} | ${median(m.floor!).toFixed(1)} | ${x("gene", "floor")} | ${f0(median(m.markers!))} | ${x("markers", "markersFloor")} | ${f0(median(m.dotFirst!))} | ${median(m.dot!).toFixed(1)} |`,
      );
      splitRows.push(
        `| ${n.toLocaleString("en-US")} | ${where} | ${f0(median(m.firstFrame!))} | ${f0(median(m.firstDraw!))} | ${f0(median(m.allCells!))} | ${m.clickDuring ? f0(median(m.clickDuring)) : "-"} | ${f0(median(m["sel.read"]!))} | ${f0(median(m["sel.moments"]!))} | ${f0(median(m["sel.shown"]!))} | ${f0(median(m["sel.painted"]!))} | ${f0(median(m.markers!))} |`,
      );
      const cost = (pick: (c: Cost) => boolean) => {
        const c = history.filter(pick);
        return `${c.reduce((a, h) => a + h.requests, 0)} / ${mb(c.reduce((a, h) => a + h.bytes, 0))}`;
      };
      const ms = (action: string) => f0(history.find((h) => h.action === action)?.ms ?? Number.NaN);
      costRows.push(
        `| ${n.toLocaleString("en-US")} | ${where} | ${cost((h) => h.action === "open" || h.action === "embedding")} (${ms("open")} + ${ms("embedding")} ms) | ${cost((h) => h.action === `gene ${genes[0]}`)} (${ms(`gene ${genes[0]}`)} ms) | ${cost((h) => h.action === "obs cluster")} | ${cost((h) => h.action === "top genes of 10000 cells")} (${ms("top genes of 10000 cells")} ms, ${read}${m.rowsOrder ? `; order computed in ${f0(median(m.rowsOrder))} ms after the first draw` : ""}) | ${cost((h) => h.action === "markers")} (${ms("markers")} ms) | ${cost((h) => h.action === "dot plot of 20")} |`,
      );
      memoryRows.push(
        `| ${n.toLocaleString("en-US")} | ${where} | ${memory.drawn.toLocaleString("en-US")} | ${mb(memory.renderer * 1024)} | ${mb(memory.blankRenderer * 1024)} | ${mb(memory.gpu * 1024)} | ${mb(memory.heap)} | ${mb(memory.blankHeap)} |`,
      );
    }
  }
  console.log(
    `reps: ${reps} (medians; genes: ${reps} x 3); load average at the end ${loadavg()
      .map((v) => v.toFixed(1))
      .join(" ")}\n\n` +
      "| cells | from | open (ms; first draw) | blank page (ms) | ratio | gene to colours (ms) | two round trips (ms) | ratio | markers of 10,000 cells (ms) | ratio to two round trips | dot plot of 20, first (ms) | dot plot of 20 after (ms) |\n" +
      "|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n" +
      rows.join("\n") +
      "\n\nin the page (ms from page load; ms from the selection):\n\n| cells | from | first frame (a subset) | first drawn with its colouring | every cell drawn | a click while the subset is drawn, to its cell selected (from this process) | lasso: rows read | their moments | markers shown | next frame painted | select to markers, from this process |\n|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n" +
      splitRows.join("\n") +
      "\n\nrequests / MB per action:\n\n| cells | from | open + embedding | a gene | an obs column | the lasso's rows | its markers | dot plot of 20 (first) |\n|--:|---|--:|--:|--:|--:|--:|--:|\n" +
      costRows.join("\n") +
      "\n\nmemory (MB; peak resident set of the page's renderer and of the GPU process, JS heap):\n\n| cells | from | cells drawn | renderer | blank page's renderer | GPU process | JS heap | blank page's heap |\n|--:|---|--:|--:|--:|--:|--:|--:|\n" +
      memoryRows.join("\n"),
  );
} finally {
  await chromium.close();
  await server.close();
  await moto?.stop();
}
