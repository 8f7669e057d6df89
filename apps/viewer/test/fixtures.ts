/**
 * What the viewer's tests and bench serve: the viewer built by Vite, and datasets converted by the
 * CLI with `--sporadik`, obs included (the input's obs columns and its `X_umap` as
 * `X_umap_0`/`X_umap_1` float32 columns, as `deltacells convert` writes them).
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { createTilePool, type DatasetSource, writeDataset } from "@deltacells/core";
import { zstdCompressor } from "@deltacells/core/node";
import { FolderStore } from "@deltacells/storage/node";
import { AwsClient } from "aws4fetch";
import { writeCompanion } from "../../../packages/cli/src/convert/companion.js";
import { Locations } from "../../../packages/cli/src/locations.js";
import { ProgressBar } from "../../../packages/cli/src/progress.js";
import { run as runCommand } from "../../../packages/cli/src/run.js";

export const REPO = resolve(import.meta.dirname, "../../..");
export const PBMC = join(REPO, "data/pbmc68k-counts/pbmc68k_counts.h5ad");

function run(args: string[], cwd = REPO): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((ok, fail) => {
    const child = spawn(args[0]!, args.slice(1), { cwd });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("error", fail);
    child.on("close", (code) => ok({ code: code ?? -1, stdout, stderr }));
  });
}

/**
 * `deltacells ARGS` from the sources, in this process (no child process's start-up to pay, and runs
 * may overlap); rejects on a non-zero exit. Paths are absolute: the command runs in this process's
 * folder.
 */
export async function deltacells(...args: string[]): Promise<string> {
  let stdout = "";
  let stderr = "";
  const code = await runCommand(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    debug: true,
  });
  if (code !== 0) throw new Error(`deltacells ${args.join(" ")} failed (${code}): ${stderr}`);
  return stdout;
}

/**
 * Builds the viewer with Vite into `outDir` (what `deltacells serve` hands out) and returns it. Each
 * test file and bench builds into a folder of its own: a build into a shared one replaces the
 * bundle under a page another process is loading.
 */
export async function buildViewer(outDir: string): Promise<string> {
  const r = await run(
    [
      process.execPath,
      join(REPO, "node_modules/vite/bin/vite.js"),
      "build",
      "--logLevel",
      "warn",
      "--outDir",
      outDir,
      "--emptyOutDir",
      // Vite 8 refuses a second build of the same project while one runs (a lock in the project);
      // the builds write to folders of their own, so test files and benches may build at once.
      "--bypass-lock",
    ],
    join(REPO, "apps/viewer"),
  );
  if (r.code !== 0) throw new Error(`vite build failed: ${r.stderr}${r.stdout}`);
  return outDir;
}

/**
 * The pbmc68k demo: converted with its companion, obs and UMAP, at `<root>/pbmc68k`; without its
 * rows in embedding order (what the tests of the companion's reads expect: a lasso reads the
 * companion; viewer-scanpy.conformance.test.ts builds the dataset with them).
 */
export async function buildPbmc(root: string): Promise<string> {
  const dir = join(root, "pbmc68k");
  await deltacells("convert", PBMC, dir, "--sporadik", "--no-sporadik-rows", "--quiet", "--threads", "1");
  return dir;
}

/**
 * A dataset made from `source` at `dir` as `deltacells convert --sporadik` makes it: the dataset,
 * its companion, its statistics.
 */
export async function buildFromSource(dir: string, source: DatasetSource): Promise<string> {
  const pool = createTilePool({ threads: 1 });
  try {
    await writeDataset(source, new FolderStore(dir), {
      encoder: pool,
      compress: zstdCompressor(3),
      level: 3,
      inFlight: 3,
    });
  } finally {
    await pool.close();
  }
  await writeCompanion(new Locations(), dir, {
    threads: 1,
    bar: new ProgressBar(process.stderr, false),
    checksums: true,
    breakLock: false,
    writer: "the viewer's test fixtures",
  });
  await deltacells("stats", dir, "--quiet", "--threads", "1");
  return dir;
}

/**
 * A small tissue section: 20 x 15 spots on a grid of image pixels (obsm `spatial`, y downwards,
 * spot `i` at column i % 20, row floor(i / 20)), its `region` (left or right half), a UMAP and a
 * t-SNE; gene 0 is expressed in the left half only.
 */
export async function buildSpatial(root: string): Promise<string> {
  const n = 300;
  const genes = 40;
  const rows: number[][] = Array.from({ length: n }, (_, i) =>
    Array.from({ length: genes }, (_, g) =>
      g === 0 ? (i % 20 < 10 ? 5 + (i % 3) : 0) : (i * 7 + g * 3) % 5,
    ),
  );
  const spatial = new Float32Array(2 * n);
  const umap = new Float32Array(2 * n);
  const tsne = new Float32Array(2 * n);
  for (let i = 0; i < n; i++) {
    spatial[2 * i] = 100 + 10 * (i % 20);
    spatial[2 * i + 1] = 50 + 10 * Math.floor(i / 20);
    umap[2 * i] = i % 20 < 10 ? -3 + (i % 7) / 7 : 3 + (i % 5) / 5;
    umap[2 * i + 1] = Math.floor(i / 20) / 15;
    tsne[2 * i] = Math.cos(i);
    tsne[2 * i + 1] = Math.sin(i);
  }
  const source: DatasetSource = {
    format: "memory",
    location: "memory://spatial",
    matrixPath: "X",
    nCells: n,
    nGenes: genes,
    var: async () => ({
      indexName: "gene",
      index: Array.from({ length: genes }, (_, g) => `GENE${g}`),
      columns: [],
    }),
    async *rowBlocks() {
      const indptr = [0];
      const indices: number[] = [];
      const data: number[] = [];
      for (const row of rows) {
        row.forEach((v, g) => {
          if (v) {
            indices.push(g);
            data.push(v);
          }
        });
        indptr.push(indices.length);
      }
      yield {
        rowStart: 0,
        nRows: n,
        indptr: Float64Array.from(indptr),
        indices: Int32Array.from(indices),
        data: Int32Array.from(data),
      };
    },
    obs: async () => ({
      indexName: "spot",
      index: Array.from({ length: n }, (_, i) => `SPOT-${i}`),
      columns: [
        {
          name: "region",
          kind: "category",
          codes: Int32Array.from({ length: n }, (_, i) => (i % 20 < 10 ? 0 : 1)),
          categories: ["left", "right"],
          ordered: false,
        },
      ],
    }),
    obsmKeys: async () => ["spatial", "X_umap", "X_tsne"],
    obsm: async () => ({
      spatial: { kind: "dense", shape: [n, 2], values: spatial },
      X_umap: { kind: "dense", shape: [n, 2], values: umap },
      X_tsne: { kind: "dense", shape: [n, 2], values: tsne },
    }),
  };
  return buildFromSource(join(root, "spatial"), source);
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

/**
 * A public bucket as a page reads it: `bucket` made on the S3 server at `endpoint` (moto), with
 * the CORS rule a page needs (GET and HEAD from any origin, `Range` allowed, `Content-Range`
 * exposed), and each folder of `uploads` put under its prefix, every object public-read.
 */
export async function publicBucket(
  endpoint: string,
  bucket: string,
  uploads: { prefix: string; dir: string }[],
): Promise<void> {
  const client = new AwsClient({
    accessKeyId: "testing",
    secretAccessKey: "testing",
    region: "us-east-1",
    service: "s3",
    retries: 0,
  });
  const ok = async (res: Response, what: string) => {
    if (!res.ok) throw new Error(`${what}: ${res.status} ${await res.text()}`);
  };
  await ok(await client.fetch(`${endpoint}/${bucket}`, { method: "PUT" }), `create ${bucket}`);
  const cors = `<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod><AllowedMethod>HEAD</AllowedMethod><AllowedHeader>*</AllowedHeader><ExposeHeader>Content-Range</ExposeHeader><ExposeHeader>Content-Length</ExposeHeader><ExposeHeader>ETag</ExposeHeader></CORSRule></CORSConfiguration>`;
  await ok(
    await client.fetch(`${endpoint}/${bucket}?cors`, {
      method: "PUT",
      body: cors,
      headers: { "Content-Type": "application/xml" },
    }),
    `the CORS rule of ${bucket}`,
  );
  for (const { prefix, dir } of uploads) {
    for (const file of filesUnder(dir)) {
      const key = `${prefix}/${relative(dir, file)}`;
      await ok(
        await client.fetch(`${endpoint}/${bucket}/${key}`, {
          method: "PUT",
          body: readFileSync(file),
          headers: { "x-amz-acl": "public-read", "Content-Type": "application/octet-stream" },
        }),
        `upload ${key}`,
      );
    }
  }
}
