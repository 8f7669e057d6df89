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
