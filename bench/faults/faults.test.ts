/**
 * The fault campaign's bounded mode (docs/reliability.md), one test per class: fixed seed,
 * about a minute in all on a quiet two-core machine. A class fails on any wrong answer, crash,
 * hang or unclear refusal its line in expectations.ts does not list as a known defect. The
 * .h5ad class needs Python and runs in faults.conformance.test.ts.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { EXPECTATIONS, violations } from "./expectations.js";
import { type CaseResult, judgeError } from "./outcome.js";
import { CLASSES, CI_SEED as SEED } from "./registry.js";
import { summaryLine } from "./report.js";

test("the harness tells a wrong answer, a crash and an unclear refusal from a clear one", () => {
  const tagged = Object.assign(new Error("tiles/tile_000003.dct: crc32 is 0x1"), {
    _tag: "CorruptTile",
    object: "ds/tiles/tile_000003.dct",
  });
  assert.equal(judgeError(tagged, ["tile_000003"]).outcome, "refused");
  assert.equal(judgeError(tagged, ["tile_000004"]).outcome, "refused-unclear");
  assert.equal(judgeError(new TypeError("x.then is not a function"), ["tile_000003"]).outcome, "crash");
  const results: CaseResult[] = [
    { id: "1", kind: "k", outcome: "wrong" },
    { id: "2", kind: "k", outcome: "correct" },
  ];
  assert.deepEqual(
    violations("tile-mutants", results).map((r) => r.id),
    ["1"],
  );
  // Tolerances match a kind or a prefix (sporadik's opt-in order checks), format limits a kind;
  // anything else is a violation, and a strict class tolerates nothing.
  const wrong = (kind: string): CaseResult => ({ id: kind, kind, outcome: "wrong" });
  // A missing data chunk is refused, and checksums leave only swaps tolerated.
  assert.deepEqual(
    violations("sporadik-damage", [
      wrong("indices chunk/swap"),
      wrong("data chunk/swap"),
      wrong("block/flip"),
      wrong("data chunk/delete"),
      wrong("checksummed data chunk/swap"),
      wrong("checksummed data chunk/flip"),
      wrong("checksummed indices chunk/flip"),
      wrong("checksummed indices chunk/swap"),
    ]).map((r) => r.id),
    ["block/flip", "data chunk/delete", "checksummed data chunk/flip", "checksummed indices chunk/flip"],
  );
  const unclear = (kind: string): CaseResult => ({ id: kind, kind, outcome: "refused-unclear" });
  assert.deepEqual(
    violations("network", [unclear("503/validate"), unclear("stall/cells")]).map((r) => r.id),
    ["503/validate", "stall/cells"],
  );
  for (const name of Object.keys(EXPECTATIONS)) {
    assert.ok(
      CLASSES.some((c) => c.name === name),
      `${name} in expectations.ts is a class`,
    );
  }
});

for (const cls of CLASSES.filter((c) => !c.needsPython)) {
  test(`fault class ${cls.name}: no outcome beyond the known defects (seed ${SEED})`, async (t) => {
    const started = performance.now();
    const results = await cls.run({ seed: SEED, long: false, log: () => {} });
    t.diagnostic(summaryLine(cls.name, results, (performance.now() - started) / 1000));
    assert.ok(results.length > 0);
    const bad = violations(cls.name, results);
    assert.deepEqual(
      bad.map((r) => `${r.outcome}: ${r.id}${r.detail ? `: ${r.detail}` : ""}`),
      [],
    );
  });
}
