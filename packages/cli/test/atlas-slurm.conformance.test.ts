/**
 * An atlas built on a real scheduler, as docs/atlas.md tells a user to: the documented Slurm
 * script (examples/atlas/atlas-slurm.sh) submitted to a private one-node Slurm cluster
 * (test-utils/slurm.ts: munged, slurmctld, slurmd) chains a scan array over seven inputs written by
 * anndata (conformance/atlas_inputs.py: gene sets and obs schemas that differ), the merge, three
 * conversion tasks and finalize with --dependency=afterok, into moto S3. The jobs run the built
 * command from the PATH with the S3 settings in their environment, as on a cluster.
 *
 * One conversion task is cancelled (scancel) while it runs: its first tile written, its second held
 * back by a proxy in front of moto, so the kill lands mid-way at a known point rather than by
 * timing. finalize then never runs (afterok); run by hand it is refused, naming the task. The task
 * resubmitted alone (the script's --rerun) and finalize --sporadik after it give a dataset that
 * validates, equals the one-process `convert --sporadik` byte for byte (companion, statistics and
 * rows in embedding order included), and equals anndata.concat(join="outer") of the inputs
 * (conformance/atlas_check.py).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { openStore } from "@deltacells/storage/node";
import { type AtlasInputs, writeAtlasInputs } from "../../../test-utils/atlas-inputs.js";
import {
  type SlurmCluster,
  type SlurmTask,
  startSlurm,
  taskOf,
  taskStates,
} from "../../../test-utils/slurm.js";
import { FaultProxy } from "../../storage/test/helpers/fault-proxy.js";
import { cli, filesUnder, PYTHON, REPO, tempDir } from "./cli-helpers.js";
import { motoBucket } from "./s3-helpers.js";

const BUCKET = "atlas-slurm";
const OUT = `s3://${BUCKET}/atlas`;
const SCRIPT = join(REPO, "examples/atlas/atlas-slurm.sh");
/** Small tiles and shards, so that seven small inputs make three tasks of several tiles each. */
const OPTIONS = ["--var-key", "gene_ids", "--tile-size", "64", "--obs-tiles-per-file", "2", "--level", "3"];
const TASKS = 3;
/** The task cancelled mid-way. */
const KILLED = 1;
const s3 = motoBucket(BUCKET);

/**
 * The jobs run the built command (node_modules/.bin/deltacells), as on a cluster: sources changed
 * since the last build would be tested as they were, so that is refused, saying what to run.
 */
function assertBuilt(): void {
  const newest = (dir: string): number =>
    Math.max(
      0,
      ...readdirSync(dir, { withFileTypes: true }).map((e) =>
        e.isDirectory() ? newest(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs,
      ),
    );
  for (const pkg of ["storage", "deltacells", "sporadik", "anndata", "cli"]) {
    const built = statSync(join(REPO, "packages", pkg, "dist/.tsbuildinfo"), { throwIfNoEntry: false });
    const source = newest(join(REPO, "packages", pkg, "src"));
    assert.ok(
      built !== undefined && built.mtimeMs >= source,
      `packages/${pkg}/src changed since the last build, and the Slurm jobs run the built command: run \`npm run build\` first`,
    );
  }
}

/** The job ids the script prints (`scan: job 12 (7 tasks); merge: job 13`, ...), by job. */
function jobsOf(printed: string): Record<string, string> {
  return Object.fromEntries([...printed.matchAll(/(\w+): job (\d+)/g)].map((m) => [m[1]!, m[2]!]));
}

const tileKey = (i: number) => `tiles/tile_${String(i).padStart(6, "0")}.dct`;

describe("an atlas built by the documented Slurm script on a one-node Slurm cluster, into S3", () => {
  let cluster: SlurmCluster;
  let atlas: AtlasInputs;
  let proxy: FaultProxy;
  let work: string;
  let list: string;
  /** The environment a user gives the script: the command on the PATH, S3 settings, threads. */
  let env: Record<string, string>;
  /** The tiles of the task cancelled mid-way. */
  let killedTiles: [number, number];
  const store = () => openStore(OUT, { env: s3.env() });
  const submit = async (...args: string[]) => {
    const printed = await cluster.run("bash", [SCRIPT, ...args], { env, cwd: work });
    return jobsOf(printed);
  };

  before(async () => {
    assertBuilt();
    work = tempDir();
    [cluster, atlas] = await Promise.all([startSlurm(), writeAtlasInputs(join(work, "inputs"))]);
    proxy = await FaultProxy.start(s3.env().AWS_ENDPOINT_URL!);
    list = join(work, "inputs.txt");
    writeFileSync(list, `# seven studies\n${atlas.inputs.map((i) => i.path).join("\n")}\n`);
    env = {
      ...s3.env(),
      AWS_ENDPOINT_URL: proxy.url,
      // One core per conversion task: the node has two, and a task asks for THREADS of them.
      THREADS: "1",
      // finalize's memory as the other jobs ask for it: the node offers half the machine's.
      FINALIZE_MEM: "2G",
      PATH: [join(REPO, "node_modules/.bin"), dirname(process.execPath), process.env.PATH].join(":"),
    };
    // The plan is a function of the inputs and options: made here, it says which tiles each task writes.
    const probe = join(work, "probe");
    const planned = await cli(
      "plan",
      "--inputs",
      list,
      probe,
      "--tasks",
      String(TASKS),
      ...OPTIONS,
      "--quiet",
    );
    assert.equal(planned.code, 0, planned.stderr);
    const plan = JSON.parse(readFileSync(join(probe, ".deltacells-atlas/plan.json"), "utf8")) as {
      tasks: { tiles: [number, number] }[];
    };
    killedTiles = plan.tasks[KILLED]!.tiles;
    assert.ok(killedTiles[1] - killedTiles[0] >= 2, `task ${KILLED} writes several tiles: ${killedTiles}`);
  });
  after(async () => {
    await cluster?.stop();
    await proxy?.stop();
  });

  test("its four jobs run in order (a scan array of 7, the merge, 3 conversion tasks, afterok each), and with one conversion task cancelled mid-way finalize never runs", async (t) => {
    const started = Date.now();
    // Task 1's second tile is held back: it stays running, its first tile written, until cancelled.
    const held = `/${BUCKET}/atlas/${tileKey(killedTiles[0] + 1)}`;
    proxy.rule = ({ method, path }) => (method === "PUT" && path === held ? "stall" : undefined);
    const jobs = await submit(list, OUT, String(TASKS), ...OPTIONS);
    assert.deepEqual(Object.keys(jobs), ["scan", "merge", "convert", "finalize"]);

    await cluster.waitFor(
      jobs.convert!,
      (now) =>
        now.some((x) => x.arrayTaskId === KILLED && x.state === "RUNNING") &&
        proxy.seen.some((r) => r.fault === "stall"),
      { what: `task ${KILLED} to write its second tile` },
    );
    const first = tileKey(killedTiles[0]);
    for (let k = 0; (await store().get(first)) === undefined; k++) {
      assert.ok(k < 600, `${first} written before the second was held`);
      await new Promise((r) => setTimeout(r, 100));
    }
    await cluster.scancel(jobs.convert!, KILLED);

    const converted = await cluster.wait(jobs.convert!);
    assert.deepEqual(taskStates(converted), { 0: "COMPLETED", 1: "CANCELLED", 2: "COMPLETED" });
    const final = taskOf(await cluster.wait(jobs.finalize!));
    assert.equal(final.state, "CANCELLED");
    assert.equal(final.reason, "DependencyNeverSatisfied");

    const scans = await cluster.wait(jobs.scan!);
    assert.deepEqual(
      scans.map((x) => [x.arrayTaskId, x.state]),
      atlas.inputs.map((_, i) => [i, "COMPLETED"]),
    );
    const merge = taskOf(await cluster.wait(jobs.merge!));
    assert.equal(merge.state, "COMPLETED");
    const ends = (tasks: SlurmTask[]) => Math.max(...tasks.map((x) => x.endTime!.getTime()));
    assert.ok(merge.startTime!.getTime() >= ends(scans), "the merge started after every scan ended");
    for (const x of converted)
      assert.ok(x.startTime!.getTime() >= merge.endTime!.getTime(), `conversion ${x.id} after the merge`);
    assert.match(cluster.output(taskOf(scans, 3)), /scanned input 3 of 7: .*chr21-b\.zarr/);

    const keys = await store().list();
    assert.ok(keys.includes(first) && !keys.includes(tileKey(killedTiles[0] + 1)), "cancelled mid-way");
    assert.ok(!keys.includes(`.deltacells-atlas/tasks/task_00000${KILLED}.json`), "without its record");
    assert.ok(!keys.includes("manifest.json"));
    t.diagnostic(`scan, merge and conversion on Slurm: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });

  test("finalize submitted with the cancelled task missing fails, naming that task and the command that runs it again, and writes nothing", async () => {
    const before = await store().list();
    const job = await cluster.sbatch({ wrap: `deltacells finalize ${OUT}`, env });
    const done = taskOf(await cluster.wait(job));
    assert.equal(done.state, "FAILED");
    assert.equal(done.exitCode, 1);
    const output = cluster.output(done);
    assert.match(
      output,
      new RegExp(
        `1 of the ${TASKS} tasks is not done, so the atlas was not finalized \\(nothing was written\\): task ${KILLED}: no completion record .*Run it again: deltacells convert --plan ${OUT} --task ${KILLED}`,
      ),
    );
    assert.deepEqual(await store().list(), before);
  });

  test("the cancelled task resubmitted alone (the script's --rerun) and finalize --sporadik after it make a dataset that validates, equals the one-process convert --sporadik byte for byte, and equals anndata.concat(join='outer') of the inputs", async (t) => {
    const started = Date.now();
    proxy.rule = undefined;
    const jobs = await submit("--rerun", String(KILLED), OUT);
    assert.deepEqual(Object.keys(jobs), ["convert", "finalize"]);
    assert.deepEqual(taskStates(await cluster.wait(jobs.convert!)), { [KILLED]: "COMPLETED" });
    const final = taskOf(await cluster.wait(jobs.finalize!));
    assert.equal(final.state, "COMPLETED", cluster.output(final));
    assert.match(cluster.output(final), new RegExp(`finalized ${OUT}: ${TASKS} tasks checked`));
    t.diagnostic(`the rerun and finalize on Slurm: ${((Date.now() - started) / 1000).toFixed(1)} s`);

    const once = join(work, "once");
    const converted = await cli("convert", "--inputs", list, once, ...OPTIONS, "--sporadik", "--quiet");
    assert.equal(converted.code, 0, converted.stderr);
    const want = filesUnder(once);
    const keys = await store().list();
    assert.deepEqual(keys, [...want.keys()]);
    const copy = join(work, "from-s3");
    for (const key of keys) {
      const bytes = Buffer.from((await store().get(key))!);
      assert.ok(bytes.equals(want.get(key)!), `${key} is the one-process conversion's`);
      mkdirSync(dirname(join(copy, key)), { recursive: true });
      writeFileSync(join(copy, key), bytes);
    }

    const valid = await s3("validate", OUT);
    assert.equal(valid.code, 0, valid.stderr);
    const check = JSON.parse(
      execFileSync(
        PYTHON,
        [join(REPO, "conformance/atlas_check.py"), copy, atlas.expected.byGeneIds.path, atlas.sourceColumn],
        { encoding: "utf8" },
      ),
    ) as { problems: string[]; n_cells: number };
    assert.deepEqual(check.problems, []);
    assert.equal(check.n_cells, atlas.expected.byGeneIds.nObs);
  });
});
