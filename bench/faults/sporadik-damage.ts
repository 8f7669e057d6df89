/**
 * Damaged sporadik stores: each chunk of each array (indptr, indices, data, maxima) and each
 * zarr.json (the block, the groups, the arrays) deleted, truncated, bit-flipped, zeroed, replaced
 * by random bytes or by another chunk of the same array, and each zarr.json edited to other valid
 * JSON. Then `deltacells validate` runs on the store and the reader reads every slice along both
 * axes. A case is as bad as its worst observation: numbers that differ from the undamaged store
 * without an error are wrong answers, whether validate accepted the store or not. The same damage
 * is done to a second store written with checksums (zstd's content checksum in every chunk), its
 * kinds prefixed `checksummed`.
 */
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { validate } from "../../packages/cli/src/validate/command.js";
import { mulberry32 } from "../../test-utils/prng.js";
import type { FaultClass, RunOptions } from "./classes.js";
import { workDir } from "./fixtures.js";
import { type CaseResult, judgeError, type Outcome, withTimeout } from "./outcome.js";
import { readAll, type Slices, sameSlices, writeSporadik } from "./sporadik-fixture.js";

const BADNESS: Outcome[] = ["correct", "refused", "refused-unclear", "crash", "hang", "wrong"];

export function worst(a: CaseResult, b: CaseResult): CaseResult {
  return BADNESS.indexOf(b.outcome) > BADNESS.indexOf(a.outcome) ? b : a;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** What a file is, for the tables: `indices chunk`, `indptr zarr.json`, `block`, `group zarr.json`. */
function roleOf(key: string): string {
  if (key === "zarr.json") return "block";
  const array = key.match(/\/(indptr|indices|data|maxima)\//)?.[1];
  if (array) return key.endsWith("zarr.json") ? `${array} zarr.json` : `${array} chunk`;
  return "group zarr.json";
}

/** Edits to a zarr.json that keep it valid JSON: the fields a reader trusts. */
const EDITS: ((json: Record<string, unknown>, rnd: () => number) => void)[] = [
  (j) => {
    if (Array.isArray(j.shape)) j.shape = [(j.shape[0] as number) + 1];
    else (j.attributes as Record<string, unknown>).shape = [121, 90];
  },
  (j) => {
    if (j.data_type) j.data_type = j.data_type === "int32" ? "int64" : "int32";
    else j.node_type = "array";
  },
  (j) => {
    const grid = j.chunk_grid as { configuration: { chunk_shape: number[] } } | undefined;
    if (grid) grid.configuration.chunk_shape = [32];
    else j.zarr_format = 2;
  },
  (j) => {
    if ("fill_value" in j) j.fill_value = 7;
    else j.attributes = {};
  },
  (j, rnd) => {
    const block = (j.attributes as { sporadik?: Record<string, unknown> } | undefined)?.sporadik;
    if (block) {
      const edits = [
        () => (block.complete = false),
        () => (block.spec = "2"),
        () => (block.shape = [90, 120]),
        () => (block.layouts = (block.layouts as unknown[]).slice(1)),
      ];
      edits[Math.floor(rnd() * edits.length)]!();
    } else if (Array.isArray(j.codecs)) j.codecs = (j.codecs as unknown[]).slice(0, 1);
    else delete j.attributes;
  },
];

type Mutation = (
  bytes: Uint8Array,
  rnd: () => number,
  sibling: Uint8Array | undefined,
) => Uint8Array | undefined;

const MUTATIONS: Record<string, Mutation> = {
  delete: () => undefined,
  truncate: (b, rnd) => b.slice(0, Math.floor(rnd() * b.length)),
  flip: (b, rnd) => {
    const out = b.slice();
    out[Math.floor(rnd() * out.length)]! ^= 1 << Math.floor(rnd() * 8);
    return out;
  },
  zero: (b) => new Uint8Array(b.length),
  garbage: (b, rnd) => Uint8Array.from(b, () => Math.floor(rnd() * 256)),
  swap: (b, _rnd, sibling) => sibling ?? b,
  edit: (b, rnd) => {
    const json = JSON.parse(new TextDecoder().decode(b)) as Record<string, unknown>;
    EDITS[Math.floor(rnd() * EDITS.length)]!(json, rnd);
    return new TextEncoder().encode(JSON.stringify(json));
  },
};

function mutationsFor(key: string): string[] {
  return key.endsWith("zarr.json")
    ? ["delete", "truncate", "flip", "garbage", "edit"]
    : ["delete", "truncate", "flip", "zero", "garbage", "swap"];
}

/** One observation of a damaged store: validate's verdict, or one axis read back. */
async function observe(dir: string, key: string, expected: Slices[]): Promise<CaseResult[]> {
  // The damaged array (or group), or the layout holding it: either names what to look at.
  const array = key.replace(/\/c\/\d+$/, "").replace(/\/zarr\.json$/, "") || "zarr.json";
  // The root zarr.json (the block) is the store itself: naming the store names it.
  const names = [array, array.match(/^layouts\/axis\d+/)?.[0] ?? (array === "zarr.json" ? dir : array)];
  const out: CaseResult[] = [];
  try {
    const r = await validate([dir, "--json", "--quiet", "--threads", "1"]);
    const report = r.json as {
      valid: boolean;
      problems?: { object: string; tag: string; message: string }[];
    };
    if (report.valid) out.push({ id: "", kind: "", outcome: "correct", detail: "validate: valid" });
    else {
      const p = report.problems?.[0];
      const named = report.problems?.some((q) => names.some((n) => q.object.includes(n)));
      out.push({
        id: "",
        kind: "",
        outcome: named ? "refused" : "refused-unclear",
        tag: p?.tag,
        detail: `validate: ${p?.object}: ${p?.message}`.slice(0, 200),
      });
    }
  } catch (err) {
    const j = judgeError(err, names);
    out.push({ id: "", kind: "", ...j, detail: `validate: ${j.detail}` });
  }
  for (const axis of [0, 1]) {
    try {
      const got = await readAll(dir, axis);
      out.push(
        sameSlices(got, expected[axis]!)
          ? { id: "", kind: "", outcome: "correct" }
          : {
              id: "",
              kind: "",
              outcome: "wrong",
              detail: `axis ${axis} read other numbers (${out[0]?.detail})`,
            },
      );
    } catch (err) {
      const j = judgeError(err, names);
      out.push({ id: "", kind: "", ...j, detail: `axis ${axis}: ${j.detail}` });
    }
  }
  return out;
}

/** Every case of one store (plain or checksummed), damaged one file at a time and restored after. */
async function runStore(
  dir: string,
  checksums: boolean,
  { seed, long, cases: count, log }: RunOptions,
): Promise<CaseResult[]> {
  const expected = await writeSporadik(dir, seed, false, checksums);
  const files = filesUnder(dir)
    .map((p) => relative(dir, p))
    .sort();
  const originals = new Map(files.map((k) => [k, new Uint8Array(readFileSync(join(dir, k)))]));
  // Long mode: every file with every mutation. Bounded: a seeded sample of them.
  let cases = files.flatMap((key) => mutationsFor(key).map((mutation) => ({ key, mutation })));
  const rnd = mulberry32(checksums ? seed + 1 : seed);
  if (!long || count !== undefined) {
    for (let i = cases.length - 1; i > 0; i--) {
      const j = Math.floor(rnd() * (i + 1));
      [cases[i], cases[j]] = [cases[j]!, cases[i]!];
    }
    cases = cases.slice(0, count ?? 90);
  }
  const prefix = checksums ? "checksummed " : "";
  const results: CaseResult[] = [];
  for (const [n, { key, mutation }] of cases.entries()) {
    const path = join(dir, key);
    const original = originals.get(key)!;
    const siblingKey = files.find((k) => k !== key && k.replace(/\d+$/, "") === key.replace(/\d+$/, ""));
    const damaged = MUTATIONS[mutation]!(original, rnd, siblingKey ? originals.get(siblingKey) : undefined);
    if (damaged === undefined) rmSync(path);
    else writeFileSync(path, damaged);
    const id = `${prefix}${n}: ${key} ${mutation}`;
    const kind = `${prefix}${roleOf(key)}/${mutation}`;
    const seen = await withTimeout(30_000, () => observe(dir, key, expected));
    results.push(seen === "timeout" ? { id, kind, outcome: "hang" } : { ...seen.reduce(worst), id, kind });
    writeFileSync(path, original);
    if ((n + 1) % 100 === 0)
      log(`sporadik-damage${checksums ? " (checksummed)" : ""}: ${n + 1}/${cases.length}`);
  }
  return results;
}

async function run(options: RunOptions): Promise<CaseResult[]> {
  const work = workDir("sporadik");
  try {
    return [
      ...(await runStore(join(work.dir, "store.zarr"), false, options)),
      ...(await runStore(join(work.dir, "checksummed.zarr"), true, options)),
    ];
  } finally {
    work.dispose();
  }
}

export const sporadikDamage: FaultClass = {
  name: "sporadik-damage",
  summary:
    "each chunk and zarr.json of a two-layout sporadik store (and of one written with checksums) deleted, truncated, flipped, zeroed, garbled, swapped with a sibling chunk or edited; then validate and every slice along both axes",
  run,
};
