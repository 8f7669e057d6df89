/**
 * Damaged .h5ad files: bit flips, zeroed runs and truncations in each part of two small real
 * files (data/anndata/csr.h5ad and its lzf-compressed twin): the superblock, X's data, indices and
 * indptr, var, obs, the other groups, and the HDF5 metadata between them (object headers,
 * B-trees, heaps). Each damaged file goes through a real `deltacells convert` (killed at a
 * deadline: a hang) and through anndata (conformance/.venv, with its own watchdog). The command
 * must refuse with a tagged error naming the file, or write a dataset equal to what anndata reads
 * (cells, counts and gene names; when anndata itself fails, equal to the undamaged file).
 */
import { spawn } from "node:child_process";
import { copyFileSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openDataset } from "@deltacells/core/node";
import { mulberry32 } from "../../test-utils/prng.js";
import type { FaultClass, RunOptions } from "./classes.js";
import { cliTag, deltacells } from "./cli.js";
import { PYTHON, REPO, workDir } from "./fixtures.js";
import { type CaseResult, inParallel } from "./outcome.js";

const HELPER = join(REPO, "bench/faults/h5ad_reference.py");
const INPUTS = ["data/anndata/csr.h5ad", "data/anndata/csr-lzf.h5ad"];

interface Reference {
  ok: boolean;
  error?: string;
  var_names?: string[];
  indptr?: number[];
  indices?: number[];
  data?: number[];
}

function python(args: string[], input = ""): Promise<string> {
  return new Promise((ok, fail) => {
    const child = spawn(PYTHON, [HELPER, ...args], { stdio: ["pipe", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.on("close", (code) => (code === 0 ? ok(out) : fail(new Error(`${HELPER} exited ${code}`))));
    child.stdin.end(input);
  });
}

/**
 * anndata's reading of each file, one Python process for all, restarted past a file it hangs
 * on (no answer in `deadlineMs`: that file is marked as hanging anndata too).
 */
async function references(paths: string[], deadlineMs: number): Promise<Reference[]> {
  const out: Reference[] = [];
  while (out.length < paths.length) {
    const rest = paths.slice(out.length);
    const child = spawn(PYTHON, [HELPER, "read"], { stdio: ["pipe", "pipe", "ignore"] });
    child.stdin.end(`${rest.join("\n")}\n`);
    let buffer = "";
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => child.kill("SIGKILL"), deadlineMs);
    };
    arm();
    const before = out.length;
    await new Promise<void>((ok) => {
      child.stdout.on("data", (d) => {
        buffer += d;
        let nl = buffer.indexOf("\n");
        while (nl >= 0) {
          out.push(JSON.parse(buffer.slice(0, nl)) as Reference);
          buffer = buffer.slice(nl + 1);
          nl = buffer.indexOf("\n");
          arm();
        }
      });
      child.on("close", () => {
        clearTimeout(timer);
        ok();
      });
    });
    if (out.length < paths.length) {
      // Killed (or died) on this file: anndata cannot read it either.
      out.push({
        ok: false,
        error: out.length === before ? "anndata hung or crashed on this file" : "anndata died",
      });
    }
  }
  return out;
}

/** The dataset as anndata shows it: source gene order, canonical CSR, float counts. */
async function asAnndata(dir: string): Promise<Reference> {
  const ds = await openDataset(dir);
  const order = (await ds.geneOrder()) ?? Int32Array.from({ length: ds.nGenes }, (_, j) => j);
  const names = (await ds.geneNames()) ?? [];
  const rows = await ds.cells(0, ds.nCells);
  const varNames = new Array<string>(ds.nGenes);
  for (let j = 0; j < ds.nGenes; j++) varNames[order[j]!] = names[j]!;
  const indptr = [0];
  const indices: number[] = [];
  const data: number[] = [];
  for (let c = 0; c < ds.nCells; c++) {
    const pairs: [number, number][] = [];
    for (let k = rows.indptr[c]!; k < rows.indptr[c + 1]!; k++)
      pairs.push([order[rows.indices[k]!]!, rows.data[k]!]);
    pairs.sort((a, b) => a[0] - b[0]);
    for (const [g, v] of pairs) {
      indices.push(g);
      data.push(v);
    }
    indptr.push(indices.length);
  }
  return { ok: true, var_names: varNames, indptr, indices, data };
}

function same(a: Reference, b: Reference): boolean {
  return (
    JSON.stringify([a.var_names, a.indptr, a.indices, a.data]) ===
    JSON.stringify([b.var_names, b.indptr, b.indices, b.data])
  );
}

type Damage = "flip" | "zero" | "truncate";

async function run({ seed, long, cases: count, log }: RunOptions): Promise<CaseResult[]> {
  const perInput = count !== undefined ? Math.ceil(count / INPUTS.length) : long ? 75 : 5;
  const work = workDir("h5ad");
  try {
    // The deadline follows the machine: six times an undamaged conversion, at least 30 s, so a
    // loaded machine is not mistaken for a hang.
    const started = performance.now();
    const clean = await deltacells(
      [
        "convert",
        join(REPO, INPUTS[1]!),
        join(work.dir, "clean"),
        "--quiet",
        "--threads",
        "1",
        "--level",
        "3",
      ],
      600_000,
    ).done;
    if (clean.code !== 0) throw new Error(`the undamaged conversion failed: ${clean.stderr}`);
    const deadlineMs = Math.max(30_000, 6 * (performance.now() - started));
    // The command's own HDF5 watchdog (60 s by default) must fire inside the deadline: HDF5 spins
    // for ever on some damaged files, and the command then refuses them as Stalled by design.
    const hdf5Timeout = Math.max(5, Math.floor(deadlineMs / 3000));
    log(
      `h5ad-damage: deadline ${(deadlineMs / 1000).toFixed(0)} s per conversion, --hdf5-timeout ${hdf5Timeout}`,
    );
    const rnd = mulberry32(seed);
    const cases: { path: string; input: string; region: string; damage: Damage; at: number }[] = [];
    for (const input of INPUTS) {
      const bytes = new Uint8Array(readFileSync(join(REPO, input)));
      const map = JSON.parse(await python(["regions", join(REPO, input)])) as Record<
        string,
        [number, number][]
      >;
      const covered = Object.values(map).flat();
      const names = [...Object.keys(map), "metadata"];
      for (let i = 0; i < perInput; i++) {
        const region = names[Math.floor(rnd() * names.length)]!;
        let at: number;
        if (region === "metadata") {
          // A byte no dataset's storage covers: object headers, B-trees, heaps, free space.
          do at = Math.floor(rnd() * bytes.length);
          while (covered.some(([o, n]) => at >= o && at < o + n));
        } else {
          const ranges = map[region]!;
          const [o, n] = ranges[Math.floor(rnd() * ranges.length)]!;
          at = o + Math.floor(rnd() * n);
        }
        const damage = (["flip", "zero", "truncate"] as const)[Math.floor(rnd() * 3)]!;
        let damaged: Uint8Array;
        if (damage === "truncate") damaged = bytes.slice(0, at);
        else {
          damaged = bytes.slice();
          if (damage === "flip") damaged[at]! ^= 1 << Math.floor(rnd() * 8);
          else damaged.fill(0, at, Math.min(bytes.length, at + 1 + Math.floor(rnd() * 64)));
        }
        const path = join(work.dir, `case-${cases.length}-${input.split("/").pop()}`);
        writeFileSync(path, damaged);
        cases.push({ path, input, region, damage, at });
      }
    }
    const originals = INPUTS.map((input) => join(work.dir, `original-${input.split("/").pop()}`));
    for (const [i, input] of INPUTS.entries()) copyFileSync(join(REPO, input), originals[i]!);
    const refs = await references([...originals, ...cases.map((c) => c.path)], 30_000);
    const [originalCsr, originalLzf] = refs;
    log(`h5ad-damage: anndata read ${refs.filter((r) => r.ok).length - 2} of ${cases.length} damaged files`);
    let done = 0;
    return await inParallel(
      cases.map((c, n) => async (): Promise<CaseResult> => {
        const reference = refs[n + 2]!;
        const original = c.input.includes("lzf") ? originalLzf! : originalCsr!;
        const kind = `${c.region}/${c.damage}`;
        const id = `${n}: ${c.input} ${c.region} ${c.damage} at ${c.at} (anndata: ${reference.ok ? "reads it" : reference.error?.slice(0, 60)})`;
        const out = join(work.dir, `out-${n}`);
        try {
          const exit = await deltacells(
            [
              "convert",
              c.path,
              out,
              "--quiet",
              "--threads",
              "1",
              "--level",
              "3",
              "--hdf5-timeout",
              String(hdf5Timeout),
            ],
            deadlineMs,
          ).done;
          const tag = cliTag(exit.stderr);
          const line = exit.stderr.trim().split("\n")[0]?.slice(0, 200);
          if (exit.timedOut)
            return { id, kind, outcome: "hang", detail: `no exit in ${deadlineMs / 1000} s` };
          if (exit.code === 0) {
            const ours = await asAnndata(out);
            const want = reference.ok ? reference : original;
            return same(ours, want)
              ? {
                  id,
                  kind,
                  outcome: "correct",
                  detail: reference.ok ? "as anndata reads it" : "as the undamaged file",
                }
              : {
                  id,
                  kind,
                  outcome: "wrong",
                  detail: `exit 0 with other ${same({ ...ours, var_names: want.var_names }, want) ? "gene names" : "counts"}`,
                };
          }
          if (exit.code !== 1 || tag === undefined || /Aborted\(/.test(exit.stderr)) {
            return { id, kind, outcome: "crash", detail: `exit ${exit.code ?? exit.signal}: ${line}` };
          }
          return {
            id,
            kind,
            outcome: exit.stderr.includes(c.path) ? "refused" : "refused-unclear",
            tag,
            detail: line,
          };
        } finally {
          rmSync(out, { recursive: true, force: true });
          if (++done % 25 === 0) log(`h5ad-damage: ${done}/${cases.length}`);
        }
      }),
      2,
    );
  } finally {
    work.dispose();
  }
}

export const h5adDamage: FaultClass = {
  name: "h5ad-damage",
  summary:
    "flips, zeroed runs and truncations in each part of a small .h5ad and its lzf twin, converted by the real command (with a deadline) and read by anndata",
  needsPython: true,
  run,
};
