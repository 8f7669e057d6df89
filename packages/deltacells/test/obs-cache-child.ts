/** Child process of obs-cache-lock.test.ts: localize columns of a dataset URL into a cache folder. */
import { openDataset } from "../src/node.js";

const [url, cacheDir, columns] = process.argv.slice(2) as [string, string, string];
const ds = await openDataset(url);
const frame = await ds.obs(columns.split(","), { cacheDir });
process.stdout.write(
  `${JSON.stringify(frame.columns.map((c) => ({ name: c.name, batches: c.table.batches.length, rows: c.table.numRows, path: c.path })))}\n`,
);
