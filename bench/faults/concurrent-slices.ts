/**
 * Concurrent reads on one handle: waves of calls in flight together on one sporadik reader per
 * axis (`sliceAt`, `slicesAt` with repeats, `slicesOver`) and on one dataset decoding on a pool
 * of two workers (`cells`, `cell`), each answer compared with the one the same call gives alone
 * (computed first, one call at a time). Shared chunk caches, coalesced ranges, recycled tile
 * buffers and the worker pool are what is exercised.
 */
import { join } from "node:path";
import type { CellRows } from "@deltacells/core";
import { openDataset } from "@deltacells/core/node";
import { openReader } from "@deltacells/sporadik/node";
import { FolderStore } from "@deltacells/storage/node";
import { mulberry32 } from "../../test-utils/prng.js";
import type { FaultClass, RunOptions } from "./classes.js";
import { workDir, writeSynthetic } from "./fixtures.js";
import { type CaseResult, judgeError, withTimeout } from "./outcome.js";
import { SHAPE, sameSlices, slicesOf, writeSporadik } from "./sporadik-fixture.js";

type Row = Pick<CellRows, "indices" | "data">;

function sameRows(a: Row, b: Row): boolean {
  if (a.indices.length !== b.indices.length) return false;
  for (let i = 0; i < a.indices.length; i++)
    if (a.indices[i] !== b.indices[i] || a.data[i] !== b.data[i]) return false;
  return true;
}

async function run({ seed, long, cases, log }: RunOptions): Promise<CaseResult[]> {
  const total = cases ?? (long ? 31_000 : 2_000);
  const wave = 200;
  const work = workDir("concurrent");
  try {
    const storeDir = join(work.dir, "store.zarr");
    const expected = await writeSporadik(storeDir, seed);
    const dsDir = join(work.dir, "ds");
    await writeSynthetic(dsDir, seed);
    const readers = await Promise.all([0, 1].map((axis) => openReader(new FolderStore(storeDir), { axis })));
    const ds = await openDataset(dsDir, { threads: 2 });
    const alone = await openDataset(dsDir);
    const rnd = mulberry32(seed);
    const results: CaseResult[] = [];
    try {
      for (let start = 0; start < total; start += wave) {
        const calls: { id: string; kind: string; call: () => Promise<boolean> }[] = [];
        // The dataset's expected answers: the same calls on another handle, one at a time, first.
        const wanted: (() => Promise<void>)[] = [];
        for (let n = start; n < Math.min(total, start + wave); n++) {
          const pick = rnd();
          const axis = rnd() < 0.5 ? 0 : 1;
          const length = SHAPE[axis]!;
          const position = () => Math.floor(rnd() * length);
          if (pick < 0.25) {
            const p = position();
            calls.push({
              id: `${n}: axis ${axis} sliceAt(${p})`,
              kind: "sporadik sliceAt",
              call: async () => {
                const s = await readers[axis]!.sliceAt(p);
                return sameSlices(
                  [
                    {
                      positions: Array.from(s.positions, Number),
                      values: Array.from(s.values as ArrayLike<number>, Number),
                    },
                  ],
                  [expected[axis]![p]!],
                );
              },
            });
          } else if (pick < 0.5) {
            const ps = Array.from({ length: 1 + Math.floor(rnd() * 12) }, position);
            calls.push({
              id: `${n}: axis ${axis} slicesAt([${ps}])`,
              kind: "sporadik slicesAt",
              call: async () =>
                sameSlices(
                  slicesOf(await readers[axis]!.slicesAt(ps)),
                  ps.map((p) => expected[axis]![p]!),
                ),
            });
          } else if (pick < 0.65) {
            const a = position();
            const b = a + Math.floor(rnd() * (length - a));
            calls.push({
              id: `${n}: axis ${axis} slicesOver(${a}, ${b})`,
              kind: "sporadik slicesOver",
              call: async () =>
                sameSlices(slicesOf(await readers[axis]!.slicesOver(a, b)), expected[axis]!.slice(a, b)),
            });
          } else {
            const a = Math.floor(rnd() * ds.nCells);
            const b = rnd() < 0.3 ? a + 1 : a + 1 + Math.floor(rnd() * (ds.nCells - a));
            let want: Row | undefined;
            wanted.push(async () => {
              want = await alone.cells(a, b);
            });
            calls.push({
              id: `${n}: dataset cells(${a}, ${b})`,
              kind: b === a + 1 ? "dataset cell" : "dataset cells",
              call: async () => sameRows(b === a + 1 ? await ds.cell(a) : await ds.cells(a, b), want!),
            });
          }
        }
        for (const w of wanted) await w();
        const outcomes = await withTimeout(60_000, () =>
          Promise.all(
            calls.map(async ({ call }) => {
              try {
                return (await call()) ? ({ outcome: "correct" } as const) : ({ outcome: "wrong" } as const);
              } catch (err) {
                return judgeError(err, []);
              }
            }),
          ),
        );
        for (const [i, c] of calls.entries()) {
          results.push(
            outcomes === "timeout"
              ? { id: c.id, kind: c.kind, outcome: "hang" }
              : { id: c.id, kind: c.kind, ...outcomes[i]! },
          );
        }
        if ((start + wave) % 5000 < wave) log(`concurrent-slices: ${Math.min(total, start + wave)}/${total}`);
      }
    } finally {
      await ds.close();
    }
    return results;
  } finally {
    work.dispose();
  }
}

export const concurrentSlices: FaultClass = {
  name: "concurrent-slices",
  summary:
    "waves of 200 slice calls in flight on one sporadik reader per axis and one dataset handle decoding on 2 workers, each compared with the call's answer alone",
  run,
};
