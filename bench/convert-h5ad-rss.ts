/**
 * Peak memory of `deltacells convert` on a realistic input: a 1,000,000-cell .h5ad written by
 * anndata with 10 obs columns (bench/obs_h5ad.py; generated once under the temporary folder), run
 * through the CLI with and without obs (`--no-obs`), alternating, `--reps` times each. Reports
 * each run's peak RSS (GNU time's maximum resident set size of the command, worker threads
 * included) and the difference of the medians: the bound is +100 MiB.
 *
 *   node --import tsx --conditions=source bench/convert-h5ad-rss.ts [--cells 1000000] [--reps 3]
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { timedCli } from "./timed-cli.js";

const { values } = parseArgs({
  options: { cells: { type: "string", default: "1000000" }, reps: { type: "string", default: "3" } },
});
const cells = Number(values.cells);
const root = new URL("..", import.meta.url).pathname;
const input = join(tmpdir(), `deltacells-obs-${cells}.h5ad`);
if (!existsSync(input)) {
  console.error(`writing ${input} with anndata ...`);
  execFileSync(
    join(root, "conformance/.venv/bin/python"),
    [join(root, "bench/obs_h5ad.py"), input, String(cells)],
    {
      stdio: "inherit",
    },
  );
}

function peakMiB(flags: string[]): { mib: number; seconds: number } {
  const dir = mkdtempSync(join(tmpdir(), "deltacells-bench-"));
  try {
    return timedCli(root, ["convert", input, join(dir, "out"), ...flags]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const runs: Record<"obs" | "no-obs", number[]> = { obs: [], "no-obs": [] };
for (let r = 0; r < Number(values.reps); r++) {
  for (const mode of ["no-obs", "obs"] as const) {
    const { mib, seconds } = peakMiB(mode === "obs" ? [] : ["--no-obs"]);
    runs[mode].push(mib);
    console.error(`${mode}: peak RSS ${mib.toFixed(0)} MiB, ${seconds.toFixed(1)} s`);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(
  JSON.stringify({
    cells,
    input,
    peak_rss_mib: { obs: runs.obs.map(Math.round), "no-obs": runs["no-obs"].map(Math.round) },
    median_difference_mib: Math.round(median(runs.obs) - median(runs["no-obs"])),
  }),
);
