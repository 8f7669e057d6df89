/**
 * The sporadik write benchmark: our streaming writer (native zstd on worker threads, out-of-core
 * transposition) against Python sporadik 1.1.1's `write_store` (given scipy CSR/CSC, as its docs
 * show), on the same synthetic matrix, for one and both axes, chunked and byte-addressable. Each run
 * is its own process, so peak RSS is that writer's alone; the machine's load average is printed with
 * the figures (this box is shared).
 *
 *   node --import tsx --conditions=source bench/sporadik-write/run.ts --cells 10000 --genes-per-cell 2000
 *   ... --writers ours --modes both:chunked     (only ours, only one mode: the large sizes)
 *   ... --python-limit-gib 4                    (Python under `prlimit --as`, to show where it stops)
 *
 * Our writer runs from the TypeScript sources (tsx). `--reps N` repeats every mode N times, the
 * writers interleaved (ours, Python, ours, ...), and the table shows the median of each. Output:
 * one JSON line per run, then a Markdown table.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { generate } from "./generate.js";

const { values } = parseArgs({
  options: {
    cells: { type: "string", default: "10000" },
    genes: { type: "string", default: "20000" },
    "genes-per-cell": { type: "string", default: "2000" },
    dir: { type: "string", default: join(tmpdir(), "sporadik-write-bench") },
    writers: { type: "string", default: "ours,python" },
    modes: { type: "string", default: "0:chunked,both:chunked,0:ranged,both:ranged" },
    "python-limit-gib": { type: "string" },
    reps: { type: "string", default: "1" },
  },
});
const here = resolve(import.meta.dirname);
const repo = resolve(here, "../..");
const python = join(repo, "conformance/.venv/bin/python");
const nCells = Number(values.cells);
const matrixDir = join(values.dir as string, `m-${nCells}x${values.genes}@${values["genes-per-cell"]}`);
const meta = await generate(matrixDir, nCells, Number(values.genes), Number(values["genes-per-cell"]));
console.error(
  `matrix: ${meta.nRows} x ${meta.nCols}, ${meta.nnz.toLocaleString("en-US")} nonzeros (${matrixDir})`,
);

interface Run {
  writer: string;
  mode: string;
  seconds?: number;
  maxRssMiB?: number;
  cpuSeconds?: number;
  bytesSpilled?: number;
  phases?: Record<string, number>;
  failed?: string;
  load: number;
}

const runs: Run[] = [];
const reps = Math.max(1, Number(values.reps));
/**
 * Every run writes a folder of its own, and the folders are removed only after the last run. On a
 * file system that looks past recently deleted inodes when it creates one (ext4 without a journal,
 * as on the machine these figures come from), removing the previous run's thousands of chunk files
 * just before the next run made each of its file creations scan them: measured, 10-25% of a run's
 * CPU in the kernel's `recently_deleted`, landing on whichever writer ran next.
 */
const outputs: string[] = [];
let serial = 0;
for (const mode of (values.modes as string).split(",").flatMap((m) => Array<string>(reps).fill(m))) {
  const [axesName, layout] = mode.split(":") as [string, string];
  const axes = axesName === "both" ? "0,1" : axesName;
  const ba = layout === "ranged" ? "1" : "0";
  for (const writer of (values.writers as string).split(",")) {
    const out = join(values.dir as string, `out-${process.pid}-${serial++}-${writer}`);
    outputs.push(out);
    const load = loadavg()[0] as number;
    let command: string[];
    if (writer === "ours") {
      command = [
        process.execPath,
        "--import",
        "tsx",
        "--conditions=source",
        join(here, "ours.ts"),
        matrixDir,
        out,
        axes,
        ba,
      ];
    } else {
      command = [python, join(here, "theirs.py"), matrixDir, out, axes, ba];
      const limit = values["python-limit-gib"];
      if (limit) command = ["prlimit", `--as=${Math.round(Number(limit) * 2 ** 30)}`, ...command];
    }
    const child = spawnSync(command[0] as string, command.slice(1), {
      cwd: repo,
      encoding: "utf8",
      maxBuffer: 1 << 24,
    });
    const line = child.stdout.trim().split("\n").pop() ?? "";
    let run: Run;
    try {
      run = { ...(JSON.parse(line) as Omit<Run, "mode" | "load">), writer, mode, load };
    } catch {
      const why = child.stderr.trim().split("\n").slice(-1)[0] ?? `exit ${child.status}`;
      run = { writer, mode, failed: `${child.signal ?? `exit ${child.status}`}: ${why}`, load };
    }
    runs.push(run);
    console.log(JSON.stringify({ nnz: meta.nnz, ...run }));
  }
}
for (const out of outputs) rmSync(out, { recursive: true, force: true });

/** The run of median wall time among a writer's runs of one mode (failed runs only if all failed). */
const median = (list: Run[]): Run => {
  const done = list
    .filter((r) => r.seconds !== undefined)
    .sort((a, b) => (a.seconds ?? 0) - (b.seconds ?? 0));
  return done.length > 0 ? (done[Math.floor((done.length - 1) / 2)] as Run) : (list[0] as Run);
};
const grouped = new Map<string, Map<string, Run[]>>();
for (const run of runs) {
  if (!grouped.has(run.mode)) grouped.set(run.mode, new Map());
  const byWriter = grouped.get(run.mode) as Map<string, Run[]>;
  byWriter.set(run.writer, [...(byWriter.get(run.writer) ?? []), run]);
}
const byMode = new Map<string, Map<string, Run>>(
  [...grouped].map(([mode, writers]) => [mode, new Map([...writers].map(([w, list]) => [w, median(list)]))]),
);
const cell = (run: Run | undefined) =>
  run === undefined
    ? "-"
    : run.failed
      ? `failed (${run.failed.slice(0, 60)})`
      : `${run.seconds?.toFixed(1)} s (CPU ${run.cpuSeconds?.toFixed(1)} s), ${run.maxRssMiB?.toFixed(0)} MiB`;
console.log(
  `\n${meta.nnz.toLocaleString("en-US")} nonzeros (${meta.nRows} x ${meta.nCols}); load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")} at the end\n`,
);
console.log("| layouts | ours | Python sporadik | speed-up (wall) | speed-up (CPU) |\n|---|---|---|---|---|");
for (const [mode, pair] of byMode) {
  const ours = pair.get("ours");
  const theirs = pair.get("python");
  const ratio = (a?: number, b?: number) => (a && b ? `${(b / a).toFixed(2)}x` : "-");
  console.log(
    `| ${mode} | ${cell(ours)} | ${cell(theirs)} | ${ratio(ours?.seconds, theirs?.seconds)} | ${ratio(ours?.cpuSeconds, theirs?.cpuSeconds)} |`,
  );
}
console.log(`\nuptime: ${execFileSync("uptime", { encoding: "utf8" }).trim()}`);
