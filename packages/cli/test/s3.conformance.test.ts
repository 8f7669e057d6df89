/** The CLI writing a dataset straight to S3 and reading it back from there (against moto_server). */
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { tempDir } from "./cli-helpers.js";
import { motoBucket } from "./s3-helpers.js";

const BUCKET = "deltacells-cli";
const deltacellsS3 = motoBucket(BUCKET);

test("a dataset converted straight to s3:// validates there and exports the same cells as a local one", async () => {
  const url = `s3://${BUCKET}/datasets/csr`;
  const conv = await deltacellsS3(
    "convert",
    "data/anndata/csr.h5ad",
    url,
    "--tile-size",
    "16",
    "--level",
    "3",
    "--json",
    "--stats",
  );
  assert.equal(conv.code, 0, conv.stderr);
  const summary = JSON.parse(conv.stdout);
  assert.equal(summary.stats.errors, 0);

  const val = await deltacellsS3("validate", url, "--json", "--stats");
  assert.equal(val.code, 0, val.stdout + val.stderr);
  const report = JSON.parse(val.stdout);
  assert.equal(report.tiles_checked, 4);
  // manifest + one GET per tile + the three gene files + obs/schema.json and the one obs shard, nothing more
  assert.equal(report.stats.requests.get, 1 + 4 + 3 + 2);
  assert.equal(report.stats.requests.get_range, 0);

  const dir = tempDir();
  const local = join(dir, "local");
  assert.equal(
    (await deltacellsS3("convert", "data/anndata/csr.h5ad", local, "--tile-size", "16", "--level", "3")).code,
    0,
  );
  for (const [src, out] of [
    [url, join(dir, "s3.mtx")],
    [local, join(dir, "local.mtx")],
  ] as const) {
    const r = await deltacellsS3("export", src, out, "--cells", "5:50", "--source-gene-order");
    assert.equal(r.code, 0, r.stderr);
  }
  const body = (p: string) => readFileSync(p, "utf8").split("\n").slice(2).join("\n");
  assert.equal(body(join(dir, "s3.mtx")), body(join(dir, "local.mtx")));
});

test("s3:// credentials: none is refused naming where it looked, --no-sign-request reads unsigned, an AWS_PROFILE of ~/.aws signs", async () => {
  const url = `s3://${BUCKET}/datasets/creds`;
  const conv = await deltacellsS3("convert", "data/anndata/csr.h5ad", url, "--level", "3", "--quiet");
  assert.equal(conv.code, 0, conv.stderr);
  const home = tempDir();
  // Nothing: no key variables, no profile, a HOME without ~/.aws.
  const none = {
    AWS_ACCESS_KEY_ID: "",
    AWS_SECRET_ACCESS_KEY: "",
    AWS_SESSION_TOKEN: "",
    AWS_PROFILE: "",
    AWS_DEFAULT_PROFILE: "",
    AWS_SHARED_CREDENTIALS_FILE: "",
    AWS_CONFIG_FILE: "",
    HOME: home,
  };
  const refused = await deltacellsS3.withEnv(none)("inspect", url);
  assert.equal(refused.code, 1, refused.stdout);
  assert.match(refused.stderr, /no AWS credentials for s3:\/\/deltacells-cli\/datasets\/creds/);
  assert.match(refused.stderr, /\.aws\/credentials \[default\] \(no such file\)/);
  assert.match(refused.stderr, /--no-sign-request/);

  await deltacellsS3.makePublic("datasets/creds/");
  const unsigned = await deltacellsS3.withEnv(none)("inspect", url, "--no-sign-request", "--json");
  assert.equal(unsigned.code, 0, unsigned.stderr);
  assert.equal(JSON.parse(unsigned.stdout).n_cells, 57);

  mkdirSync(join(home, ".aws"));
  writeFileSync(
    join(home, ".aws", "credentials"),
    "[default]\naws_access_key_id = wrong\n\n[work]\naws_access_key_id = testing\naws_secret_access_key = testing\n",
  );
  writeFileSync(join(home, ".aws", "config"), "[profile work]\nregion = us-east-1\n");
  const profiled = await deltacellsS3.withEnv({ ...none, AWS_PROFILE: "work" })("validate", url);
  assert.equal(profiled.code, 0, profiled.stdout + profiled.stderr);
  const missing = await deltacellsS3.withEnv({ ...none, AWS_PROFILE: "nope" })("inspect", url);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /no AWS profile "nope" \(named by AWS_PROFILE\)/);
});

test("zarr inputs convert straight from s3:// (v2 and v3), as from the local copy; HDF5 is refused with the copy command", async () => {
  const dir = tempDir();
  for (const name of ["csr-v3.zarr", "csr-v2.zarr"]) {
    await deltacellsS3.upload(join("data/anndata", name), `inputs/${name}`);
    const remote = join(dir, `remote-${name}`);
    const local = join(dir, `local-${name}`);
    const opts = ["--tile-size", "16", "--level", "3", "--quiet"];
    const a = await deltacellsS3("convert", `s3://${BUCKET}/inputs/${name}`, remote, ...opts);
    assert.equal(a.code, 0, a.stderr);
    assert.equal((await deltacellsS3("convert", join("data/anndata", name), local, ...opts)).code, 0);
    for (const file of ["tiles/tile_000000.dct", "tiles/tile_000003.dct", "var.parquet", "gene_order.npy"]) {
      assert.deepEqual(readFileSync(join(remote, file)), readFileSync(join(local, file)), `${name}: ${file}`);
    }
  }
  // --format sporadik takes the same input (a dataset only when the URL has manifest.json).
  const sporadik = await deltacellsS3(
    "convert",
    `s3://${BUCKET}/inputs/csr-v3.zarr`,
    join(dir, "s.zarr"),
    "--format",
    "sporadik",
    "--json",
  );
  assert.equal(sporadik.code, 0, sporadik.stderr);
  assert.equal(JSON.parse(sporadik.stdout).source_format, "anndata-zarr");
  const h5ad = await deltacellsS3("convert", `s3://${BUCKET}/inputs/pbmc.h5ad`, join(dir, "x"));
  assert.equal(h5ad.code, 1);
  assert.match(
    h5ad.stderr,
    /is read from a local file only.*aws s3 cp s3:\/\/deltacells-cli\/inputs\/pbmc\.h5ad \.\/pbmc\.h5ad/,
  );
});
