/**
 * The viewer's plot alone at millions of cells, in headless Chromium (SwiftShader without a GPU):
 * from its creation, the first frame (a subset above 40,000 cells), the colouring of the opened
 * page shown, every cell drawn, then a colouring by category, the frames drawn after it, and the
 * page's main thread: its longest gap and all its gaps over 100 ms added up (input waits then).
 * No data is read: the cells are 12 square clusters made in the page (bench/viewer/draw-page.ts).
 *
 *   node --import tsx --conditions=source bench/viewer/draw.ts [--cells 1000000,5000000] [--reps 3] [--scatter apps/viewer/src/scatter.ts] [--profile]
 *
 * `--profile` also samples the page's main thread (Chromium's CPU profiler, 1 ms) in each run and
 * prints the functions it spent most of its time in (self time, ms; a frame's copy of the WebGL
 * canvas onto the page, `copyTo`, is where it waits for SwiftShader to draw).
 * `--scatter FILE` measures another `createScatter` (a copy of scatter.ts from an older commit
 * placed beside it in apps/viewer/src, for a before and after in the same run).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { startBrowserSession } from "../../test-utils/browser/index.js";

const { values } = parseArgs({
  options: {
    cells: { type: "string", default: "1000000,5000000" },
    reps: { type: "string", default: "3" },
    scatter: { type: "string", multiple: true, default: ["apps/viewer/src/scatter.ts"] },
    profile: { type: "boolean", default: false },
  },
});
const sizes = values.cells.split(",").map(Number);
const reps = Number(values.reps);
const dir = mkdtempSync(join(resolve("bench/out"), "draw-"));
const entries: Record<string, string> = {};
for (const [k, file] of values.scatter.entries()) {
  const entry = join(dir, `entry${k}.ts`);
  writeFileSync(
    entry,
    `import { createScatter } from ${JSON.stringify(resolve(file))};\n` +
      `import { run } from ${JSON.stringify(resolve("bench/viewer/draw-page.ts"))};\n` +
      "export const go = (n: number) => run(createScatter, n);\n",
  );
  entries[`page${k}`] = entry;
}
const session = await startBrowserSession({ entryPoints: entries });
type R = Record<string, number>;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rows: string[] = [];
try {
  for (const n of sizes) {
    for (const [k, file] of values.scatter.entries()) {
      const runs: R[] = [];
      for (let r = 0; r < reps; r++) {
        const page = await session.open(`page${k}`, { callTimeoutMs: 600_000 });
        await page.page.setViewportSize({ width: 1000, height: 700 });
        const cdp = values.profile ? await page.page.context().newCDPSession(page.page) : undefined;
        if (cdp) {
          await cdp.send("Profiler.enable");
          await cdp.send("Profiler.setSamplingInterval", { interval: 1000 });
          await cdp.send("Profiler.start");
        }
        runs.push(await page.call<R>("go", n));
        if (cdp) {
          const { profile } = await cdp.send("Profiler.stop");
          const nodes = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
          const self = new Map<string, number>();
          for (const [i, id] of (profile.samples ?? []).entries()) {
            const f = nodes.get(id)!;
            const key = `${f.functionName || "(anonymous)"} ${f.url.split("/").pop()}:${f.lineNumber}`;
            self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas?.[i] ?? 0) / 1000);
          }
          const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, 12);
          console.error(
            `${n} cells, ${file}, run ${r + 1}:\n${top.map(([k, ms]) => `  ${ms.toFixed(0).padStart(7)} ${k}`).join("\n")}`,
          );
        }
        await page.close();
      }
      const m = (key: string) => median(runs.map((x) => x[key]!)).toFixed(0);
      rows.push(
        `| ${n.toLocaleString("en-US")} | ${file} | ${m("firstFrame")} | ${m("shown")} | ${m("allCells")} | ${m("colour")} | ${m("framesAfterColour")} | ${m("longestGap")} | ${m("gapsOver100")} |`,
      );
    }
  }
  console.log(
    `reps: ${reps} (medians); load average at the end ${loadavg()
      .map((v) => v.toFixed(1))
      .join(" ")}\n\n` +
      "| cells | plot | first frame (ms) | opened page's colouring shown | every cell drawn | a colouring after (ms) | frames after it | longest main-thread gap (ms) | gaps over 100 ms, added (ms) |\n" +
      "|--:|---|--:|--:|--:|--:|--:|--:|--:|\n" +
      rows.join("\n"),
  );
} finally {
  await session.close();
  rmSync(dir, { recursive: true, force: true });
}
