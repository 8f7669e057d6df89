#!/usr/bin/env node
// The test runner behind `npm test` and `npm run test:{unit,conformance,browser}`.
//
//   node scripts/test.mjs                        type-check, lint, then every test file (what CI runs),
//                                                spawning the compiled command (see below)
//   node scripts/test.mjs packages/storage       every test file under these paths (files work too)
//   node scripts/test.mjs --compiled [paths]     spawn the compiled command, as the full run does
//   node scripts/test.mjs --suite unit [paths]   only one suite's files
//   node scripts/test.mjs --list [...]           print the files that would run, with their suites
//   node scripts/test.mjs --jobs N [...]         run N test files at a time (default 2; 1 runs them
//                                                one after another)
//
// A test file's suite is in its name, so a new test is classified by what it is called:
//   *.browser.test.ts       drives headless Chromium (test-utils/browser)
//   *.conformance.test.ts   needs the pinned Python environment (conformance/.venv): the Python
//                           implementations we are checked against, or moto_server for S3; or
//                           the Slurm scheduler (test-utils/slurm.ts, scripts/setup-slurm.mjs)
//   any other *.test.ts     unit: needs nothing beyond `npm ci` (it may start Node servers on 127.0.0.1)
// Before running anything the runner checks that no unit file uses Python, moto, Slurm or the
// browser harness, so a misnamed test fails here with a message instead of failing (or being
// skipped) on a machine without them.
//
// Tests run under node's test runner, TypeScript loaded through tsx and workspace packages
// resolved to their TypeScript sources. A test that runs the `deltacells` command as a child process
// starts it as test-utils/command.ts says: from the sources through tsx by default (a targeted run
// reflects the sources without a build), or, with DELTACELLS_TEST_COMMAND=compiled, from tsc's
// output, packages/cli/dist/main.js, which starts in about a third of the time (its worker threads
// too). The full run and --compiled first run `tsc -b` (incremental: a no-op after `npm run build`),
// so dist/ is the sources', then set that variable.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join } from "node:path";

const SUITES = ["unit", "conformance", "browser"];

/** What only a conformance or browser test touches; matched against the text of unit files. */
const NOT_UNIT = [
  {
    re: /\.venv\b|\bpython[<(]|pythonDumps?\(|\bPYTHON\b|\bmoto_server\b|\bstartMoto\b|\bmotoBucket\b|\bwriteAtlasInputs\b/,
    suite: "conformance",
  },
  // The Slurm test cluster (test-utils/slurm.ts), installed by scripts/setup-slurm.mjs.
  { re: /test-utils\/slurm\b|\bstartSlurm\b/, suite: "conformance" },
  { re: /test-utils\/browser|playwright/, suite: "browser" },
];

function suiteOf(path) {
  const name = basename(path);
  if (name.endsWith(".browser.test.ts")) return "browser";
  if (name.endsWith(".conformance.test.ts")) return "conformance";
  return "unit";
}

function testFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    if (name === "node_modules" || name === "dist" || name.startsWith(".")) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...testFiles(path));
    else if (name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

function run(cmd, args) {
  const result = spawnSync(cmd, args, { stdio: "inherit" });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

function fail(message) {
  console.error(message);
  process.exit(1);
}

const args = process.argv.slice(2);
let suite;
const suiteAt = args.indexOf("--suite");
if (suiteAt >= 0) {
  suite = args[suiteAt + 1];
  if (!SUITES.includes(suite))
    fail(`--suite must be one of ${SUITES.join(", ")}; found ${suite ?? "nothing"}`);
  args.splice(suiteAt, 2);
}
// Two files at a time by default, on any number of cores: most of a test file's time is spent
// waiting on other processes (Python, Chromium, Slurm, moto, the built command), so two files keep
// two cores busy where one leaves them half idle. node's own default (cores - 1) is one on 2 cores.
let jobs = 2;
const jobsAt = args.indexOf("--jobs");
if (jobsAt >= 0) {
  jobs = Number(args[jobsAt + 1]);
  if (!Number.isInteger(jobs) || jobs < 1)
    fail(`--jobs must be a whole number of files, found ${args[jobsAt + 1]}`);
  args.splice(jobsAt, 2);
}
const compiledFlag = args.includes("--compiled");
if (compiledFlag) args.splice(args.indexOf("--compiled"), 1);
const listOnly = args.includes("--list");
if (listOnly) args.splice(args.indexOf("--list"), 1);
const roots = args;
const everything = roots.length === 0 && suite === undefined;
const compiled = everything || compiledFlag;

// Test files live in a test/ folder of the package they test (python/test/ included), except two
// kept beside the harness they exercise: bench/faults/ (the fault campaign's bounded mode: the
// classes run.ts runs at length, judged by the same code) and test-utils/ (the helpers' own tests).
const ROOTS = ["packages", "apps", "conformance", "bench", "test-utils", "python"];
const all = (roots.length === 0 ? ROOTS : roots).flatMap((r) =>
  statSync(r).isDirectory() ? testFiles(r) : [r],
);
const misnamed = all.flatMap((path) => {
  if (suiteOf(path) !== "unit") return [];
  const text = readFileSync(path, "utf8");
  const hit = NOT_UNIT.find(({ re }) => re.test(text));
  return hit ? [`  ${path} uses ${text.match(hit.re)[0]}: rename it to *.${hit.suite}.test.ts`] : [];
});
if (misnamed.length > 0) {
  fail(
    `these test files are named as unit tests but need more than \`npm ci\`:\n${misnamed.join("\n")}\n` +
      "(the suite of a test file is in its name: see scripts/test.mjs)",
  );
}

// The slowest files first, then the slow suites: with two files at a time, the many short unit
// files then fill the lane beside the last long file instead of one long file running alone at
// the end. The Python package's tests take about 4 minutes, the fault campaign's bounded mode 2.
const SLOWEST = ["python/test/pytest.conformance.test.ts", "bench/faults/faults.conformance.test.ts"];
const ORDER = ["conformance", "browser", "unit"];
const rankOf = (path) => {
  const slow = SLOWEST.findIndex((s) => path.endsWith(s));
  return slow >= 0 ? slow - SLOWEST.length : ORDER.indexOf(suiteOf(path));
};
const files = (suite === undefined ? all : all.filter((path) => suiteOf(path) === suite))
  .map((path, at) => ({ path, at, rank: rankOf(path) }))
  .sort((a, b) => a.rank - b.rank || a.at - b.at)
  .map(({ path }) => path);
if (files.length === 0) {
  fail(
    `no ${suite ?? ""}${suite ? " " : ""}test files under ${(roots.length > 0 ? roots : ROOTS).join(", ")}`,
  );
}
if (listOnly) {
  for (const path of files) console.log(`${suiteOf(path).padEnd(12)} ${path}`);
  process.exit(0);
}
if (everything) {
  run("npx", ["tsc", "-p", "tsconfig.check.json"]);
  run("npx", ["tsc", "-p", "tsconfig.browser.json"]);
  run("npx", ["biome", "check", "."]);
}
if (compiled) run("npx", ["tsc", "-b"]);
// A hang must fail with a name, not run into CI's own time limit and say nothing. Node applies
// --test-timeout to each test file as a whole (the file is one test of the runner): a file that runs
// past FILE_TIMEOUT_MS, e.g. one whose process does not exit after its tests (a leaked timer or
// worker), fails under its own name and the run goes on. RUN_TIMEOUT_MS stops everything else. The
// slowest file takes about 4 minutes.
const FILE_TIMEOUT_MS = 15 * 60_000;
const RUN_TIMEOUT_MS = 50 * 60_000;
const result = spawnSync(
  process.execPath,
  [
    "--import",
    "tsx",
    "--conditions=source",
    "--test",
    `--test-timeout=${FILE_TIMEOUT_MS}`,
    `--test-concurrency=${jobs}`,
    ...files,
  ],
  {
    stdio: "inherit",
    timeout: RUN_TIMEOUT_MS,
    killSignal: "SIGTERM",
    env: compiled ? { ...process.env, DELTACELLS_TEST_COMMAND: "compiled" } : process.env,
  },
);
if (result.error?.code === "ETIMEDOUT" || result.signal === "SIGTERM") {
  fail(
    `the tests did not finish within ${RUN_TIMEOUT_MS / 60_000} minutes and were stopped: a test file ` +
      "kept its process alive after its tests, or the machine is far slower than 2 idle cores.",
  );
}
process.exit(result.status ?? 1);
