/**
 * The scheduler examples of docs/atlas.md (examples/atlas/), shared by the tests that check them
 * (not a test file itself).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO } from "./cli-helpers.js";

/** The fenced blocks of docs/atlas.md in `language`, each with its last newline. */
export function blocks(language: string): string[] {
  const text = readFileSync(join(REPO, "docs/atlas.md"), "utf8");
  const out: string[] = [];
  const re = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``, "g");
  for (let m = re.exec(text); m; m = re.exec(text)) out.push(m[1]!);
  return out;
}

/** The text of an example file. */
export function example(name: string): string {
  return readFileSync(join(REPO, "examples/atlas", name), "utf8");
}

/**
 * The peak memory of one conversion task with 8 threads, as bench/atlas measured it
 * (bench/RESULTS.md, "Atlases"), rounded up: what a task's memory request must cover.
 */
export const TASK_PEAK_MIB = 520;

/**
 * A conversion task's resources as an example asks for them: one encoding thread per core, and
 * memory that covers the measured peak with room to spare (twice) without asking for many times
 * what a task uses, which would leave a cluster's nodes idle.
 */
export function assertTaskResources(where: string, r: { cores: number; threads: number; memoryMiB: number }) {
  assert.equal(r.threads, r.cores, `${where}: one thread per core asked for`);
  assert.equal(r.cores, 8, `${where}: 8 cores, the sizing of docs/atlas.md`);
  assert.ok(
    r.memoryMiB >= 2 * TASK_PEAK_MIB && r.memoryMiB <= 8 * TASK_PEAK_MIB,
    `${where}: ${r.memoryMiB} MiB against a measured peak of ${TASK_PEAK_MIB} MiB`,
  );
}

/**
 * The memory of `finalize --sporadik` as docs/atlas.md sizes it ("Sizing"): an estimate for a
 * 100 M-cell atlas from the per-cell arrays of the rows in embedding order, twice over.
 */
export const FINALIZE_SPORADIK_MIB = 8 * 1024;

/**
 * The finalize job of an example: `finalize OUT --sporadik` (the companion, its statistics and its
 * rows in embedding order, as docs/atlas.md recommends for an atlas) with a conversion task's
 * cores, one thread each, and the documented memory.
 */
export function assertFinalizeResources(
  where: string,
  r: { command: string[]; cores: number; memoryMiB: number },
) {
  assert.deepEqual(r.command.slice(0, 2), ["deltacells", "finalize"], `${where}: ${r.command.join(" ")}`);
  assert.ok(
    r.command.includes("--sporadik"),
    `${where}: finalize writes the companion: ${r.command.join(" ")}`,
  );
  const threads = Number(r.command[r.command.indexOf("--threads") + 1]);
  assert.equal(threads, r.cores, `${where}: finalize has one thread per core asked for`);
  assert.equal(r.cores, 8, `${where}: finalize has a conversion's 8 cores`);
  assert.equal(
    r.memoryMiB,
    FINALIZE_SPORADIK_MIB,
    `${where}: finalize's memory, the sizing of docs/atlas.md`,
  );
}
