/**
 * Does the viewer's scatter stay interactive at 200,000 and 500,000 cells? Headless Chromium with
 * software WebGL (SwiftShader: no GPU on this machine), the page over `deltacells serve`, the
 * synthetic dataset of `bench/viewer-data.ts` coloured by a gene, as a user would have it.
 *
 * Measured in the page, one input per animation frame:
 * - **zoom**: a wheel event on the plot each frame (in, then out); the frame time is the interval
 *   between animation frames while it runs, and the plot must redraw in every frame.
 * - **pan**: a mouse drag across the plot, one move per frame.
 * - **hover**: real pointer moves (CDP input) onto a cell; the latency runs from the event's own
 *   timestamp to the animation frame after the page has the hovered cell (its ring and values are
 *   elements over the plot: the plot does not redraw for a hover).
 * - **idle**: the frame interval with nothing happening (the reference: the browser's own pace).
 * - **settle**: after a zoom or pan, ms from the last input to the frame that draws every cell again
 *   (the page draws a subset of the cells while the view moves; `apps/viewer/src/scatter.ts`).
 * Long-animation-frame entries split each interval into the page's script and the rest (style,
 * layout, paint; WebGL work runs in the GPU process and shows as waiting).
 * The pbmc68k demo (700 cells) is measured in the same run as a second reference.
 *
 *   node --import tsx --conditions=source bench/viewer-interaction.ts [--cells 200000,500000] [--frames 60] [--reps 3] [--data DIR]
 *
 * `--data DIR` keeps the datasets in DIR and reuses them on the next run (they take minutes to write).
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { Page } from "playwright-core";
import { buildPbmc, buildViewer } from "../apps/viewer/test/fixtures.js";
import { startServer } from "../packages/cli/src/serve/http.js";
import { launchChromium } from "../test-utils/browser/index.js";
import { buildSynthetic } from "./viewer-data.js";

const { values } = parseArgs({
  options: {
    cells: { type: "string", default: "200000,500000" },
    frames: { type: "string", default: "60" },
    reps: { type: "string", default: "3" },
    data: { type: "string" },
  },
});
const sizes = values.cells!.split(",").map(Number);
const frames = Number(values.frames);
const reps = Number(values.reps);
const root = values.data ?? mkdtempSync(join(tmpdir(), "deltacells-bench-viewer-"));
mkdirSync(root, { recursive: true });

const t0 = performance.now();
await Promise.all([
  buildViewer(join(root, "viewer-dist")),
  existsSync(join(root, "pbmc68k")) ? undefined : buildPbmc(root),
  ...sizes.map((n) =>
    existsSync(join(root, `synthetic-${n}`)) ? undefined : buildSynthetic(root, n, `synthetic-${n}`),
  ),
]);
console.error(`datasets ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const server = await startServer({ root, viewerDir: join(root, "viewer-dist"), port: 0 });
const chromium = await launchChromium();

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))]!;

type V = {
  __viewer: {
    state: {
      ready: boolean;
      error?: string;
      busy: number;
      draws: number[];
      hovered?: number;
      dataset?: { nCells: number };
    };
    searchGene(n: string): Promise<void>;
    screenPosition(i: number): [number, number] | undefined;
    plotSettled(): boolean;
    plotState(): { drawn: number; subset: boolean } | undefined;
  };
};

/**
 * CPU time (ms) so far of Chromium's GPU process (where SwiftShader renders) and of its renderers
 * (the page's main thread and its compositor), read from /proc: this bench's descendants only.
 */
function chromiumCpu(): { gpu: number; renderer: number } {
  const parent = new Map<number, number>();
  const stat = new Map<number, string[]>();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const text = readFileSync(`/proc/${d}/stat`, "utf8");
      const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
      parent.set(Number(d), Number(f[1]));
      stat.set(Number(d), f);
    } catch {
      // The process ended while the table was read.
    }
  }
  const mine = (pid: number): boolean => {
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p))
      if (p === process.pid) return true;
    return false;
  };
  const out = { gpu: 0, renderer: 0 };
  for (const [pid, f] of stat) {
    if (!mine(pid)) continue;
    let cmd = "";
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue;
    }
    // utime and stime, fields 14 and 15 of stat (11 and 12 after the command), in 1/100 s.
    const ms = (Number(f[11]) + Number(f[12])) * 10;
    if (cmd.includes("--type=gpu-process")) out.gpu += ms;
    else if (cmd.includes("--type=renderer")) out.renderer += ms;
  }
  return out;
}

/** What one run of frames cost: intervals between animation frames, draws, the page's script time. */
interface Frames {
  intervals: number[];
  draws: number;
  script: number;
  /** The most cells one frame drew while the view moved. */
  drawnMoving: number;
  /** ms from the last input to the frame that drew every cell again. */
  settle: number;
  /** CPU ms of the GPU process and of the renderers over the run (set in Node). */
  gpu?: number;
  renderer?: number;
}

/** Waits until the plot has drawn nothing for 500 ms (the previous action's redraws are over). */
const settled = (page: Page) =>
  page.waitForFunction(
    () => {
      const d = (window as unknown as V).__viewer.state.draws;
      return d.length > 0 && performance.now() - d.at(-1)! > 500;
    },
    null,
    { timeout: 120_000, polling: 100 },
  );

/** Runs `kind` for `n` animation frames in the page, one synthetic input event per frame. */
function drive(page: Page, kind: "idle" | "zoom" | "pan", n: number): Promise<Frames> {
  return page.evaluate(
    async ({ kind, n }) => {
      const v = (window as unknown as V).__viewer;
      const canvas = document.getElementById("scatter")!;
      const r = canvas.getBoundingClientRect();
      const [cx, cy] = [r.left + r.width / 2, r.top + r.height / 2];
      let script = 0;
      const obs = new PerformanceObserver((list) => {
        for (const e of list.getEntries() as (PerformanceEntry & { scripts?: { duration: number }[] })[])
          for (const s of e.scripts ?? []) script += s.duration;
      });
      obs.observe({ type: "long-animation-frame", buffered: false });
      const before = v.state.draws.length > 0 ? v.state.draws.at(-1)! : 0;
      let drawnMoving = 0;
      const times: number[] = [];
      if (kind === "pan")
        canvas.dispatchEvent(
          new MouseEvent("mousedown", { clientX: cx, clientY: cy, buttons: 1, bubbles: true }),
        );
      await new Promise<void>((done) => {
        const step = (t: number) => {
          times.push(t);
          const i = times.length;
          // What the plot draws once the gesture has begun (the first step's input comes below).
          if (i > 1) drawnMoving = Math.max(drawnMoving, v.plotState()!.drawn);
          if (kind === "zoom")
            canvas.dispatchEvent(
              new WheelEvent("wheel", {
                deltaY: i <= n / 2 ? -40 : 40,
                clientX: cx,
                clientY: cy,
                bubbles: true,
                cancelable: true,
              }),
            );
          else if (kind === "pan") {
            // A circle of 100 px around the centre: the view moves every frame.
            const a = (2 * Math.PI * i) / n;
            window.dispatchEvent(
              new MouseEvent("mousemove", {
                clientX: cx + 100 * Math.cos(a) - 100,
                clientY: cy + 100 * Math.sin(a),
                buttons: 1,
                bubbles: true,
              }),
            );
          }
          if (i <= n) requestAnimationFrame(step);
          else done();
        };
        requestAnimationFrame(step);
      });
      const last = performance.now();
      if (kind === "pan") window.dispatchEvent(new MouseEvent("mouseup", { bubbles: true }));
      // Every cell drawn again: the plot is settled, and the draw that did it is the latest.
      await new Promise<void>((done) => {
        const check = () => (v.plotSettled() ? done() : requestAnimationFrame(check));
        check();
      });
      // Without a subset (the demo) the last step's own frame drew every cell.
      const settle = kind === "idle" ? 0 : Math.max(0, v.state.draws.at(-1)! - last);
      obs.disconnect();
      const draws = v.state.draws.filter((d) => d > before && d <= times.at(-1)!).length;
      return {
        intervals: times.slice(1).map((t, i) => t - times[i]!),
        draws,
        script,
        drawnMoving,
        settle,
      };
    },
    { kind, n },
  );
}

/**
 * Moves the real pointer onto `cell`; ms from the event to the frame after the hover is shown. In a
 * dense cloud the plot may pick a neighbour drawn at the same pixel: any hovered cell counts.
 */
async function hoverLatency(page: Page, cell: number): Promise<number | undefined> {
  const box = (await page.locator("#scatter").boundingBox())!;
  const pos = await page.evaluate((c) => (window as unknown as V).__viewer.screenPosition(c), cell);
  if (!pos || pos[0] < 5 || pos[1] < 5 || pos[0] > box.width - 5 || pos[1] > box.height - 5) return undefined;
  // Off the cells first (a corner of the page), so the move onto the cell is a new hover.
  await page.mouse.move(1, 1);
  await page.waitForFunction(() => (window as unknown as V).__viewer.state.hovered === undefined);
  await page.evaluate(() => {
    const w = window as unknown as { __lastMove?: number };
    window.addEventListener("mousemove", (e) => (w.__lastMove = e.timeStamp), { capture: true });
  });
  await page.mouse.move(box.x + pos[0], box.y + pos[1]);
  return page.evaluate(
    () =>
      new Promise<number>((done) => {
        const w = window as unknown as V & { __lastMove?: number };
        const check = () => {
          const s = w.__viewer.state;
          const moved = w.__lastMove;
          if (moved !== undefined && s.hovered !== undefined) requestAnimationFrame((t) => done(t - moved));
          else requestAnimationFrame(check);
        };
        check();
      }),
  );
}

try {
  const renderer = await (async () => {
    const page = await chromium.browser.newPage();
    const r = await page.evaluate(() => {
      const gl = document.createElement("canvas").getContext("webgl");
      const ext = gl?.getExtension("WEBGL_debug_renderer_info");
      return gl ? String(gl.getParameter(ext ? ext.UNMASKED_RENDERER_WEBGL : gl.RENDERER)) : "no WebGL";
    });
    await page.close();
    return r;
  })();
  const rows: string[] = [];
  for (const [name, gene] of [
    ["pbmc68k", "CD74"],
    ...sizes.map((n) => [`synthetic-${n}`, "SYN17"] as const),
  ] as const) {
    const results: Record<string, Frames[]> = { idle: [], zoom: [], pan: [] };
    const hovers: number[] = [];
    let cells = 0;
    for (let r = 0; r < reps; r++) {
      const page = await chromium.browser.newPage({ viewport: { width: 1200, height: 760 } });
      // tsx names the functions declared inside the evaluated ones through a helper of its own.
      await page.addInitScript({ content: "globalThis.__name = (f) => f;" });
      await page.goto(`${server.url}?data=/${name}/`);
      await page.waitForFunction(() => (window as unknown as V).__viewer?.state.ready, null, {
        timeout: 300_000,
      });
      await page.evaluate((g) => (window as unknown as V).__viewer.searchGene(g), gene);
      cells = await page.evaluate(() => (window as unknown as V).__viewer.state.dataset!.nCells);
      for (const kind of ["idle", "zoom", "pan"] as const) {
        await settled(page);
        const cpu0 = chromiumCpu();
        const f = await drive(page, kind, frames);
        const cpu1 = chromiumCpu();
        results[kind]!.push({ ...f, gpu: cpu1.gpu - cpu0.gpu, renderer: cpu1.renderer - cpu0.renderer });
      }
      await settled(page);
      for (let k = 0; k < 10; k++) {
        const ms = await hoverLatency(page, Math.floor(((k + 0.5) / 10) * cells));
        if (ms !== undefined) hovers.push(ms);
      }
      await page.close();
    }
    const col = (fs: Frames[]) => {
      const all = fs.flatMap((f) => f.intervals);
      const nFrames = fs.reduce((a, f) => a + f.intervals.length, 0);
      const drawn = fs.reduce((a, f) => a + f.draws, 0);
      const script = fs.reduce((a, f) => a + f.script, 0) / nFrames;
      const perDraw = (k: "gpu" | "renderer") => fs.reduce((a, f) => a + f[k]!, 0) / Math.max(1, drawn);
      const most = Math.max(...fs.map((f) => f.drawnMoving));
      return `${median(all).toFixed(0)} / ${quantile(all, 0.9).toFixed(0)} | ${script.toFixed(1)} | ${(drawn / nFrames).toFixed(2)} | ${most.toLocaleString("en-US")} | ${perDraw("renderer").toFixed(1)} | ${perDraw("gpu").toFixed(1)} | ${median(fs.map((f) => f.settle)).toFixed(0)}`;
    };
    rows.push(
      `| ${name} (${cells.toLocaleString("en-US")}) | ${median(results.idle!.flatMap((f) => f.intervals)).toFixed(0)} (${results.idle!.reduce((a, f) => a + f.draws, 0)} draws) | ${col(results.zoom!)} | ${col(results.pan!)} | ${hovers.length ? `${median(hovers).toFixed(0)} / ${quantile(hovers, 0.9).toFixed(0)}` : "–"} |`,
    );
    console.error(rows.at(-1));
  }
  console.log(
    `WebGL: ${renderer}; ${frames} frames per measure, ${reps} page loads per dataset; load average at the end ${loadavg()
      .map((x) => x.toFixed(1))
      .join(" ")}\n\n` +
      "| dataset (cells) | idle frame (ms) | zoom: frame median / p90 (ms) | script per frame (ms) | draws per frame | most cells drawn in a frame while moving | renderer CPU per draw (ms) | GPU process CPU per draw (ms) | to all cells after the last step (ms) | pan: frame median / p90 (ms) | script per frame (ms) | draws per frame | most cells drawn in a frame while moving | renderer CPU per draw (ms) | GPU process CPU per draw (ms) | to all cells after the last step (ms) | hover to shown, median / p90 (ms) |\n" +
      "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n" +
      rows.join("\n"),
  );
} finally {
  await chromium.close();
  await server.close();
  if (!values.data) rmSync(root, { recursive: true, force: true });
}
