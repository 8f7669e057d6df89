/**
 * Atlases against anndata: seven inputs written by anndata (conformance/atlas_inputs.py: genes
 * that overlap without being equal, obs columns that differ, an AnnData zarr among h5ad files)
 * converted into one dataset equal `anndata.concat(..., join="outer")` of them (counts, var, obs
 * with the source column), matched by var index and by gene_ids, read back by independent code
 * (conformance/atlas_check.py); plan + 2 and 7 tasks + finalize into S3 (moto) equal the
 * one-process conversion byte for byte, and so does an append into S3 with a fresh conversion of
 * all the inputs; the unfinished multipart uploads of killed writers are aborted by the next
 * finalize, append or convert --overwrite there; the input of text where the others hold numbers is
 * refused, naming the column and both inputs.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { before, test } from "node:test";
import { S3Store } from "@deltacells/storage";
import { openStore } from "@deltacells/storage/node";
import { AwsClient } from "aws4fetch";
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

/** The S3 store of `prefix` in the test's bucket, read directly (no retries, no counting). */
function bucketStore(prefix: string): S3Store {
  const env = s3.env();
  return new S3Store({
    accessKeyId: env.AWS_ACCESS_KEY_ID!,
    secretAccessKey: env.AWS_SECRET_ACCESS_KEY!,
    region: env.AWS_REGION!,
    endpoint: env.AWS_ENDPOINT_URL!,
    bucket: BUCKET,
    prefix,
  });
}

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
    const store = bucketStore(`atlas-${n}`);
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

test("the unfinished multipart uploads a killed writer leaves on S3 are listed by validate, aborted by finalize of the atlas, by append and by convert --overwrite, and reported", async () => {
  const small = ["--tile-size", "64", "--obs-tiles-per-file", "2", "--level", "3", "--var-key", "gene_ids"];
  const prefix = "killed";
  const url = `s3://${BUCKET}/${prefix}`;
  const env = s3.env();
  const store = bucketStore(prefix);
  const client = new AwsClient({
    accessKeyId: env.AWS_ACCESS_KEY_ID!,
    secretAccessKey: env.AWS_SECRET_ACCESS_KEY!,
    region: env.AWS_REGION!,
    service: "s3",
    retries: 0,
  });
  /** What a writer killed in the middle of a large object leaves: an upload begun, one part sent, never completed. */
  const killedUpload = async (key: string) => {
    const at = `${env.AWS_ENDPOINT_URL}/${BUCKET}/${prefix}/${key}`;
    const id = /<UploadId>([^<]+)<\/UploadId>/.exec(
      await (await client.fetch(`${at}?uploads`, { method: "POST" })).text(),
    )?.[1];
    assert.ok(id);
    await client.fetch(`${at}?partNumber=1&uploadId=${encodeURIComponent(id)}`, {
      method: "PUT",
      body: "x".repeat(1000),
    });
    return id;
  };
  const later = paths().filter((p) => /chr21-(b|ensembl)/.test(p));
  const first = paths().filter((p) => !later.includes(p));

  assert.equal((await s3("plan", ...first, url, "--tasks", "2", ...small)).code, 0);
  for (const t of ["0", "1"]) assert.equal((await s3("convert", "--plan", url, "--task", t)).code, 0);
  await killedUpload("tiles/tile_0.bin");
  const f = await s3("finalize", url, "--json");
  assert.equal(f.code, 0, f.stderr);
  assert.deepEqual(JSON.parse(f.stdout).removed_temp_files, [
    `${url}/tiles/tile_0.bin (an unfinished upload)`,
  ]);
  assert.deepEqual(await store.uploads(), []);

  const id = await killedUpload("obs/obs_0.parquet");
  const v = await s3("validate", url, "--json");
  assert.equal(v.code, 0, v.stdout);
  const warnings = JSON.parse(v.stdout).warnings as { object: string; message: string }[];
  assert.deepEqual(
    warnings.map((w) => w.object),
    [`${url}/obs/obs_0.parquet`],
  );
  assert.match(
    warnings[0]!.message,
    new RegExp(
      `unfinished multipart upload.*abort-multipart-upload --bucket ${BUCKET} --key ${prefix}/obs/obs_0.parquet --upload-id ${id}`,
    ),
  );
  const a = await s3("append", url, ...later, "--json");
  assert.equal(a.code, 0, a.stderr);
  assert.deepEqual(JSON.parse(a.stdout).removed_temp_files, [
    `${url}/obs/obs_0.parquet (an unfinished upload)`,
  ]);
  assert.deepEqual(await store.uploads(), []);

  await killedUpload(".deltacells-staging-0123456789ab/tiles/tile_1.bin");
  const c = await s3("convert", ...first, url, ...small, "--overwrite", "--json");
  assert.equal(c.code, 0, c.stderr);
  assert.deepEqual(JSON.parse(c.stdout).removed_temp_files, [
    `${url}/.deltacells-staging-0123456789ab/tiles/tile_1.bin (an unfinished upload)`,
  ]);
  assert.deepEqual(await store.uploads(), []);
  const clean = await s3("validate", url, "--json");
  assert.equal(clean.code, 0, clean.stdout);
  assert.deepEqual(JSON.parse(clean.stdout).warnings, []);
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
