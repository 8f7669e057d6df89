/**
 * Atlases against anndata: seven inputs written by anndata (conformance/atlas_inputs.py: genes
 * that overlap without being equal, obs columns that differ, an AnnData zarr among h5ad files)
 * converted into one dataset equal `anndata.concat(..., join="outer")` of them (counts, var, obs
 * with the source column), matched by var index and by gene_ids, read back by independent code
 * (conformance/atlas_check.py); plan + 2 and 7 tasks + finalize into S3 (moto) equal the
 * one-process conversion byte for byte, and so does an append into S3 with a fresh conversion of
 * all the inputs; the input of text where the others hold numbers is
 * refused, naming the column and both inputs.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { before, test } from "node:test";
import { S3Store } from "@deltacells/storage";
import { openStore } from "@deltacells/storage/node";
import { type AtlasInputs, writeAtlasInputs } from "../../../test-utils/atlas-inputs.js";
import { assertShortError, cli, cliPlain, filesUnder, PYTHON, REPO, tempDir } from "./cli-helpers.js";
import { motoBucket } from "./s3-helpers.js";

const BUCKET = "atlas";
const s3 = motoBucket(BUCKET);
let atlas: AtlasInputs;

before(async () => {
  atlas = await writeAtlasInputs(join(tempDir(), "inputs"));
});

const paths = () => atlas.inputs.map((i) => i.path);
const names = () => ["--source-names", atlas.inputs.map((i) => i.name).join(",")];

function check(dataset: string, expected: string): { ok: boolean; problems: string[]; n_cells: number } {
  const out = execFileSync(
    PYTHON,
    [join(REPO, "conformance/atlas_check.py"), dataset, expected, atlas.sourceColumn],
    {
      encoding: "utf8",
    },
  );
  return JSON.parse(out);
}

test("seven inputs matched by var index convert into what anndata.concat(join='outer') makes of them: counts, var, obs with the source column", async () => {
  const out = join(tempDir(), "by-index");
  const r = await cli("convert", ...paths(), out, ...names(), "--quiet");
  assert.equal(r.code, 0, r.stderr);
  const result = check(out, atlas.expected.byIndex.path);
  assert.deepEqual(result.problems, []);
  assert.equal(result.n_cells, atlas.expected.byIndex.nObs);
});

test("matched by gene_ids (--var-key), the same inputs make what anndata makes of them indexed by gene_ids", async () => {
  const out = join(tempDir(), "by-gene-ids");
  const r = await cli("convert", ...paths(), out, ...names(), "--var-key", "gene_ids", "--quiet");
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(check(out, atlas.expected.byGeneIds.path).problems, []);
});

test("plan --scan per input, plan --merge, 2 and 7 tasks and finalize into S3 equal the one-process conversion byte for byte", async () => {
  const small = [
    "--tile-size",
    "64",
    "--obs-tiles-per-file",
    "2",
    "--level",
    "3",
    "--var-key",
    "gene_ids",
    ...names(),
  ];
  const once = join(tempDir(), "once");
  assert.equal((await cli("convert", ...paths(), once, ...small, "--quiet")).code, 0);
  const want = filesUnder(once);
  assert.ok([...want.keys()].filter((k) => k.startsWith("obs/obs_")).length >= 7);
  for (const n of [2, 7]) {
    const url = `s3://${BUCKET}/atlas-${n}`;
    for (let i = 0; i < paths().length; i++) {
      const r = await s3("plan", "--scan", ...paths(), url, "--task", String(i), ...small);
      assert.equal(r.code, 0, r.stderr);
    }
    const m = await s3("plan", "--merge", ...paths(), url, "--tasks", String(n), ...small);
    assert.equal(m.code, 0, m.stderr);
    for (let t = n - 1; t >= 0; t--) {
      const r = await s3("convert", "--plan", url, "--task", String(t));
      assert.equal(r.code, 0, r.stderr);
    }
    const f = await s3("finalize", url);
    assert.equal(f.code, 0, f.stderr);
    const env = s3.env();
    const store = new S3Store({
      accessKeyId: env.AWS_ACCESS_KEY_ID!,
      secretAccessKey: env.AWS_SECRET_ACCESS_KEY!,
      region: env.AWS_REGION!,
      endpoint: env.AWS_ENDPOINT_URL!,
      bucket: BUCKET,
      prefix: `atlas-${n}`,
    });
    const keys = await store.list();
    assert.deepEqual(keys, [...want.keys()], `N = ${n}`);
    for (const key of keys)
      assert.ok(Buffer.from((await store.get(key))!).equals(want.get(key)!), `N = ${n}: ${key}`);
  }
});

test("append into S3 (staged under the prefix, moved into place by server-side copies) equals a fresh conversion of all the inputs with the dataset's gene order, byte for byte, and leaves no staging behind", async () => {
  const small = ["--tile-size", "64", "--obs-tiles-per-file", "2", "--level", "3", "--var-key", "gene_ids"];
  const url = `s3://${BUCKET}/grown`;
  // The appended inputs' genes are all in the dataset's (chr21-b and chr21-ensembl, matched by gene_ids).
  const later = paths().filter((p) => /chr21-(b|ensembl)/.test(p));
  const first = paths().filter((p) => !later.includes(p));
  const made = await s3("convert", ...first, url, ...small, "--quiet");
  assert.equal(made.code, 0, made.stderr);
  const store = openStore(url, { env: s3.env() });
  const order = join(tempDir(), "order.txt");
  writeFileSync(order, (await store.get("var_names.txt"))!);
  const before = await store.get("manifest.json");
  const appended = await s3("append", url, ...later);
  assert.equal(appended.code, 0, appended.stderr);
  assert.match(appended.stdout, /^appended 2 inputs \(500 cells\) to s3:\/\/atlas\/grown\n/);
  assert.notDeepEqual(await store.get("manifest.json"), before);

  const fresh = join(tempDir(), "fresh");
  const converted = await cli(
    "convert",
    ...first,
    ...later,
    fresh,
    ...small,
    "--gene-order",
    order,
    "--quiet",
  );
  assert.equal(converted.code, 0, converted.stderr);
  const want = filesUnder(fresh);
  const keys = await store.list();
  assert.deepEqual(keys, [...want.keys()], "the same objects, no staging left");
  for (const key of keys) assert.ok(Buffer.from((await store.get(key))!).equals(want.get(key)!), key);
  const valid = await s3("validate", url);
  assert.equal(valid.code, 0, valid.stdout);
});

test("an input whose n_genes holds text where the others hold numbers is refused, naming the column and both inputs; --obs-exclude n_genes converts", async () => {
  const out = join(tempDir(), "conflict");
  const withConflict = [...paths(), atlas.conflict.path];
  const r = await cliPlain("convert", ...withConflict, out, "--quiet");
  assertShortError(
    r,
    /obs column "n_genes" is numeric \(int64\) in .*pbmc-a\.h5ad but (categorical|string) in .*conflict\.h5ad: no column holds both\. Leave it out with --obs-exclude n_genes/,
  );
  const ok = await cli("convert", ...withConflict, out, "--obs-exclude", "n_genes", "--quiet");
  assert.equal(ok.code, 0, ok.stderr);
});
