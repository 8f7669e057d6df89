/**
 * The Node reader's decode workers start whatever options the host was started with: a host run as
 * `node --input-type=module -e CODE` used to hand `--input-type` to its workers, which then failed
 * to load their script, and the failure was reported as a damaged chunk.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

// A batch big enough for the workers, read with them and without, in a host started with -e.
const SCRIPT = `
import { MemoryStore } from "@deltacells/storage";
import { layoutFromCoords, writeStore } from "@deltacells/sporadik";
import { closeDecodeWorkers, nativeZstd, openReader, pooledZstd } from "@deltacells/sporadik/node";
const shape = [3000, 40];
const coords = [[], []];
const values = [];
for (let i = 0; i < shape[0]; i++) for (let j = (i * 7) % 5; j < shape[1]; j += 5) {
  coords[0].push(i); coords[1].push(j); values.push((i + j) % 9 + 1);
}
const store = new MemoryStore();
await writeStore(store, [layoutFromCoords(shape, coords, new Float32Array(values), 0)], { chunk: 250 });
let offloaded = 0;
const counted = (s, into, c, wave) => { const w = pooledZstd(s, into, c, wave); if (typeof w !== "number") offloaded++; return w; };
const positions = Array.from({ length: 600 }, (_, k) => (k * 37) % shape[0]);
const pooled = await (await openReader(store, { axis: 0, decompressors: { zstd: counted } })).slicesAt(positions);
const single = await (await openReader(store, { axis: 0, decompressors: { zstd: nativeZstd } })).slicesAt(positions);
await closeDecodeWorkers();
const same = JSON.stringify([...pooled.data]) === JSON.stringify([...single.data]) && pooled.data.length > 0;
console.log(JSON.stringify({ offloaded, same }));
`;

test("a host started with --input-type=module -e reads a batch through its decode workers", () => {
  const r = spawnSync(
    process.execPath,
    ["--import", "tsx", "--conditions=source", "--input-type=module", "-e", SCRIPT],
    { cwd: fileURLToPath(new URL("..", import.meta.url)), encoding: "utf8" },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /damaged|LayoutError/);
  const out = JSON.parse(r.stdout.trim().split("\n").at(-1)!);
  assert.equal(out.same, true, "the same values as decoded on the main thread");
  assert.ok(out.offloaded > 0, "the workers decoded some chunks");
});

test("a host started with V8 flags (refused in a worker's options) reads a batch through its decode workers", () => {
  const r = spawnSync(
    process.execPath,
    [
      "--max-old-space-size=1024",
      "--expose-gc",
      "--stack-trace-limit=30",
      "--import",
      "tsx",
      "--conditions=source",
      "--input-type=module",
      "-e",
      SCRIPT,
    ],
    { cwd: fileURLToPath(new URL("..", import.meta.url)), encoding: "utf8" },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /invalid execArgv/);
  const out = JSON.parse(r.stdout.trim().split("\n").at(-1)!);
  assert.equal(out.same, true);
  assert.ok(out.offloaded > 0, "the workers decoded some chunks");
});
