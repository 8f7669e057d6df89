/**
 * Cross-checks the encoder against an independent decoder written from the spec in Python
 * (conformance/tile_decode.py: numpy + zstandard), on random tiles with both kinds of exceptions,
 * empty cells and chunks, and on the golden tiles.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { encodeTile, type TileRows } from "@deltacells/core";
import { prng, randomCsr, tileContents } from "./codec-helpers.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const python = join(root, "conformance/.venv/bin/python");
const script = join(root, "conformance/tile_decode.py");

function pythonDecode(paths: string[]): Record<string, unknown>[] {
  const r = spawnSync(python, [script, ...paths], { encoding: "utf8", maxBuffer: 1 << 28 });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
}

test("the independent Python decoder reads the tiles this encoder writes, exceptions included", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dc-conf-"));
  try {
    const rnd = prng(7);
    const cases: TileRows[] = [];
    for (let i = 0; i < 12; i++) {
      const nGenes = i % 2 ? 250_000 : 3000;
      cases.push(
        randomCsr(rnd, {
          nCells: [0, 1, 5, 80, 400][i % 5]!,
          nGenes,
          perCell: 30,
          emptyRate: i === 3 ? 0.8 : 0.1,
          bigValueRate: i % 3 ? 0.01 : 0,
          bigGapRate: nGenes > 65536 ? 0.02 : 0,
        }),
      );
    }
    const paths: string[] = [];
    for (const [i, rows] of cases.entries()) {
      const p = join(dir, `t${i}.dct`);
      writeFileSync(p, await encodeTile(rows, { nChunks: 1 + (i % 9), level: 3 }));
      paths.push(p);
    }
    const bad = join(dir, "bad.dct");
    const blob = await encodeTile(cases[4]!, { level: 3 });
    blob[blob.length - 2]! ^= 4;
    writeFileSync(bad, blob);
    const out = pythonDecode([...paths, bad]);
    for (const [i, rows] of cases.entries()) assert.deepEqual(out[i], tileContents(rows), `case ${i}`);
    assert.deepEqual(out[cases.length], { error: "crc32" }, "the Python decoder checks the CRC too");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the independent Python decoder reads the golden tiles to their stored contents", async () => {
  const dir = fileURLToPath(new URL("./fixtures/tiles/", import.meta.url));
  const names = readdirSync(dir)
    .filter((f) => f.endsWith(".dct"))
    .sort();
  assert.ok(names.length >= 5);
  const out = pythonDecode(names.map((n) => join(dir, n)));
  names.forEach((n, i) => {
    const want = JSON.parse(readFileSync(join(dir, n.replace(/\.dct$/, ".json")), "utf8"));
    assert.deepEqual(out[i], want, n);
  });
});
