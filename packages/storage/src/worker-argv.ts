import { Worker, type WorkerOptions } from "node:worker_threads";

/**
 * The Node options a worker starts with: the host's, less those that only make sense for the host's
 * own entry (`--input-type` with `-e`/`-p` code, which a worker loading a file refuses, the code
 * itself, `--test`). What loaders need (`--import tsx`, `--conditions`) is kept.
 */
export function workerExecArgv(execArgv: readonly string[] = process.execArgv): string[] {
  const out: string[] = [];
  for (let k = 0; k < execArgv.length; k++) {
    const arg = execArgv[k] as string;
    if (/^(-e|--eval|-p|--print)$/.test(arg)) {
      k++; // its code
      continue;
    }
    if (arg === "--input-type") {
      k++; // its value
      continue;
    }
    if (/^(--input-type=|--eval=|--print=|--test$|--test-)/.test(arg)) continue;
    out.push(arg);
  }
  return out;
}

/**
 * `new Worker` with {@link workerExecArgv}, less the options Node refuses in a worker: V8 flags
 * such as `--max-old-space-size` or `--expose-gc` (which apply to the whole process anyway) and a
 * few per-process ones. Node names them in its error; without this, `node --max-old-space-size=8192
 * deltacells convert ...` failed at the first worker.
 */
export function newWorker(script: string | URL, options: WorkerOptions): Worker {
  const execArgv = options.execArgv ?? workerExecArgv();
  try {
    return new Worker(script, { ...options, execArgv });
  } catch (err) {
    const refused = refusedExecArgv(err);
    if (refused === undefined) throw err;
    return new Worker(script, { ...options, execArgv: execArgv.filter((a) => !refused.has(a)) });
  }
}

/** The options `ERR_WORKER_INVALID_EXEC_ARGV` names ("... flags: --a, --b=1"), else undefined. */
function refusedExecArgv(err: unknown): Set<string> | undefined {
  if ((err as { code?: unknown } | undefined)?.code !== "ERR_WORKER_INVALID_EXEC_ARGV") return undefined;
  const listed = /flags: (.+)$/.exec((err as Error).message)?.[1];
  return listed === undefined ? undefined : new Set(listed.split(", "));
}
