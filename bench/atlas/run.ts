/**
 * The atlas benchmark: what sizing an atlas build needs, measured on this machine through the
 * command (`bin/deltacells.js`, the built package) on inputs written by generate.py.
 *
 *   npm run build && node --import tsx bench/atlas/run.ts [--cells 200000] [--inputs 8] [--quick]
 *
 * Rows (each a child process, timed with /usr/bin/time: wall seconds and peak RSS, workers included):
 * - scan: `plan --scan` of each input, seconds per GB of input file; then the merge;
 * - task, one thread: one task of a 4-task plan with `--threads 1`, at level 19 and level 9
 *   (cells/s and nonzeros/s per core), alternated and repeated;
 * - wall time of the whole conversion with 1 task (`--threads 2`) and with 2 tasks at once
 *   (`--threads 1` each);
 * - finalize;
 * - peak memory of one task with 1, 2, 4 and 8 threads (what a job asks for);
 * - peak memory of one task against one-input `convert` of the same cells: the same matrix written
 *   as one input and as INPUTS inputs; `convert` of the one, a task over the one, a task over all;
 *   and of the scan of the one input against the scans of the smaller inputs.
 * Prints one JSON object per row and a summary with the sizing table (cores to convert a
 * 100 M-cell atlas of ~2,000 nonzeros per cell in an hour).
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    cells: { type: "string", default: "200000" },
    genes: { type: "string", default: "20000" },
    "genes-per-cell": { type: "string", default: "800" },
    inputs: { type: "string", default: "8" },
    reps: { type: "string", default: "2" },
    quick: { type: "boolean", default: false },
  },
});
const REPO = resolve(import.meta.dirname, "../..");
const BIN = join(REPO, "packages/cli/bin/deltacells.js");
const PY = join(REPO, "conformance/.venv/bin/python");
const cells = Number(values.quick ? 40000 : values.cells);
const genes = Number(values.quick ? 8000 : values.genes);
const gpc = Number(values.quick ? 300 : values["genes-per-cell"]);
const nInputs = Number(values.quick ? 4 : values.inputs);
const reps = Number(values.quick ? 1 : values.reps);
type Meta = { inputs: { path: string; cells: number; nnz: number; bytes: number }[] };

/** The inputs of `n` files over the same cells (written once, cached under bench/out/atlas). */
function inputSet(n: number): Meta {
  const dir = join(REPO, "bench/out/atlas", `c${cells}-g${genes}-k${gpc}-i${n}`);
  if (!existsSync(join(dir, "meta.json"))) {
    console.error(`writing the inputs into ${dir} ...`);
    execFileSync(
      PY,
      [
        join(REPO, "bench/atlas/generate.py"),
        dir,
        "--cells",
        String(cells),
        "--genes",
        String(genes),
        "--genes-per-cell",
        String(gpc),
        "--inputs",
        String(n),
      ],
      { stdio: "inherit" },
    );
  }
  return JSON.parse(readFileSync(join(dir, "meta.json"), "utf8")) as Meta;
}
const meta = inputSet(nInputs);
const inputs = meta.inputs.map((i) => resolve(REPO, i.path));
const totalNnz = meta.inputs.reduce((a, i) => a + i.nnz, 0);
const work = mkdtempSync(join(tmpdir(), "deltacells-atlas-bench-"));

interface Timed {
  seconds: number;
  rssMiB: number;
  stdout: string;
}

/** `deltacells ARGS` in a child process under /usr/bin/time. */
function timed(args: string[], env: Record<string, string> = {}): Promise<Timed> {
  return new Promise((ok, fail) => {
    const child = spawn("/usr/bin/time", ["-f", "TIME %e %M", process.execPath, BIN, ...args], {
      env: { ...process.env, ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", fail);
    child.on("close", (code) => {
      const m = /TIME ([\d.]+) (\d+)/.exec(stderr);
      if (code !== 0 || !m)
        return fail(new Error(`deltacells ${args.join(" ")} failed (${code}): ${stderr.slice(-2000)}`));
      ok({ seconds: Number(m[1]), rssMiB: Number(m[2]) / 1024, stdout });
    });
  });
}

const rows: Record<string, unknown>[] = [];
function row(r: Record<string, unknown>): void {
  const out = { ...r, load: loadavg()[0]!.toFixed(1) };
  rows.push(out);
  console.log(JSON.stringify(out));
}

// 1. The scan, per input.
const scanOut = join(work, "scan");
let scanSeconds = 0;
for (let i = 0; i < inputs.length; i++) {
  const t = await timed(["plan", "--scan", ...inputs, scanOut, "--task", String(i)]);
  scanSeconds += t.seconds;
  row({
    row: "scan",
    input: i,
    seconds: t.seconds,
    gb: meta.inputs[i]!.bytes / 1e9,
    seconds_per_gb: t.seconds / (meta.inputs[i]!.bytes / 1e9),
    rss_mib: Math.round(t.rssMiB),
  });
}
const totalGb = meta.inputs.reduce((a, i) => a + i.bytes, 0) / 1e9;

// 2. Per-core throughput of one task, level 19 against level 9, alternated. Shards of a quarter of
// the tiles, so that the 4 tasks have work each.
const merge = await timed(["plan", "--merge", ...inputs, scanOut, "--tasks", "1"]);
row({ row: "merge", inputs: inputs.length, seconds: merge.seconds, rss_mib: Math.round(merge.rssMiB) });
const probed = JSON.parse(readFileSync(join(scanOut, ".deltacells-atlas/plan.json"), "utf8")) as {
  tile_size: number;
  n_cells: number;
};
const perShard = String(Math.max(1, Math.floor(Math.ceil(probed.n_cells / probed.tile_size) / 4)));
const plans: Record<string, string> = {};
for (const level of ["19", "9"]) {
  plans[level] = join(work, `plan-${level}`);
  await timed([
    "plan",
    ...inputs,
    plans[level]!,
    "--tasks",
    "4",
    "--level",
    level,
    "--obs-tiles-per-file",
    perShard,
  ]);
}
const plan = JSON.parse(readFileSync(join(plans["19"]!, ".deltacells-atlas/plan.json"), "utf8")) as {
  tasks: { tiles: [number, number]; rows: { start: number; end: number }[] }[];
  tile_size: number;
  nnz: number;
  n_cells: number;
};
const task = 1;
const taskCells = plan.tasks[task]!.rows.reduce((a, r) => a + r.end - r.start, 0);
const perCore: Record<string, number[]> = { "19": [], "9": [] };
for (let r = 0; r < reps; r++) {
  for (const level of r % 2 === 0 ? ["19", "9"] : ["9", "19"]) {
    const t = await timed([
      "convert",
      "--plan",
      plans[level]!,
      "--task",
      String(task),
      "--threads",
      "1",
      "--json",
    ]);
    const nnz = JSON.parse(t.stdout).nnz as number;
    perCore[level]!.push(nnz / t.seconds);
    row({
      row: "task, 1 thread",
      level: Number(level),
      cells: taskCells,
      nnz,
      seconds: t.seconds,
      cells_per_s: Math.round(taskCells / t.seconds),
      nnz_per_s: Math.round(nnz / t.seconds),
      rss_mib: Math.round(t.rssMiB),
    });
  }
}

// Peak memory of that task by threads (what a job asks for): tiles in flight grow with them.
for (const threads of ["1", "2", "4", "8"]) {
  const t = await timed(["convert", "--plan", plans["19"]!, "--task", String(task), "--threads", threads]);
  row({ row: "memory: task by threads", level: 19, threads: Number(threads), rss_mib: Math.round(t.rssMiB) });
}

// 3. Wall time of the conversion: 1 task with 2 threads, 2 tasks at once with 1 thread each; finalize.
const one = join(work, "one");
await timed(["plan", ...inputs, one, "--tasks", "1"]);
const t1 = await timed(["convert", "--plan", one, "--threads", "2"]);
row({
  row: "wall, 1 task x 2 threads",
  seconds: t1.seconds,
  nnz: totalNnz,
  nnz_per_s: Math.round(totalNnz / t1.seconds),
  rss_mib: Math.round(t1.rssMiB),
});
const fin = await timed(["finalize", one]);
row({ row: "finalize", seconds: fin.seconds, tasks: 1, rss_mib: Math.round(fin.rssMiB) });
const two = join(work, "two");
await timed(["plan", ...inputs, two, "--tasks", "2"]);
const started = performance.now();
const both = await Promise.all(
  [0, 1].map((t) => timed(["convert", "--plan", two, "--task", String(t), "--threads", "1"])),
);
const wall2 = (performance.now() - started) / 1000;
row({
  row: "wall, 2 tasks x 1 thread",
  seconds: Number(wall2.toFixed(2)),
  nnz: totalNnz,
  nnz_per_s: Math.round(totalNnz / wall2),
  rss_mib: Math.round(Math.max(...both.map((b) => b.rssMiB))),
});
const fin2 = await timed(["finalize", two]);
row({ row: "finalize", seconds: fin2.seconds, tasks: 2, rss_mib: Math.round(fin2.rssMiB) });

// 4. Peak memory against one-input convert of the same cells, whatever the number of inputs: the
// same matrix as one input and as nInputs (the task over them is row "wall, 1 task x 2 threads").
const whole = resolve(REPO, inputSet(1).inputs[0]!.path);
const conv = await timed(["convert", whole, join(work, "single"), "--threads", "2", "--quiet"]);
row({
  row: "memory: one-input convert",
  cells: plan.n_cells,
  inputs: 1,
  seconds: conv.seconds,
  rss_mib: Math.round(conv.rssMiB),
});
const wholeScan = await timed(["plan", "--scan", whole, join(work, "single-scan")]);
row({
  row: "memory: scan of the one input",
  gb: inputSet(1).inputs[0]!.bytes / 1e9,
  seconds: wholeScan.seconds,
  rss_mib: Math.round(wholeScan.rssMiB),
});
const oneIn = join(work, "one-input-plan");
await timed(["plan", whole, oneIn, "--tasks", "1"]);
const m1 = await timed(["convert", "--plan", oneIn, "--threads", "2"]);
row({ row: "memory: task over 1 input", cells: plan.n_cells, inputs: 1, rss_mib: Math.round(m1.rssMiB) });
row({
  row: `memory: task over ${inputs.length} inputs`,
  cells: plan.n_cells,
  inputs: inputs.length,
  rss_mib: Math.round(t1.rssMiB),
});

// The sizing table: cores to convert a 100 M-cell atlas of 2,000 nonzeros per cell in one hour.
const atlasNnz = 100e6 * 2000;
const sizing = ["19", "9"].map((level) => {
  // The fastest repetition: on a shared machine the others measure the neighbours too.
  const rate = Math.max(...perCore[level]!);
  const coreHours = atlasNnz / rate / 3600;
  return {
    level: Number(level),
    nnz_per_s_per_core: Math.round(rate),
    core_hours: Math.round(coreHours),
    cores_for_one_hour: Math.ceil(coreHours),
  };
});
const summary = {
  inputs: inputs.length,
  cells: plan.n_cells,
  nnz: totalNnz,
  input_gb: Number(totalGb.toFixed(3)),
  scan_seconds_per_gb: Number((scanSeconds / totalGb).toFixed(1)),
  sizing,
  load: loadavg()
    .map((l) => l.toFixed(1))
    .join(" "),
};
console.log(JSON.stringify({ summary }));
rmSync(work, { recursive: true, force: true });
