// The private Slurm cluster of test-utils/slurm.ts, proved on the real scheduler: array jobs,
// afterok dependencies, cancelling and resubmitting one task, and a stop that leaves nothing behind.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { type SlurmCluster, startSlurm, taskOf, taskStates } from "./slurm.js";

/** Each task writes `$OUT/<task id>.txt`; the task named by `$BLOCK` first waits, as if stuck. */
const WRITER = `#!/bin/sh
#SBATCH --job-name=writer
set -e
echo "started $SLURM_ARRAY_TASK_ID" > "$OUT/started-$SLURM_ARRAY_TASK_ID"
if [ "$SLURM_ARRAY_TASK_ID" = "$BLOCK" ]; then sleep 300; fi
echo "task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_TASK_COUNT on $SLURMD_NODENAME" > "$OUT/$SLURM_ARRAY_TASK_ID.txt"
echo "wrote $SLURM_ARRAY_TASK_ID"
`;

/** Whether a process is gone (a zombie no one reaps counts as gone: it runs nothing). */
function gone(pid: number) {
  try {
    return /^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true;
  }
}

describe("a private one-node Slurm cluster", () => {
  let cluster: SlurmCluster;
  let work: string;
  let folder = 0;
  /** A new empty folder for one test's job outputs. */
  const outDir = async () => {
    const dir = join(work, `out-${++folder}`);
    await mkdir(dir);
    return dir;
  };

  let startMs = 0;

  before(async () => {
    const started = Date.now();
    cluster = await startSlurm();
    startMs = Date.now() - started;
    work = await mkdtemp(join(tmpdir(), "slurm-test-"));
  });
  after(async () => {
    await cluster?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  test("an array of four tasks writes one file per SLURM_ARRAY_TASK_ID, and a job after it (afterok) runs once all four succeeded", async (t) => {
    t.diagnostic(`the cluster started in ${startMs} ms (${cluster.cpus} CPUs)`);
    const out = await outDir();
    const array = await cluster.sbatch({
      scriptText: WRITER,
      array: "0-3",
      env: { OUT: out, BLOCK: "none" },
    });
    assert.deepEqual(array.array, [0, 1, 2, 3]);
    const next = await cluster.sbatch({
      name: "after",
      dependency: `afterok:${array.id}`,
      wrap: `ls "$OUT" | grep -v started`,
      env: { OUT: out },
    });
    const waiting = taskOf(await cluster.tasks(next));
    assert.equal(waiting.state, "PENDING");
    assert.equal(waiting.reason, "Dependency");

    const tasks = await cluster.wait(array);
    assert.deepEqual(taskStates(tasks), { 0: "COMPLETED", 1: "COMPLETED", 2: "COMPLETED", 3: "COMPLETED" });
    for (const t of tasks) {
      const k = t.arrayTaskId!;
      assert.equal(t.id, `${array.id}_${k}`);
      assert.equal(t.exitCode, 0);
      assert.equal(t.fields.JobName, "writer", "the script's #SBATCH lines are honoured");
      assert.equal(readFileSync(join(out, `${k}.txt`), "utf8"), `task ${k} of 4 on ${cluster.node}\n`);
      assert.equal(cluster.output(t), `wrote ${k}\n`);
    }

    const done = taskOf(await cluster.wait(next));
    assert.equal(done.state, "COMPLETED");
    assert.equal(cluster.output(done), "0.txt\n1.txt\n2.txt\n3.txt\n");
    const lastEnd = Math.max(...tasks.map((t) => t.endTime!.getTime()));
    assert.ok(done.startTime!.getTime() >= lastEnd, "the dependent job started after the last task ended");
  });

  test("a job after an array (afterok) never runs when one of its tasks fails", async () => {
    const out = await outDir();
    const array = await cluster.sbatch({
      array: "0-3",
      wrap: `[ "$SLURM_ARRAY_TASK_ID" != 2 ] || exit 3`,
    });
    const next = await cluster.sbatch({
      dependency: `afterok:${array.id}`,
      wrap: `touch "$OUT/ran"`,
      env: { OUT: out },
    });
    const tasks = await cluster.wait(array);
    assert.deepEqual(taskStates(tasks), { 0: "COMPLETED", 1: "COMPLETED", 2: "FAILED", 3: "COMPLETED" });
    assert.equal(taskOf(tasks, 2).exitCode, 3);
    const never = taskOf(await cluster.wait(next));
    assert.equal(never.state, "CANCELLED");
    assert.equal(never.reason, "DependencyNeverSatisfied");
    assert.equal(existsSync(join(out, "ran")), false);
  });

  test("one task cancelled while it runs ends CANCELLED, the others complete, and resubmitted alone it completes and satisfies afterok", async () => {
    const out = await outDir();
    const array = await cluster.sbatch({ scriptText: WRITER, array: "0-3", env: { OUT: out, BLOCK: "2" } });
    const blocked = await cluster.sbatch({ dependency: `afterok:${array.id}`, wrap: "true" });
    await cluster.waitFor(
      array,
      (now) => taskOf(now, 2).state === "RUNNING" && existsSync(join(out, "started-2")),
      {
        what: "task 2 to run",
      },
    );
    await cluster.scancel(array, 2);

    const tasks = await cluster.wait(array);
    assert.deepEqual(taskStates(tasks), { 0: "COMPLETED", 1: "COMPLETED", 2: "CANCELLED", 3: "COMPLETED" });
    assert.deepEqual(
      readdirSync(out)
        .filter((f) => f.endsWith(".txt"))
        .sort(),
      ["0.txt", "1.txt", "3.txt"],
    );
    const cancelled = taskOf(tasks, 2);
    assert.doesNotMatch(cluster.output(cancelled), /wrote/, "the cancelled task stopped before writing");
    assert.match(cluster.output(cancelled), /CANCELLED/, "slurmstepd says why it ended");
    assert.equal(taskOf(await cluster.wait(blocked)).state, "CANCELLED");

    const again = await cluster.sbatch({ scriptText: WRITER, array: "2", env: { OUT: out, BLOCK: "none" } });
    const next = await cluster.sbatch({ dependency: `afterok:${again.id}`, wrap: "echo after the rerun" });
    const rerun = await cluster.wait(again);
    assert.deepEqual(taskStates(rerun), { 2: "COMPLETED" });
    assert.notEqual(taskOf(rerun, 2).jobId, cancelled.jobId);
    assert.equal(readFileSync(join(out, "2.txt"), "utf8"), `task 2 of 1 on ${cluster.node}\n`);
    const done = taskOf(await cluster.wait(next));
    assert.equal(done.state, "COMPLETED");
    assert.equal(cluster.output(done), "after the rerun\n");
  });

  test("a task cancelled before it starts, of which Slurm keeps no record, is listed as CANCELLED", async () => {
    const array = await cluster.sbatch({ array: "0-3", wrap: "true", args: ["--hold"] });
    await cluster.scancel(array, 1);
    await cluster.run("scontrol", ["release", array.id]);
    const tasks = await cluster.wait(array);
    assert.deepEqual(taskStates(tasks), { 0: "COMPLETED", 1: "CANCELLED", 2: "COMPLETED", 3: "COMPLETED" });
    assert.equal(taskOf(tasks, 1).reason, "NoRecord");
  });

  test("a script's own #SBATCH --array and --output apply when the submission gives none", async () => {
    const out = await outDir();
    const script = `#!/bin/sh\n#SBATCH --array=0-2\n#SBATCH --output=${out}/task-%a.log\necho "I am $SLURM_ARRAY_TASK_ID"\n`;
    const array = await cluster.sbatch({ scriptText: script, output: false, args: ["--hold"] });
    assert.deepEqual(array.array, [0, 1, 2], "the tasks the script asked for");
    await cluster.scancel(array, 2);
    await cluster.run("scontrol", ["release", array.id]);
    const tasks = await cluster.wait(array);
    assert.deepEqual(taskStates(tasks), { 0: "COMPLETED", 1: "COMPLETED", 2: "CANCELLED" });
    assert.equal(taskOf(tasks, 1).stdout, join(out, "task-1.log"));
    assert.equal(cluster.output(taskOf(tasks, 1)), "I am 1\n");
  });

  test("stop() cancels what still runs, stops munged, slurmctld and slurmd, and leaves no process and no folder behind", async (t) => {
    const out = await outDir();
    const long = await cluster.sbatch({ wrap: `touch "$OUT/up"; sleep 300`, env: { OUT: out } });
    await cluster.waitFor(long, (now) => taskOf(now).state === "RUNNING" && existsSync(join(out, "up")), {
      what: "the job to run",
    });
    const running = await cluster.processes();
    const commands = running.map((p) => p.command).join("\n");
    for (const expected of ["munged", "slurmctld", "slurmd", "slurmstepd", "sleep 300"])
      assert.match(commands, new RegExp(expected), `${expected} among the cluster's processes`);

    const stopping = Date.now();
    await cluster.stop();
    t.diagnostic(`stopped in ${Date.now() - stopping} ms`);
    const left = running.filter((p) => !gone(p.pid));
    assert.deepEqual(left, [], "every process the cluster had is gone");
    assert.deepEqual(await cluster.processes(), []);
    assert.equal(existsSync(cluster.dir), false);
    await cluster.stop(); // a second stop does nothing
  });
});
