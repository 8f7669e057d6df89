/**
 * `deltacells ARGS...` of a checkout, run from its sources (tsx) under GNU time: its wall time and
 * peak RSS (the maximum resident set size, worker threads included). What the conversion benches
 * measure memory with.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Runs `deltacells ARGS...` of the checkout at `root`; its stderr is passed on, its stdout dropped. */
export function timedCli(root: string, args: string[]): { seconds: number; mib: number } {
  const dir = mkdtempSync(join(tmpdir(), "deltacells-time-"));
  const report = join(dir, "time.txt");
  try {
    const t0 = performance.now();
    execFileSync(
      "/usr/bin/time",
      [
        "-f",
        "%M",
        "-o",
        report,
        process.execPath,
        "--import",
        "tsx",
        "--conditions=source",
        join(root, "packages/cli/src/main.ts"),
        ...args,
      ],
      { cwd: root, stdio: ["ignore", "ignore", "inherit"] },
    );
    const seconds = (performance.now() - t0) / 1000;
    return { seconds, mib: Number(readFileSync(report, "utf8").trim().split("\n").at(-1)) / 1024 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
