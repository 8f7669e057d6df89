/**
 * The fault campaign's bounded mode for the classes that need the conformance Python (anndata
 * reads each damaged .h5ad as the reference). See faults.test.ts for the others.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { violations } from "./expectations.js";
import { CLASSES, CI_SEED as SEED } from "./registry.js";
import { summaryLine } from "./report.js";

for (const cls of CLASSES.filter((c) => c.needsPython)) {
  test(`fault class ${cls.name}: no outcome beyond the known defects (seed ${SEED})`, async (t) => {
    const started = performance.now();
    const results = await cls.run({ seed: SEED, long: false, log: () => {} });
    t.diagnostic(summaryLine(cls.name, results, (performance.now() - started) / 1000));
    assert.ok(results.length > 0);
    assert.deepEqual(
      violations(cls.name, results).map((r) => `${r.outcome}: ${r.id}${r.detail ? `: ${r.detail}` : ""}`),
      [],
    );
  });
}
