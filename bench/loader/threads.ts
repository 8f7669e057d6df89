/**
 * Where the loader's time goes, per thread: several epochs on one loader (the first one cold:
 * pool start-up, fresh batch buffers), each with its rate and the user/system CPU milliseconds of
 * every thread of this process that used more than 20 ms (from /proc/self/task/<tid>/stat; Linux
 * only). The pool's workers are the threads that start last.
 *
 *   npm run build
 *   node --import tsx bench/loader/threads.ts DATASET [--threads N] [--epochs N] [--column-order source|dataset]
 */
import { readdirSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { createLoader } from "@deltacells/core";
import { openDataset } from "@deltacells/core/node";

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    threads: { type: "string", default: "1" },
    epochs: { type: "string", default: "4" },
    "batch-size": { type: "string", default: "4096" },
    "column-order": { type: "string", default: "source" },
  },
});

/** User and system CPU milliseconds of each thread, by `tid:u` / `tid:s`. */
function threadCpu(): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync("/proc/self/task")) {
    try {
      const f = readFileSync(`/proc/self/task/${tid}/stat`, "utf8").split(") ")[1]!.split(" ");
      out.set(`${tid}:u`, Number(f[11]) * 10);
      out.set(`${tid}:s`, Number(f[12]) * 10);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}

const batchSize = Number(args["batch-size"]);
const ds = await openDataset(positionals[0]!);
const loader = await createLoader(ds, {
  batchSize,
  seed: 1,
  threads: Number(args.threads),
  output: "csr",
  columnOrder: args["column-order"] as "source" | "dataset",
});
for (let epoch = 0; epoch < Number(args.epochs); epoch++) {
  loader.setEpoch(epoch);
  const before = threadCpu();
  const t0 = performance.now();
  let first = 0;
  let cells = 0;
  for await (const batch of loader) {
    if (!first) first = performance.now() - t0;
    cells += batch.size;
    batch.release();
  }
  const ms = performance.now() - t0;
  const cpu = [...threadCpu()]
    .map(([k, v]) => `${k}=${v - (before.get(k) ?? 0)}`)
    .filter((e) => Number(e.split("=")[1]) > 20);
  console.log(
    `epoch ${epoch}: ${((cells / ms) * 1000).toFixed(0)} cells/s in ${ms.toFixed(0)} ms, first batch ${first.toFixed(0)} ms; CPU ms ${cpu.join(" ")}`,
  );
}
await loader.close();
await ds.close();
