/**
 * `deltacells ARGS...` of a checkout, run from its sources (tsx) under GNU time: its wall time,
 * CPU time (user and system, worker threads included: less sensitive than the wall clock to a
 * loaded machine) and peak RSS (the maximum resident set size). What the conversion benches
 * measure with. `built` runs the command as a user does instead, `packages/cli/bin/deltacells.js`
 * (what `npm run build` made).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Runs `deltacells ARGS...` of the checkout at `root`; its stderr is passed on, its stdout dropped. */
export function timedCli(
  root: string,
  args: string[],
  opts: { built?: boolean } = {},
): { seconds: number; cpuSeconds: number; mib: number } {
  const dir = mkdtempSync(join(tmpdir(), "deltacells-time-"));
  const report = join(dir, "time.txt");
  try {
    const t0 = performance.now();
    execFileSync(
      "/usr/bin/time",
      [
        "-f",
        "%M %U %S",
        "-o",
        report,
        process.execPath,
        ...(opts.built
          ? [join(root, "packages/cli/bin/deltacells.js")]
          : ["--import", "tsx", "--conditions=source", join(root, "packages/cli/src/main.ts")]),
        ...args,
      ],
      { cwd: root, stdio: ["ignore", "ignore", "inherit"] },
    );
    const seconds = (performance.now() - t0) / 1000;
    const [kib, user, system] = readFileSync(report, "utf8")
      .trim()
      .split("\n")
      .at(-1)!
      .split(" ")
      .map(Number);
    return { seconds, cpuSeconds: user! + system!, mib: kib! / 1024 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
