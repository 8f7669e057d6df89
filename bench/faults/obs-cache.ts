/**
 * Damaged obs cache files: a cached column (one of each kind: category codes, int32 with nulls,
 * int64, float32, float64, bool with nulls, strings, the index) has one or two bits flipped at a
 * seeded byte, a run of bytes set to 0x00 or 0xFF, is truncated, emptied, replaced by garbage of
 * its length, extended, swapped with another column's file or deleted, or its checksum record is
 * damaged. It is then read by a new localizer (as the next process would) through
 * `dataset.obs()` or, one case in five, `deltacells obs --json`, and compared with the
 * undamaged values. Correct means the same values and, afterwards, the undamaged file in place
 * (a damaged file left behind would be read again by every later process).
 */
import { readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type ColumnTable,
  type DatasetSource,
  encodeTile,
  type ObsColumn,
  writeDataset,
} from "@deltacells/core";
import { cacheLocalizer, openDataset, zstdCompressor } from "@deltacells/core/node";
import { FolderStore } from "@deltacells/storage/node";
import { obsCommand } from "../../packages/cli/src/obs/command.js";
import { obsCachePath, obsChecksumPath } from "../../packages/deltacells/src/obs/cache-node.js";
import { mulberry32 } from "../../test-utils/prng.js";
import type { FaultClass, RunOptions } from "./classes.js";
import { workDir } from "./fixtures.js";
import { type CaseResult, judgeError, withTimeout } from "./outcome.js";
import { MUTATIONS } from "./tile-mutants.js";

const N = 600;

function cellTable(): ColumnTable {
  return {
    indexName: "barcode",
    index: Array.from({ length: N }, (_, i) => `CELL${String(i).padStart(6, "0")}-1`),
    columns: [
      {
        name: "cell_type",
        kind: "category",
        codes: Int32Array.from({ length: N }, (_, i) => (i % 23 === 5 ? -1 : (i * 7) % 5)),
        categories: ["B", "T", "NK", "Mono", "DC"],
        ordered: false,
      },
      {
        name: "n_genes",
        kind: "numeric",
        values: Int32Array.from({ length: N }, (_, i) => 200 + ((i * 37) % 3000)),
        nulls: Uint8Array.from({ length: N }, (_, i) => (i % 29 === 0 ? 1 : 0)),
      },
      {
        name: "n_counts",
        kind: "numeric",
        values: BigInt64Array.from({ length: N }, (_, i) => BigInt(i * 1013)),
      },
      {
        name: "pct_mito",
        kind: "numeric",
        values: Float32Array.from({ length: N }, (_, i) => (i % 100) / 500),
      },
      { name: "score", kind: "numeric", values: Float64Array.from({ length: N }, (_, i) => Math.sin(i) * 3) },
      {
        name: "doublet",
        kind: "bool",
        values: Uint8Array.from({ length: N }, (_, i) => (i % 9 === 0 ? 1 : 0)),
        nulls: Uint8Array.from({ length: N }, (_, i) => (i % 31 === 0 ? 1 : 0)),
      },
      {
        name: "donor",
        kind: "string",
        values: Array.from({ length: N }, (_, i) => (i % 41 === 0 ? null : `donor-${i % 13}`)),
      },
    ],
  };
}

const COLUMNS = ["barcode", "cell_type", "n_genes", "n_counts", "pct_mito", "score", "doublet", "donor"];

function sourceOf(table: ColumnTable): DatasetSource {
  return {
    format: "h5ad",
    location: "memory://faults-obs",
    matrixPath: "X",
    nCells: N,
    nGenes: 3,
    var: async () => ({ indexName: null, index: ["G0", "G1", "G2"], columns: [] }),
    obs: async () => table,
    async *rowBlocks() {
      const indptr = Float64Array.from({ length: N + 1 }, (_, i) => i);
      yield { rowStart: 0, nRows: N, indptr, indices: new Int32Array(N), data: new Int32Array(N).fill(1) };
    },
  };
}

/** Every value of a column as printed (labels, null for missing), as one string to compare. */
function printed(col: ObsColumn): string {
  return JSON.stringify(
    Array.from({ length: N }, (_, i) => col.value(i)),
    (_k, v) => (typeof v === "bigint" ? `${v}n` : v),
  );
}

type Damage = (file: Uint8Array, at: number, rnd: () => number, other: Uint8Array) => Uint8Array | undefined;

/** Each damage: the bytes the file gets, or undefined to delete it. */
const DAMAGES: Record<string, Damage> = {
  ...MUTATIONS,
  empty: () => new Uint8Array(0),
  garbage: (file, _at, rnd) => Uint8Array.from({ length: file.length }, () => Math.floor(rnd() * 256)),
  swap: (_file, _at, _rnd, other) => other.slice(),
  delete: () => undefined,
};

/** Flips are the damage storage does silently: half the draws. */
const DRAWS = [
  "flip",
  "flip",
  "flip",
  "flip",
  "flip",
  "flip",
  "fill",
  "truncate",
  "empty",
  "garbage",
  "extend",
  "swap",
  "delete",
  "checksum",
];

async function run({ seed, long, cases, log }: RunOptions): Promise<CaseResult[]> {
  const total = cases ?? (long ? 540 : 54);
  const work = workDir("obs-cache");
  try {
    const dir = join(work.dir, "ds");
    const cacheDir = join(work.dir, "cache");
    await writeDataset(sourceOf(cellTable()), new FolderStore(dir), {
      encoder: { encode: (rows, o) => encodeTile(rows, { ...o, level: 3 }) },
      compress: zstdCompressor(3),
      tileSize: 100,
    });
    const reference = await openDataset(dir, { obsLocalizer: cacheLocalizer() });
    const frame = await reference.obs(COLUMNS, { cacheDir });
    const fingerprint = reference.manifest.obs_fingerprint!;
    const want = new Map(COLUMNS.map((name) => [name, printed(frame.column(name))]));
    const cliRows = async (name: string) => {
      const out = await obsCommand([dir, "--columns", name, "--json", "--cache-dir", cacheDir]);
      return JSON.stringify((out.json as { rows: unknown[][] }).rows);
    };
    const wantRows = new Map<string, string>();
    for (const name of COLUMNS) wantRows.set(name, await cliRows(name));
    const paths = new Map(COLUMNS.map((name) => [name, obsCachePath(cacheDir, fingerprint, name)]));
    const good = new Map(COLUMNS.map((name) => [name, new Uint8Array(readFileSync(paths.get(name)!))]));
    const goodSums = new Map(COLUMNS.map((name) => [name, readFileSync(obsChecksumPath(paths.get(name)!))]));
    const rnd = mulberry32(seed);
    const results: CaseResult[] = [];
    for (let n = 0; n < total; n++) {
      const name = COLUMNS[Math.floor(rnd() * COLUMNS.length)]!;
      const other =
        COLUMNS[(COLUMNS.indexOf(name) + 1 + Math.floor(rnd() * (COLUMNS.length - 1))) % COLUMNS.length]!;
      const damage = DRAWS[Math.floor(rnd() * DRAWS.length)]!;
      const path = paths.get(name)!;
      const file = good.get(name)!;
      const at = Math.floor(rnd() * file.length);
      const via = n % 5 === 4 ? "deltacells obs" : "ds.obs";
      const where =
        damage === "flip" || damage === "fill" || damage === "truncate" ? ` at ${at} of ${file.length}` : "";
      const id = `${n}: ${name} ${damage}${where}${damage === "swap" ? ` with ${other}` : ""} via ${via}`;
      if (damage === "checksum") {
        const sum = obsChecksumPath(path);
        const text = readFileSync(sum, "utf8");
        const i = Math.floor(rnd() * 64);
        writeFileSync(sum, `${text.slice(0, i)}${text[i] === "0" ? "1" : "0"}${text.slice(i + 1)}`);
      } else {
        const bytes = DAMAGES[damage]!(file, at, rnd, good.get(other)!);
        if (bytes === undefined) unlinkSync(path);
        else writeFileSync(path, bytes);
      }
      const seen = await withTimeout(20_000, async (): Promise<Omit<CaseResult, "id" | "kind">> => {
        try {
          let same: boolean;
          if (via === "ds.obs") {
            const ds = await openDataset(dir, { obsLocalizer: cacheLocalizer() });
            const got = await ds.obs([name], { cacheDir });
            same = printed(got.column(name)) === want.get(name);
          } else {
            same = (await cliRows(name)) === wantRows.get(name);
          }
          if (!same) return { outcome: "wrong", detail: "values differ from the undamaged column" };
          let after: Uint8Array | undefined;
          try {
            after = readFileSync(path);
          } catch {
            after = undefined;
          }
          if (after === undefined || Buffer.compare(after, file) !== 0)
            return { outcome: "wrong", detail: "right values, but the damaged file stays for later reads" };
          return { outcome: "correct" };
        } catch (err) {
          return judgeError(err, [path, `${name}.arrow`]);
        }
      });
      results.push(
        seen === "timeout" ? { id, kind: damage, outcome: "hang" } : { id, kind: damage, ...seen },
      );
      writeFileSync(path, file);
      writeFileSync(obsChecksumPath(path), goodSums.get(name)!);
      if ((n + 1) % 100 === 0) log(`obs-cache: ${n + 1}/${total}`);
    }
    return results;
  } finally {
    work.dispose();
  }
}

export const obsCache: FaultClass = {
  name: "obs-cache",
  summary:
    "flips, byte runs, truncations, garbage, extensions, swaps and deletions of cached obs columns and their checksum records, read by a new localizer through ds.obs() and deltacells obs",
  run,
};
