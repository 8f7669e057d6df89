/**
 * Killed conversions: a real `deltacells convert` of a 700-cell .h5ad (tiles of 64 cells, level
 * 19, one thread, so writing takes a while) SIGKILLed at a seeded moment between its first write
 * and its expected end, into a new folder or with `--overwrite` over an older dataset. What is
 * left must be the old dataset intact, nothing, the new dataset whole, or something validate and
 * the reader refuse; never a dataset that validates but holds other numbers or gene names.
 * Temporary files left behind (`.dctmp-*`) are counted in each case's detail.
 */
import { cpSync, existsSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { openDataset } from "@deltacells/core/node";
import { convert } from "../../packages/cli/src/convert/command.js";
import { validate } from "../../packages/cli/src/validate/command.js";
import { mulberry32 } from "../../test-utils/prng.js";
import type { FaultClass, RunOptions } from "./classes.js";
import { deltacells } from "./cli.js";
import { REPO, workDir } from "./fixtures.js";
import { type CaseResult, inParallel, judgeError } from "./outcome.js";

const INPUT = join(REPO, "data/pbmc68k-counts/pbmc68k_counts.h5ad");
const OLD_INPUT = join(REPO, "data/anndata/csr.h5ad");
const FLAGS = ["--tile-size", "64", "--level", "19", "--threads", "1", "--quiet"];

/** Everything a dataset answers, as one string: every cell and the gene names. */
async function contents(dir: string): Promise<string> {
  const ds = await openDataset(dir);
  const rows = await ds.cells(0, ds.nCells);
  return JSON.stringify([
    ds.nCells,
    ds.nGenes,
    Array.from(rows.indptr),
    Array.from(rows.indices),
    Array.from(rows.data),
    await ds.geneNames(),
  ]);
}

function allFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? [path, ...allFiles(path)] : [path];
  });
}

/** The first moment the target shows a write (a staging folder with --overwrite), in ms. */
async function firstWrite(
  target: string,
  overwrite: boolean,
  since: number,
  running: () => boolean,
): Promise<number> {
  while (running()) {
    const entries = existsSync(target) ? readdirSync(target) : [];
    if (overwrite ? entries.some((e) => e.startsWith(".deltacells-staging")) : entries.length > 0) {
      return performance.now() - since;
    }
    await new Promise((ok) => setTimeout(ok, 10));
  }
  return performance.now() - since;
}

async function run({ seed, long, cases: count, log }: RunOptions): Promise<CaseResult[]> {
  const total = count ?? (long ? 135 : 2);
  const work = workDir("killed");
  try {
    const oldRef = join(work.dir, "old-ref");
    await convert([OLD_INPUT, oldRef, ...FLAGS]);
    // One uninterrupted run: the new dataset every case is compared with, and its timing (from
    // the first write to the exit) that the kill moments are drawn from.
    const newRef = join(work.dir, "new-ref");
    const started = performance.now();
    const calibration = deltacells(["convert", INPUT, newRef, ...FLAGS], 300_000);
    const first = await firstWrite(newRef, false, started, () => calibration.child.exitCode === null);
    const finished = await calibration.done;
    if (finished.code !== 0) throw new Error(`the uninterrupted conversion failed: ${finished.stderr}`);
    const end = performance.now() - started;
    const expected = { new: await contents(newRef), old: await contents(oldRef) };
    log(
      `killed-convert: a whole conversion takes ${(end / 1000).toFixed(1)} s, writing from ${(first / 1000).toFixed(1)} s`,
    );
    const rnd = mulberry32(seed);
    const cases = Array.from({ length: total }, (_, n) => ({
      n,
      overwrite: n % 2 === 1,
      // From the first write to a little past the expected end (a loaded machine is slower).
      delay: rnd() * (end - first) * 1.1,
    }));
    let done = 0;
    return await inParallel(
      cases.map(({ n, overwrite, delay }) => async (): Promise<CaseResult> => {
        const target = join(work.dir, `target-${n}`);
        if (overwrite) cpSync(oldRef, target, { recursive: true });
        const since = performance.now();
        const spawned = deltacells(
          ["convert", INPUT, target, ...FLAGS, ...(overwrite ? ["--overwrite"] : [])],
          300_000,
        );
        const wrote = await firstWrite(target, overwrite, since, () => spawned.child.exitCode === null);
        await new Promise((ok) => setTimeout(ok, delay));
        const killedAt = ((wrote + delay) / 1000).toFixed(2);
        spawned.child.kill("SIGKILL");
        const exit = await spawned.done;
        // The kind says what the kill left: the table then shows where in the write kills fell.
        const mode = `${overwrite ? "--overwrite" : "new folder"}${exit.signal === "SIGKILL" ? "" : " (finished first)"}`;
        const temps = allFiles(target).filter((p) => /\.dctmp-/.test(p)).length;
        const staged = allFiles(target).some((p) => p.includes(".deltacells-staging"));
        const id = `${n}: ${mode}, SIGKILL ${killedAt} s after start${temps ? `, ${temps} temp files left` : ""}${staged ? ", staging prefix left" : ""}`;
        const left = (
          state: string,
          outcome: CaseResult["outcome"],
          more: Partial<CaseResult> = {},
        ): CaseResult => ({
          id,
          kind: `${mode}: ${state}`,
          outcome,
          ...more,
        });
        try {
          if (allFiles(target).filter((p) => !p.includes(".deltacells-staging")).length === 0) {
            return left("nothing (or only staging)", "correct");
          }
          const report = await validate([target, "--json", "--quiet", "--threads", "1"]);
          const valid = (report.json as { valid: boolean }).valid;
          if (!valid) return left("refused by validate", "refused");
          const got = await contents(target);
          if (got === expected.new) return left("new dataset whole", "correct");
          if (overwrite && got === expected.old) return left("old dataset intact", "correct");
          return left("valid but neither", "wrong");
        } catch (err) {
          const judged = judgeError(err, [target]);
          return left(`refused (${judged.tag ?? "untagged"})`, judged.outcome, judged);
        } finally {
          rmSync(target, { recursive: true, force: true });
          if (++done % 10 === 0) log(`killed-convert: ${done}/${total}`);
        }
      }),
      2,
    );
  } finally {
    work.dispose();
  }
}

export const killedConvert: FaultClass = {
  name: "killed-convert",
  summary:
    "a real `deltacells convert` SIGKILLed at a seeded moment while writing, into a new folder or with --overwrite over an older dataset; then validate and a full read",
  run,
};
