/**
 * Peak memory of the conversions on realistic matrices, run as a user runs them (the built command,
 * `packages/cli/bin/deltacells.js`: run `npm run build` first): `convert IN OUT` (a deltacells
 * dataset), `convert IN OUT --sporadik` (with the companion store) and `convert IN OUT --format
 * sporadik`, at two sizes of bench/companion_h5ad.py's atlas-shaped .h5ad (33,538 genes, about
 * 2,250 nonzeros per cell, written by anndata without compression; made once in bench/out/). Peak
 * RSS is GNU time's maximum resident set size of the whole process, worker threads included.
 * Prints each run and, per conversion, the growth from the smaller size to the larger.
 *
 * With `--reference CHECKOUT` (another checkout, built), every conversion is run there too on the
 * same input and the outputs are compared file by file, byte for byte.
 *
 *   npm run build && node --import tsx --conditions=source bench/convert-memory.ts \
 *     [--sizes 6000,30000] [--modes dataset,companion,sporadik] [--threads 2] [--reference /tmp/main]
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { outputDifferences, outputFiles } from "./output-diff.js";
import { timedCli } from "./timed-cli.js";

const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "6000,30000" },
    modes: { type: "string", default: "dataset,companion,sporadik" },
    threads: { type: "string", default: "2" },
    reference: { type: "string" },
    tmp: { type: "string" },
  },
});
const root = new URL("..", import.meta.url).pathname;
const sizes = values.sizes.split(",").map(Number);
const modes = values.modes.split(",") as Mode[];
type Mode = "dataset" | "companion" | "sporadik";
const flags: Record<Mode, string[]> = {
  dataset: [],
  companion: ["--sporadik"],
  sporadik: ["--format", "sporadik"],
};
for (const m of modes)
  if (!(m in flags)) throw new Error(`--modes: ${m} is not one of ${Object.keys(flags)}`);

function input(cells: number): string {
  const path = join(root, "bench/out", `companion-${cells}.h5ad`);
  if (!existsSync(path)) {
    console.error(`writing ${path} with anndata ...`);
    execFileSync(
      join(root, "conformance/.venv/bin/python"),
      [join(root, "bench/companion_h5ad.py"), path, String(cells)],
      { stdio: "inherit" },
    );
  }
  return path;
}

const load = () => Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]);
const rows: Record<string, unknown>[] = [];
const peaks: Partial<Record<Mode, number[]>> = {};
for (const cells of sizes) {
  const file = input(cells);
  for (const mode of modes) {
    const dir = mkdtempSync(join(values.tmp ?? join(root, "bench/out"), "convert-memory-"));
    try {
      const run = (checkout: string, out: string) =>
        timedCli(
          checkout,
          ["convert", file, join(dir, out), ...flags[mode], "--quiet", "--threads", values.threads],
          { built: true },
        );
      const r = run(root, "this");
      const row: Record<string, unknown> = {
        cells,
        mode,
        peak_rss_mib: Math.round(r.mib),
        seconds: Number(r.seconds.toFixed(1)),
        cpu_seconds: Number(r.cpuSeconds.toFixed(1)),
        load: load(),
      };
      (peaks[mode] ??= []).push(r.mib);
      if (values.reference) {
        const ref = run(values.reference, "reference");
        row.reference_peak_rss_mib = Math.round(ref.mib);
        row.files_compared = outputFiles(join(dir, "this")).length;
        row.differences = outputDifferences(join(dir, "reference"), join(dir, "this"));
      }
      rows.push(row);
      console.log(JSON.stringify(row));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
const growth = Object.fromEntries(
  Object.entries(peaks).map(([mode, p]) => [mode, Math.round(p.at(-1)! - p[0]!)]),
);
const peak = Math.round(Math.max(...Object.values(peaks).flat()));
console.log(JSON.stringify({ sizes, peak_rss_mib: peak, growth_mib: growth }));
