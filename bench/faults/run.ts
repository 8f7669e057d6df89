/**
 * The fault campaign (see docs/reliability.md).
 *
 *   node --import tsx --conditions=source bench/faults/run.ts [--class NAME]... [--seed N] [--long] [--cases N]
 *
 * Bounded mode (the default, what CI runs through faults.test.ts) finishes in about a minute;
 * --long runs the long case counts; --cases overrides a class's number of cases. Prints one table per class and exits 1 when a class has an
 * outcome its line of expectations.ts does not allow.
 */
import { parseArgs } from "node:util";
import { violations } from "./expectations.js";
import { CI_SEED, CLASSES } from "./registry.js";
import { classReport } from "./report.js";

const { values } = parseArgs({
  options: {
    class: { type: "string", multiple: true },
    seed: { type: "string", default: String(CI_SEED) },
    long: { type: "boolean", default: false },
    cases: { type: "string" },
  },
});
const seed = Number(values.seed);
if (!Number.isSafeInteger(seed)) throw new Error(`--seed must be a whole number, found ${values.seed}`);
const cases = values.cases === undefined ? undefined : Number(values.cases);
if (cases !== undefined && !(Number.isSafeInteger(cases) && cases > 0)) {
  throw new Error(`--cases must be a positive whole number, found ${values.cases}`);
}
const chosen = values.class?.length ? CLASSES.filter((c) => values.class!.includes(c.name)) : CLASSES;
if (chosen.length !== (values.class?.length ?? CLASSES.length)) {
  throw new Error(`--class must be one of ${CLASSES.map((c) => c.name).join(", ")}`);
}
console.log(`# fault campaign: seed ${seed}, ${values.long ? "long" : "bounded"} mode\n`);
let failed = 0;
for (const cls of chosen) {
  const started = performance.now();
  const results = await cls.run({ seed, long: values.long, cases, log: (line) => console.error(line) });
  console.log(classReport(cls, results, (performance.now() - started) / 1000));
  failed += violations(cls.name, results).length;
}
if (failed > 0) console.log(`${failed} cases with outcomes the expectations do not allow`);
process.exit(failed > 0 ? 1 : 0);
