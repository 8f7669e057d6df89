/**
 * `deltacells convert INPUT OUT --sporadik` against another checkout of the command (a reference:
 * the same conversion from an earlier commit), interleaved, `--reps` times each: wall time and
 * peak RSS (GNU time's maximum resident set size, worker threads included) of each run, then the
 * outputs compared file by file, byte for byte (tiles, gene files, obs, manifest, companion). The
 * input is bench/companion_h5ad.py's atlas-shaped .h5ad (33,538 genes, about 2,000 nonzeros per
 * cell), made once in bench/out/.
 *
 *   node --import tsx --conditions=source bench/convert-companion.ts --reference /tmp/before \
 *     [--cells 20000] [--reps 3] [--threads 2]
 *
 * Both checkouts run from their sources (tsx), so neither is favoured by a bundle.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { outputDifferences, outputFiles } from "./output-diff.js";
import { timedCli } from "./timed-cli.js";

const { values } = parseArgs({
  options: {
    reference: { type: "string" },
    cells: { type: "string", default: "20000" },
    reps: { type: "string", default: "3" },
    threads: { type: "string", default: "2" },
    keep: { type: "boolean", default: false },
  },
});
if (!values.reference) throw new Error("--reference CHECKOUT: the command to compare against");
const root = new URL("..", import.meta.url).pathname;
const cells = Number(values.cells);
const input = join(root, "bench/out", `companion-${cells}.h5ad`);
if (!existsSync(input)) {
  console.error(`writing ${input} with anndata ...`);
  execFileSync(
    join(root, "conformance/.venv/bin/python"),
    [join(root, "bench/companion_h5ad.py"), input, String(cells)],
    { stdio: "inherit" },
  );
}

interface Run {
  seconds: number;
  cpuSeconds: number;
  mib: number;
  out: string;
}

function convert(checkout: string, dir: string): Run {
  const out = join(dir, "ds");
  const { seconds, cpuSeconds, mib } = timedCli(checkout, [
    "convert",
    input,
    out,
    "--sporadik",
    "--quiet",
    "--threads",
    values.threads!,
  ]);
  return { seconds, cpuSeconds, mib, out };
}

const median = (xs: number[]) => [...xs].sort((p, q) => p - q)[Math.floor(xs.length / 2)]!;
const runs: Record<"reference" | "this", Run[]> = { reference: [], this: [] };
const dirs: string[] = [];
const loads: number[] = [];
for (let rep = 0; rep < Number(values.reps); rep++) {
  for (const which of rep % 2 === 0 ? (["reference", "this"] as const) : (["this", "reference"] as const)) {
    const dir = mkdtempSync(join(tmpdir(), "deltacells-companion-bench-"));
    dirs.push(dir);
    const r = convert(which === "reference" ? values.reference : root, dir);
    runs[which].push(r);
    loads.push(Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]));
    console.log(
      `${which}: ${r.seconds.toFixed(1)} s, ${r.cpuSeconds.toFixed(1)} s of CPU, ${r.mib.toFixed(0)} MiB peak RSS (load ${loads.at(-1)})`,
    );
  }
}
// Every run's output against the reference's first: the bytes do not depend on the run.
const diff = [...runs.reference.slice(1), ...runs.this].flatMap((r) =>
  outputDifferences(runs.reference[0]!.out, r.out),
);
console.log(
  JSON.stringify(
    {
      input,
      cells,
      load_average_1min: loads,
      ...Object.fromEntries(
        (["reference", "this"] as const).map((w) => [
          w,
          {
            seconds: runs[w].map((r) => r.seconds),
            cpu_seconds: runs[w].map((r) => r.cpuSeconds),
            mib: runs[w].map((r) => r.mib),
          },
        ]),
      ),
      median_seconds_ratio:
        median(runs.this.map((r) => r.seconds)) / median(runs.reference.map((r) => r.seconds)),
      median_cpu_seconds_ratio:
        median(runs.this.map((r) => r.cpuSeconds)) / median(runs.reference.map((r) => r.cpuSeconds)),
      median_mib: {
        reference: median(runs.reference.map((r) => r.mib)),
        this: median(runs.this.map((r) => r.mib)),
      },
      objects_compared: outputFiles(runs.this[0]!.out).length,
      differences: diff,
    },
    null,
    2,
  ),
);
if (!values.keep) for (const d of dirs) rmSync(d, { recursive: true, force: true });
