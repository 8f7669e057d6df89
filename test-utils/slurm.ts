/**
 * A private one-node Slurm cluster for tests: munged, slurmctld and slurmd started in a temporary
 * folder with their own configuration (`SLURM_CONF`), key, state, spool and log folders and free
 * ports, so jobs are submitted, scheduled, run and cancelled by the real scheduler, as on a cluster.
 * Nothing system-wide is read or changed: the Slurm commands run by the helpers below see only this
 * cluster. Every daemon runs as the user running the test (root in CI, anyone else elsewhere), so
 * no privilege is needed once the programs are installed (`scripts/setup-slurm.mjs`, which
 * `npm test` and `npm run test:conformance` run first).
 *
 * Accounting (slurmdbd, hence `sacct`) is not configured: a job's tasks and their end states come
 * from `scontrol show job`, whose records are kept for an hour after a job ends (`MinJobAge`).
 *
 * The daemons run under tied-child.mjs, like the test servers: a test process that dies without
 * calling `stop()` takes them with it (a job then running finishes on its own, unsupervised).
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { accessSync, constants, existsSync, readFileSync } from "node:fs";
import { chmod, mkdir, mkdtemp, open, readdir, readFile, readlink, rm, writeFile } from "node:fs/promises";
import { availableParallelism, hostname, tmpdir, totalmem } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "./servers.js";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const tiedChild = join(repoRoot, "test-utils/tied-child.mjs");

/** The programs the harness runs; all are in Debian's `slurm-wlm` and `munge` packages. */
const DAEMONS = ["munged", "slurmctld", "slurmd"] as const;
const COMMANDS = ["sbatch", "squeue", "scontrol", "scancel", "sinfo"] as const;
type Program = (typeof DAEMONS)[number] | (typeof COMMANDS)[number];

/** Where a program is: the PATH first, then the system folders a user's PATH often lacks. */
function which(program: string): string | undefined {
  const dirs = [...(process.env.PATH ?? "").split(delimiter), "/usr/sbin", "/usr/bin", "/sbin", "/bin"];
  for (const dir of dirs) {
    if (dir === "") continue;
    const path = join(dir, program);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {}
  }
  return undefined;
}

/**
 * The Slurm and munge programs this machine lacks (empty when the harness can start), so a test
 * can say what is missing before it begins.
 */
export function missingSlurmPrograms(): string[] {
  return [...DAEMONS, ...COMMANDS].filter((p) => which(p) === undefined);
}

/** A job state after which the job will not run again (Slurm's base states, `JOB_STATE_BASE`). */
export const FINISHED_STATES = new Set([
  "BOOT_FAIL",
  "CANCELLED",
  "COMPLETED",
  "DEADLINE",
  "FAILED",
  "NODE_FAIL",
  "OUT_OF_MEMORY",
  "PREEMPTED",
  "TIMEOUT",
]);

/** One task of a job as `scontrol show job` reports it (a job without `--array` has one task). */
export interface SlurmTask {
  /** `12_3` for task 3 of array job 12; `12` for a job submitted without `--array`. */
  id: string;
  /** The job id Slurm gave this task (an array's tasks each get their own once they start). */
  jobId: string;
  /** The array's id (what `sbatch --parsable` printed) when the job is an array. */
  arrayJobId?: string;
  /** `SLURM_ARRAY_TASK_ID` of this task. */
  arrayTaskId?: number;
  /** PENDING, RUNNING, COMPLETING, COMPLETED, FAILED, CANCELLED, TIMEOUT... */
  state: string;
  /** Why it waits or ended so: `None`, `Dependency`, `DependencyNeverSatisfied`, `NonZeroExitCode`... */
  reason: string;
  /** The batch script's exit status, and the signal that ended it (0 for none). */
  exitCode: number;
  signal: number;
  /** The output file (stdout; stderr too unless the job was given its own `--error`). */
  stdout?: string;
  stderr?: string;
  startTime?: Date;
  endTime?: Date;
  /** Every field of the record, as printed (`JobState`, `NodeList`, `Dependency`...). */
  fields: Record<string, string>;
}

/** Task `k` of an array's tasks, or the one task of a job without `--array` (asserted to be one). */
export function taskOf(tasks: SlurmTask[], k?: number): SlurmTask {
  const found = k === undefined ? tasks : tasks.filter((t) => t.arrayTaskId === k);
  if (found.length !== 1)
    throw new Error(
      `expected one task ${k ?? ""} among ${tasks.map((t) => t.id).join(", ")}, found ${found.length}`,
    );
  return found[0]!;
}

/** Each task's state, by its array index (or job id without `--array`). */
export function taskStates(tasks: SlurmTask[]): Record<string, string> {
  return Object.fromEntries(tasks.map((t) => [t.arrayTaskId ?? t.id, t.state]));
}

export interface SbatchOptions {
  /** A batch script file to submit (`#SBATCH` lines in it are honoured, as on a cluster). */
  script?: string;
  /** The text of a batch script: written into the cluster's folder and submitted. */
  scriptText?: string;
  /** A command line for `sbatch --wrap` (run by /bin/sh). */
  wrap?: string;
  /** Arguments after the script. */
  scriptArgs?: string[];
  /** `--array`: `0-3`, `2`, `1,5`, `0-99%4`. */
  array?: string;
  /** `--dependency`: `afterok:12`, `afterok:12:13`, `afterany:12_3`. */
  dependency?: string;
  /** `--job-name`. */
  name?: string;
  /**
   * Variables set in the job's environment on top of the test's own (sbatch exports the
   * submitter's environment, `--export=ALL`, which is Slurm's default).
   */
  env?: Record<string, string>;
  /** The folder sbatch runs in, which is the job's working folder (default: this process's). */
  cwd?: string;
  /**
   * `--output` pattern (`%A` array id, `%a` task, `%j` job id, `%x` name). Default: the cluster's
   * `out/` folder, `%x-%A_%a.out` for an array and `%x-%j.out` otherwise. `false` passes no
   * `--output`: the script's `#SBATCH --output`, or Slurm's `slurm-%A_%a.out` in `cwd`, applies.
   */
  output?: string | false;
  /** `--error` pattern; by default errors go to the output file, as with sbatch. */
  error?: string;
  /** More sbatch options, passed as they are (`--time=1`, `--cpus-per-task=2`...). */
  args?: string[];
}

/** A submitted job: its id and, for an array (`--array` or `#SBATCH --array`), its task ids. */
export interface SlurmJob {
  id: string;
  array?: number[];
}

export interface WaitOptions {
  /** Fail after this long (default 5 minutes: a loaded machine schedules slowly, never that slowly). */
  timeoutMs?: number;
  /** What is awaited, for the timeout's message. */
  what?: string;
}

export interface SlurmCluster {
  /** The cluster's private folder: `slurm.conf`, `munge/`, `state/`, `spool/`, `log/`, `out/`. */
  dir: string;
  /** Its configuration file (what `SLURM_CONF` points at). */
  conf: string;
  /** The node's name (`SLURMD_NODENAME` in jobs) and CPUs (how many one-CPU tasks run at once). */
  node: string;
  cpus: number;
  /**
   * The environment for running Slurm commands against this cluster: the test's own without any
   * `SLURM_*`/`SBATCH_*`/`SQUEUE_*` variable it came with, plus `SLURM_CONF`.
   */
  env: NodeJS.ProcessEnv;
  /** Runs a Slurm command (`squeue`, `scontrol`...) against this cluster; its stdout. */
  run(
    program: string,
    args: string[],
    options?: { env?: Record<string, string>; cwd?: string },
  ): Promise<string>;
  /** Submits a batch job (`sbatch --parsable`); resolves once Slurm accepted it. */
  sbatch(options: SbatchOptions): Promise<SlurmJob>;
  /**
   * The tasks of a job now, in task order (an array's pending remainder listed task by task).
   * Given the `SlurmJob` that `sbatch` returned, a task cancelled while pending, of which Slurm
   * keeps no record, is listed as CANCELLED with reason `NoRecord`; given only an id, it is absent.
   */
  tasks(job: SlurmJob | string): Promise<SlurmTask[]>;
  /** Waits until `ready(tasks)` holds; the tasks then. */
  waitFor(
    job: SlurmJob | string,
    ready: (tasks: SlurmTask[]) => boolean,
    options?: WaitOptions,
  ): Promise<SlurmTask[]>;
  /** Waits until every task of the job has finished (a state of `FINISHED_STATES`); its tasks. */
  wait(job: SlurmJob | string, options?: WaitOptions): Promise<SlurmTask[]>;
  /** `scancel` of a job, of every task of an array, or of one task of an array (`task`). */
  scancel(job: SlurmJob | string, task?: number): Promise<void>;
  /** The text of a task's output file (throws, naming the file and the task's state, if there is none). */
  output(task: SlurmTask): string;
  /** The last lines of each daemon's log, for a failure's message. */
  logs(lines?: number): string;
  /** Processes of this cluster still alive: daemons, job steps, the jobs' own processes. */
  processes(): Promise<{ pid: number; command: string }[]>;
  /**
   * Cancels every job, stops the daemons (SIGTERM, then SIGKILL), kills any process of the
   * cluster still alive and removes the folder. Safe to call twice.
   */
  stop(): Promise<void>;
}

export interface StartSlurmOptions {
  /** CPUs of the node (default: this machine's). */
  cpus?: number;
  /** How long the node may take to become idle (default 60 s). */
  timeoutMs?: number;
}

const MiB = 1024 * 1024;

function sleep(ms: number) {
  return new Promise((r) => setTimeout(r, ms));
}

/** The test's environment without what would point Slurm commands at another cluster or job. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(SLURM|SBATCH|SQUEUE|SINFO|SCANCEL|SCONTROL|SRUN|SALLOC)_/.test(key)) continue;
    env[key] = value;
  }
  return env;
}

function slurmConf(o: {
  dir: string;
  user: string;
  controller: string;
  node: string;
  cpus: number;
  memoryMiB: number;
  ctldPort: number;
  slurmdPort: number;
}): string {
  const d = o.dir;
  return [
    "# A private one-node cluster for tests (test-utils/slurm.ts).",
    "ClusterName=deltacells-test",
    // slurmctld checks that it runs on the host named here; the address keeps everything on
    // the loopback interface, whatever the host name resolves to.
    `SlurmctldHost=${o.controller}(127.0.0.1)`,
    `SlurmctldPort=${o.ctldPort}`,
    `SlurmdPort=${o.slurmdPort}`,
    `SlurmUser=${o.user}`,
    `SlurmdUser=${o.user}`,
    "AuthType=auth/munge",
    "CredType=cred/munge",
    `AuthInfo=socket=${d}/munge/munge.socket`,
    `StateSaveLocation=${d}/state`,
    `SlurmdSpoolDir=${d}/spool`,
    `SlurmctldPidFile=${d}/run/slurmctld.pid`,
    `SlurmdPidFile=${d}/run/slurmd.pid`,
    `SlurmctldLogFile=${d}/log/slurmctld.log`,
    `SlurmdLogFile=${d}/log/slurmd.log`,
    "ProctrackType=proctrack/linuxproc",
    "TaskPlugin=task/none",
    "MpiDefault=none",
    "MailProg=/bin/true",
    // The FIFO scheduler starts a task as soon as a CPU frees up.
    "SchedulerType=sched/builtin",
    "SchedulerParameters=batch_sched_delay=0,sched_interval=1",
    "SelectType=select/cons_tres",
    "SelectTypeParameters=CR_Core",
    "ReturnToService=2",
    // The node as configured here, whatever cores the hardware reports (containers, CPU limits).
    "SlurmdParameters=config_overrides",
    // A cancelled task gets SIGTERM, then SIGKILL this many seconds later.
    "KillWait=3",
    // Ended jobs stay visible to `scontrol show job` for an hour: there is no accounting database.
    "MinJobAge=3600",
    // A job whose dependency can no longer be met (afterok on a failed task) ends CANCELLED
    // instead of pending for ever, so waiting for it ends.
    "DependencyParameters=kill_invalid_depend",
    `NodeName=${o.node} NodeAddr=127.0.0.1 CPUs=${o.cpus} RealMemory=${o.memoryMiB} State=UNKNOWN`,
    `PartitionName=main Nodes=${o.node} Default=YES MaxTime=INFINITE State=UP`,
    "",
  ].join("\n");
}

/** `1,3-5%2` (an array's task ids, with an optional limit of tasks run at once) as numbers. */
export function parseArraySpec(spec: string): number[] {
  const ids: number[] = [];
  for (const part of spec.replace(/%\d+$/, "").split(",")) {
    const m = /^(\d+)(?:-(\d+)(?::(\d+))?)?$/.exec(part.trim());
    if (m === null) throw new Error(`not an array of task ids: ${JSON.stringify(spec)}`);
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    const step = m[3] === undefined ? 1 : Number(m[3]);
    for (let k = from; k <= to; k += step) ids.push(k);
  }
  return ids;
}

/** The fields of one record of `scontrol show job -o` (`Key=value` separated by spaces). */
export function parseRecord(line: string): Record<string, string> {
  const fields: Record<string, string> = {};
  // A key starts a word and holds no `=`; a value runs to the next key (values may hold spaces,
  // as a working folder's path can).
  const keys = [...line.matchAll(/(?:^|\s)([A-Za-z][\w:/]*)=/g)];
  keys.forEach((m, i) => {
    const start = m.index + m[0].length;
    const end = keys[i + 1]?.index ?? line.length;
    fields[m[1]!] = line.slice(start, end).trim();
  });
  return fields;
}

function time(value: string | undefined): Date | undefined {
  if (value === undefined || value === "Unknown" || value === "None" || value === "N/A") return undefined;
  const date = new Date(value); // local time, as scontrol prints it
  return Number.isNaN(date.getTime()) ? undefined : date;
}

function tasksOf(fields: Record<string, string>): SlurmTask[] {
  const [exit = 0, signal = 0] = (fields.ExitCode ?? "0:0").split(":").map(Number);
  const jobId = fields.JobId ?? "";
  const base = {
    jobId,
    state: (fields.JobState ?? "UNKNOWN").split(/\s/)[0] ?? "UNKNOWN",
    reason: fields.Reason ?? "",
    exitCode: exit,
    signal,
    startTime: time(fields.StartTime),
    endTime: time(fields.EndTime),
    fields,
  };
  const arrayJobId = fields.ArrayJobId;
  if (arrayJobId === undefined) {
    return [{ ...base, id: jobId, stdout: fields.StdOut, stderr: fields.StdErr }];
  }
  const ids = parseArraySpec(fields.ArrayTaskId ?? "");
  // A record of several tasks is the array's pending remainder: their files are not named yet.
  const files = ids.length === 1 ? { stdout: fields.StdOut, stderr: fields.StdErr } : {};
  return ids.map((k) => ({ ...base, ...files, id: `${arrayJobId}_${k}`, arrayJobId, arrayTaskId: k }));
}

function jobId(job: SlurmJob | string) {
  return typeof job === "string" ? job : job.id;
}

function describe(tasks: SlurmTask[]) {
  return tasks.map((t) => `${t.id} ${t.state} (${t.reason})`).join(", ") || "no task";
}

interface Daemon {
  name: string;
  process: ChildProcess;
  exited: Promise<void>;
  pidFile: string;
}

/**
 * Starts a private one-node cluster and resolves once its node is idle. Throws, saying what to
 * install, when Slurm or munge is missing, and with the daemons' logs when one does not start.
 */
export async function startSlurm(options: StartSlurmOptions = {}): Promise<SlurmCluster> {
  const missing = missingSlurmPrograms();
  if (missing.length > 0) {
    throw new Error(
      `the Slurm test cluster needs ${missing.join(", ")}, not found on this machine (PATH, /usr/sbin). ` +
        "Install them with `node scripts/setup-slurm.mjs` (apt-get install slurm-wlm munge; as root or " +
        "with passwordless sudo), which `npm test` and `npm run test:conformance` run first.",
    );
  }
  const program = (p: Program) => which(p)!;
  const cpus = options.cpus ?? availableParallelism();
  const user = (await execFileText("id", ["-un"], process.env)).trim();
  const node = "dcnode";
  // The parent folders of munge's socket must be searchable by anyone (munged checks), so the
  // folder is opened up from mkdtemp's 0700; its key stays readable by its owner only.
  const dir = await mkdtemp(join(tmpdir(), "deltacells-slurm-"));
  await chmod(dir, 0o755);
  for (const sub of ["munge", "state", "spool", "log", "run", "out", "scripts"])
    await mkdir(join(dir, sub), { mode: 0o755 });
  const key = join(dir, "munge/munge.key");
  await writeFile(key, randomBytes(1024), { mode: 0o400 });
  const conf = join(dir, "slurm.conf");
  await writeFile(
    conf,
    slurmConf({
      dir,
      user,
      controller: hostname().split(".")[0] ?? hostname(),
      node,
      cpus,
      memoryMiB: Math.max(512, Math.floor(totalmem() / MiB / 2)),
      ctldPort: await freePort(),
      slurmdPort: await freePort(),
    }),
  );
  const env: NodeJS.ProcessEnv = { ...cleanEnv(), SLURM_CONF: conf };

  const daemons: Daemon[] = [];
  const logFiles = ["munged.out", "slurmctld.out", "slurmd.out"].map((f) => join(dir, "log", f));
  const logs = (lines = 30) =>
    logFiles
      .filter((f) => existsSync(f))
      .map((f) => {
        const text = readFileSync(f, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
        return `--- ${f}\n${text}`;
      })
      .join("\n");

  const startDaemon = async (name: Program, args: string[], pidFile: string) => {
    const log = await open(join(dir, "log", `${name}.out`), "a");
    const child = spawn(process.execPath, [tiedChild, program(name), ...args], {
      stdio: ["pipe", log.fd, log.fd],
      env,
      detached: true,
    });
    await log.close();
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    daemons.push({ name, process: child, exited, pidFile });
  };

  let stopped = false;
  const run = async (
    name: string,
    args: string[],
    opts: { env?: Record<string, string>; cwd?: string } = {},
  ) => {
    try {
      return await execFileText(which(name) ?? name, args, { ...env, ...opts.env }, opts.cwd);
    } catch (err) {
      throw new Error(`${name} ${args.join(" ")} failed: ${(err as Error).message}`, { cause: err });
    }
  };

  const processes = () => clusterProcesses(dir, conf);

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    // Cancel every job first: a job step (slurmstepd and the job's processes) outlives slurmd.
    const ctld = daemons.find((d) => d.name === "slurmctld");
    if (ctld !== undefined && ctld.process.exitCode === null) {
      await run("scancel", ["--user", user]).catch(() => {});
      const deadline = Date.now() + 15_000;
      while (Date.now() < deadline) {
        const active = await run("squeue", ["-h", "-t", "RUNNING,COMPLETING", "-o", "%i"]).catch(() => "");
        if (active.trim() === "") break;
        await sleep(200);
      }
    }
    for (const name of ["slurmd", "slurmctld", "munged"]) {
      const d = daemons.find((x) => x.name === name);
      if (d === undefined) continue;
      await stopDaemon(d);
    }
    for (let round = 0; round < 20; round++) {
      const left = await processes();
      if (left.length === 0) break;
      for (const { pid } of left) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {}
      }
      await sleep(100);
    }
    await rm(dir, { recursive: true, force: true });
  };

  const failStart = async (message: string): Promise<never> => {
    const text = `${message}\n${logs()}`;
    await stop();
    throw new Error(text);
  };

  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  const socket = join(dir, "munge/munge.socket");
  await startDaemon(
    "munged",
    [
      "--foreground",
      `--socket=${socket}`,
      `--key-file=${key}`,
      `--pid-file=${join(dir, "run/munged.pid")}`,
      `--seed-file=${join(dir, "munge/munged.seed")}`,
      `--log-file=${join(dir, "log/munged.log")}`,
    ],
    join(dir, "run/munged.pid"),
  );
  while (!existsSync(socket)) {
    if (daemons[0]!.process.exitCode !== null) await failStart("munged exited before opening its socket");
    if (Date.now() > deadline) await failStart(`munged did not open ${socket} in time`);
    await sleep(50);
  }
  await startDaemon("slurmctld", ["-D", "-f", conf], join(dir, "run/slurmctld.pid"));
  await startDaemon("slurmd", ["-D", "-N", node, "-f", conf], join(dir, "run/slurmd.pid"));
  for (;;) {
    const dead = daemons.find((d) => d.process.exitCode !== null);
    if (dead !== undefined)
      await failStart(`${dead.name} exited with ${dead.process.exitCode} while starting`);
    const state = await run("sinfo", ["-h", "-N", "-o", "%T"]).catch(() => "");
    if (state.trim() === "idle") break;
    if (Date.now() > deadline)
      await failStart(`the node did not become idle in time (sinfo: ${state.trim()})`);
    await sleep(200);
  }

  const tasks = async (job: SlurmJob | string) => {
    const id = jobId(job);
    const text = await run("scontrol", ["show", "job", "-o", id]);
    const found = text
      .split("\n")
      .filter((line) => line.trim() !== "")
      .flatMap((line) => tasksOf(parseRecord(line)));
    // A pending task cancelled on its own leaves no record: Slurm just takes it out of the
    // array. A task asked for that no record lists was therefore cancelled before it started.
    const asked = typeof job === "string" ? [] : (job.array ?? []);
    for (const k of asked) {
      if (found.some((t) => t.arrayTaskId === k)) continue;
      found.push({
        id: `${id}_${k}`,
        jobId: id,
        arrayJobId: id,
        arrayTaskId: k,
        state: "CANCELLED",
        reason: "NoRecord",
        exitCode: 0,
        signal: 0,
        fields: {},
      });
    }
    return found.sort((a, b) => (a.arrayTaskId ?? 0) - (b.arrayTaskId ?? 0));
  };

  const waitFor = async (
    job: SlurmJob | string,
    ready: (tasks: SlurmTask[]) => boolean,
    opts: WaitOptions = {},
  ) => {
    const timeoutMs = opts.timeoutMs ?? 300_000;
    const until = Date.now() + timeoutMs;
    let now: SlurmTask[] = [];
    for (;;) {
      now = await tasks(job);
      if (ready(now)) return now;
      const dead = daemons.find((d) => d.process.exitCode !== null);
      if (dead !== undefined || Date.now() > until) {
        const why = dead !== undefined ? `${dead.name} exited` : `${timeoutMs} ms passed`;
        throw new Error(
          `job ${jobId(job)}: ${why} waiting for ${opts.what ?? "a state"}; its tasks: ${describe(now)}\n${logs()}`,
        );
      }
      await sleep(250);
    }
  };

  const cluster: SlurmCluster = {
    dir,
    conf,
    node,
    cpus,
    env,
    run,
    async sbatch(o) {
      const sources = [o.script, o.scriptText, o.wrap].filter((s) => s !== undefined).length;
      if (sources !== 1) throw new Error("sbatch: give exactly one of script, scriptText or wrap");
      const out = join(dir, "out", o.array === undefined ? "%x-%j.out" : "%x-%A_%a.out");
      const argv = ["--parsable"];
      if (o.output !== false) argv.push(`--output=${o.output ?? out}`);
      if (o.error !== undefined) argv.push(`--error=${o.error}`);
      if (o.name !== undefined) argv.push(`--job-name=${o.name}`);
      if (o.array !== undefined) argv.push(`--array=${o.array}`);
      if (o.dependency !== undefined) argv.push(`--dependency=${o.dependency}`);
      argv.push(...(o.args ?? []));
      if (o.wrap !== undefined) argv.push(`--wrap=${o.wrap}`);
      else {
        let script = o.script;
        if (script === undefined) {
          const names = await readdir(join(dir, "scripts"));
          script = join(dir, "scripts", `job-${names.length + 1}.sh`);
          await writeFile(script, o.scriptText!, { mode: 0o755 });
        }
        argv.push(script, ...(o.scriptArgs ?? []));
      }
      const printed = await run("sbatch", argv, { env: o.env, cwd: o.cwd });
      const id = printed.trim().split(";")[0] ?? "";
      if (!/^\d+$/.test(id)) throw new Error(`sbatch printed ${JSON.stringify(printed)}, not a job id`);
      // The tasks as submitted (an array given by the script's #SBATCH lines too), read while
      // every one still has a record.
      const submitted = await tasks(id);
      const array = submitted.flatMap((t) => (t.arrayTaskId === undefined ? [] : [t.arrayTaskId]));
      return array.length === 0 ? { id } : { id, array };
    },
    tasks,
    waitFor,
    async wait(job, opts = {}) {
      return waitFor(job, (now) => now.every((t) => FINISHED_STATES.has(t.state)), {
        what: "every task to finish",
        ...opts,
      });
    },
    async scancel(job, task) {
      await run("scancel", [task === undefined ? jobId(job) : `${jobId(job)}_${task}`]);
    },
    output(task) {
      if (task.stdout === undefined || !existsSync(task.stdout)) {
        throw new Error(
          `task ${task.id} (${task.state}, ${task.reason}) has no output file${task.stdout ? ` at ${task.stdout}` : ""}`,
        );
      }
      return readFileSync(task.stdout, "utf8");
    },
    logs,
    processes,
    stop,
  };
  return cluster;
}

/** SIGTERM to the daemon itself (its pid file), SIGKILL to it and its wrapper 10 s later. */
async function stopDaemon(d: Daemon) {
  if (d.process.exitCode !== null || d.process.signalCode !== null) return;
  const pid = await readFile(d.pidFile, "utf8").then(
    (t) => Number(t.trim()),
    () => undefined,
  );
  try {
    if (pid !== undefined && pid > 0) process.kill(pid, "SIGTERM");
    else d.process.kill("SIGTERM"); // the wrapper kills it
  } catch {}
  const timer = setTimeout(() => {
    try {
      process.kill(-d.process.pid!, "SIGKILL");
    } catch {}
  }, 10_000);
  await d.exited;
  clearTimeout(timer);
}

/**
 * The processes of the cluster in `dir`: those whose command line names the folder (the daemons,
 * the job scripts slurmd keeps in its spool), whose environment points at its configuration (the
 * jobs' processes, sbatch exporting `SLURM_CONF`), or that hold a file of it open (slurmstepd,
 * which rewrites its command line and environment, keeps slurmd's log open).
 */
async function clusterProcesses(dir: string, conf: string) {
  const found: { pid: number; command: string }[] = [];
  const confVar = Buffer.from(`SLURM_CONF=${conf}\0`);
  for (const name of await readdir("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const cmdline = (await readFile(`/proc/${pid}/cmdline`)).toString().replaceAll("\0", " ").trim();
      if (cmdline === "") continue; // a zombie or a kernel thread
      let ours = cmdline.includes(dir);
      if (!ours)
        ours = (await readFile(`/proc/${pid}/environ`).catch(() => Buffer.alloc(0))).includes(confVar);
      if (!ours) {
        const fds = await readdir(`/proc/${pid}/fd`).catch(() => []);
        for (const fd of fds) {
          const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => "");
          if (target.startsWith(`${dir}/`)) {
            ours = true;
            break;
          }
        }
      }
      if (ours) found.push({ pid, command: cmdline });
    } catch {}
  }
  return found;
}

function execFileText(file: string, args: string[], env: NodeJS.ProcessEnv, cwd?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { env, cwd, encoding: "utf8", maxBuffer: 64 * MiB }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${stderr.trim() || err.message}`, { cause: err }));
      else resolve(stdout);
    });
  });
}
