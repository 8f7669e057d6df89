/**
 * What the viewer's tests and bench serve: the viewer built by Vite, and datasets converted by the
 * CLI with `--sporadik`, obs included (the input's obs columns and its `X_umap` as
 * `X_umap_0`/`X_umap_1` float32 columns, as `deltacells convert` writes them).
 */
import { spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { run as runCommand } from "../../../packages/cli/src/run.js";

export const REPO = resolve(import.meta.dirname, "../../..");
export const PBMC = join(REPO, "data/pbmc68k-counts/pbmc68k_counts.h5ad");

function run(args: string[], cwd = REPO): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((ok, fail) => {
    const child = spawn(args[0]!, args.slice(1), { cwd });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("error", fail);
    child.on("close", (code) => ok({ code: code ?? -1, stdout, stderr }));
  });
}

/**
 * `deltacells ARGS` from the sources, in this process (no child process's start-up to pay, and runs
 * may overlap); rejects on a non-zero exit. Paths are absolute: the command runs in this process's
 * folder.
 */
export async function deltacells(...args: string[]): Promise<string> {
  let stdout = "";
  let stderr = "";
  const code = await runCommand(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    debug: true,
  });
  if (code !== 0) throw new Error(`deltacells ${args.join(" ")} failed (${code}): ${stderr}`);
  return stdout;
}

/**
 * Builds the viewer with Vite into `outDir` (what `deltacells serve` hands out) and returns it. Each
 * test file and bench builds into a folder of its own: a build into a shared one replaces the
 * bundle under a page another process is loading.
 */
export async function buildViewer(outDir: string): Promise<string> {
  const r = await run(
    [
      process.execPath,
      join(REPO, "node_modules/vite/bin/vite.js"),
      "build",
      "--logLevel",
      "warn",
      "--outDir",
      outDir,
      "--emptyOutDir",
      // Vite 8 refuses a second build of the same project while one runs (a lock in the project);
      // the builds write to folders of their own, so test files and benches may build at once.
      "--bypass-lock",
    ],
    join(REPO, "apps/viewer"),
  );
  if (r.code !== 0) throw new Error(`vite build failed: ${r.stderr}${r.stdout}`);
  return outDir;
}

/** The pbmc68k demo: converted with its companion, obs and UMAP, at `<root>/pbmc68k`. */
export async function buildPbmc(root: string): Promise<string> {
  const dir = join(root, "pbmc68k");
  await deltacells("convert", PBMC, dir, "--sporadik", "--quiet", "--threads", "1");
  return dir;
}
