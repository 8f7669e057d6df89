/**
 * Hostile keys and numbers: paths that try to leave a store (traversal, absolute paths, encoded
 * `..`, backslashes, NUL) in a sporadik block's layout paths, in a dataset manifest's companion
 * path and obs fingerprint (which names a cache folder), and in request paths to `deltacells
 * serve`; and huge or malformed numbers in a manifest and in sporadik metadata. A planted store
 * of other numbers sits where an escaping path would land, and a secret beside the served root,
 * so an escape shows as a wrong answer. Everything must be refused (or, for a path that stays
 * inside, answered correctly); nothing may hang or allocate without bound.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { openDataset } from "@deltacells/core/node";
import { convert } from "../../packages/cli/src/convert/command.js";
import { startServer } from "../../packages/cli/src/serve/http.js";
import { validate } from "../../packages/cli/src/validate/command.js";
import { mulberry32 } from "../../test-utils/prng.js";
import type { FaultClass, RunOptions } from "./classes.js";
import { REPO, workDir } from "./fixtures.js";
import { type CaseResult, judgeError, withTimeout } from "./outcome.js";
import { readAll, type Slices, sameSlices, writeSporadik } from "./sporadik-fixture.js";

/** Ways to spell "one level up" that a careless decoder or path join might honour. */
const UP = ["..", "%2e%2e", "%2E%2e", ".%2e", "%2e.", "%252e%252e", "%c0%ae%c0%ae", "..\\", ".. ", "..;"];
const SEP = ["/", "%2f", "%2F", "\\", "%5c", "//"];

/** Seeded distinct traversal spellings reaching `target` (at most every combination: 240). */
function traversals(rnd: () => number, count: number, target: string): string[] {
  const out = new Set<string>();
  while (out.size < Math.min(count, UP.length * SEP.length * 4)) {
    const up = UP[Math.floor(rnd() * UP.length)]!;
    const sep = SEP[Math.floor(rnd() * SEP.length)]!;
    const depth = 1 + Math.floor(rnd() * 4);
    out.add(`${Array.from({ length: depth }, () => up).join(sep)}${sep}${target}`);
  }
  return [...out];
}

const HUGE: unknown[] = [2 ** 53, 2 ** 53 + 2, 1e300, -1, 0.5, 2 ** 31, 2 ** 32 + 1, "7", null, [], -0];

async function run({ seed, long, log }: RunOptions): Promise<CaseResult[]> {
  const work = workDir("hostile");
  const results: CaseResult[] = [];
  const rnd = mulberry32(seed);
  const spellings = long ? 60 : 8;
  const check = async (
    id: string,
    kind: string,
    names: string[],
    attempt: () => Promise<"correct" | "wrong" | CaseResult["outcome"]>,
  ) => {
    const seen = await withTimeout(20_000, async (): Promise<Omit<CaseResult, "id" | "kind">> => {
      try {
        return { outcome: await attempt() };
      } catch (err) {
        return judgeError(err, names);
      }
    });
    results.push(seen === "timeout" ? { id, kind, outcome: "hang" } : { id, kind, ...seen });
  };
  try {
    // A sporadik store, and another one (other numbers) where escaping paths land.
    const store = join(work.dir, "root", "store.zarr");
    const expected = await writeSporadik(store, seed);
    const outside = join(work.dir, "outside");
    await writeSporadik(outside, seed + 1);
    const blockPath = join(store, "zarr.json");
    const block = readFileSync(blockPath, "utf8");
    const readsSame = async (dir: string, want: Slices[]) => {
      for (const axis of [0, 1])
        if (!sameSlices(await readAll(dir, axis), want[axis]!)) return "wrong" as const;
      return "correct" as const;
    };
    const layoutPaths = [
      ...traversals(rnd, spellings, "outside/layouts/axis0"),
      join(outside, "layouts/axis0"),
      `file://${join(outside, "layouts/axis0")}`,
      "layouts/axis0/..",
      "layouts/axis0\u0000",
      "",
      `layouts/axis0/${"x/".repeat(2_000)}..`,
    ];
    for (const [i, path] of layoutPaths.entries()) {
      const json = JSON.parse(block);
      json.attributes.sporadik.layouts[0].path = path;
      writeFileSync(blockPath, JSON.stringify(json));
      await check(
        `block ${i}: layouts[0].path = ${JSON.stringify(path).slice(0, 80)}`,
        "sporadik layout path",
        ["zarr.json", "layouts"],
        async () => {
          const r = await validate([store, "--json", "--quiet", "--threads", "1"]);
          if (!(r.json as { valid: boolean }).valid) return "refused";
          return readsSame(store, expected);
        },
      );
    }
    for (const huge of HUGE) {
      for (const field of ["shape", "layouts"] as const) {
        const json = JSON.parse(block);
        if (field === "shape") json.attributes.sporadik.shape = [huge, 90];
        else json.attributes.sporadik.layouts[0].indexed_axis = huge;
        writeFileSync(blockPath, JSON.stringify(json));
        await check(
          `block ${field} = ${JSON.stringify(huge)}`,
          `sporadik block ${field}`,
          ["zarr.json", store],
          async () => {
            const r = await validate([store, "--json", "--quiet", "--threads", "1"]);
            if (!(r.json as { valid: boolean }).valid) return "refused";
            return readsSame(store, expected);
          },
        );
      }
    }
    writeFileSync(blockPath, block);
    for (const array of ["indptr", "indices"]) {
      const metaPath = join(store, "layouts/axis0", array, "zarr.json");
      const meta = readFileSync(metaPath, "utf8");
      for (const huge of HUGE) {
        for (const field of ["shape", "chunk_shape"] as const) {
          const json = JSON.parse(meta);
          if (field === "shape") json.shape = [huge];
          else json.chunk_grid.configuration.chunk_shape = [huge];
          writeFileSync(metaPath, JSON.stringify(json));
          await check(
            `${array} ${field} = ${JSON.stringify(huge)}`,
            `sporadik ${field}`,
            [`layouts/axis0/${array}`, "layouts/axis0"],
            async () => {
              const r = await validate([store, "--json", "--quiet", "--threads", "1"]);
              if (!(r.json as { valid: boolean }).valid) return "refused";
              return readsSame(store, expected);
            },
          );
        }
      }
      writeFileSync(metaPath, meta);
    }
    log(`hostile-keys: sporadik done (${results.length} cases)`);

    // A dataset whose manifest names a companion store and an obs fingerprint.
    const ds = join(work.dir, "root", "ds");
    await convert([join(REPO, "data/anndata/csr.h5ad"), ds, "--level", "3", "--threads", "1", "--quiet"]);
    const manifestPath = join(ds, "manifest.json");
    const manifest = readFileSync(manifestPath, "utf8");
    const contents = async (dir: string) => {
      const d = await openDataset(dir);
      const rows = await d.cells(0, d.nCells);
      return JSON.stringify([
        d.nGenes,
        Array.from(rows.indptr),
        Array.from(rows.indices),
        Array.from(rows.data),
      ]);
    };
    const original = await contents(ds);
    for (const path of [...traversals(rnd, spellings, "outside"), outside, `file://${outside}`]) {
      const json = JSON.parse(manifest);
      json.metadata.sporadik = path;
      writeFileSync(manifestPath, JSON.stringify(json));
      await check(
        `metadata.sporadik = ${JSON.stringify(path).slice(0, 80)}`,
        "dataset companion path",
        ["manifest.json"],
        async () => {
          const r = await validate([ds, "--json", "--quiet", "--threads", "1"]);
          return (r.json as { valid: boolean }).valid ? "wrong" : "refused";
        },
      );
    }
    const cache = join(work.dir, "cache", "inner");
    mkdirSync(cache, { recursive: true });
    for (const fingerprint of [
      ...traversals(rnd, spellings, "escaped"),
      join(work.dir, "escaped"),
      "",
      "a/b",
    ]) {
      const json = JSON.parse(manifest);
      json.obs_fingerprint = fingerprint;
      writeFileSync(manifestPath, JSON.stringify(json));
      await check(
        `obs_fingerprint = ${JSON.stringify(fingerprint).slice(0, 80)}`,
        "dataset obs fingerprint",
        ["manifest.json", "obs"],
        async () => {
          const frame = await (await openDataset(ds)).obs(undefined, { cacheDir: cache });
          const escaped =
            readdirSync(work.dir).includes("escaped") || readdirSync(join(work.dir, "cache")).length > 1;
          return escaped || frame === undefined ? "wrong" : "correct";
        },
      );
    }
    for (const field of [
      "n_cells",
      "n_genes",
      "tile_size",
      "tile_cells",
      "tile_nnz",
      "tile_bytes",
      "n_chunks",
    ]) {
      for (const huge of HUGE) {
        const json = JSON.parse(manifest);
        json[field] = Array.isArray(json[field]) ? [huge] : huge;
        writeFileSync(manifestPath, JSON.stringify(json));
        await check(
          `manifest ${field} = ${JSON.stringify(huge)}`,
          `manifest ${field}`,
          ["manifest.json", "tile_000000"],
          async () => {
            const r = await validate([ds, "--json", "--quiet", "--threads", "1"]);
            if (!(r.json as { valid: boolean }).valid) return "refused";
            // Accepted: only harmless if every number reads as before (n_chunks is informative).
            return (await contents(ds)) === original ? "correct" : "wrong";
          },
        );
      }
    }
    writeFileSync(manifestPath, manifest);
    log(`hostile-keys: dataset done (${results.length} cases)`);

    // deltacells serve with the secret beside its root.
    writeFileSync(join(work.dir, "secret"), "SECRET-CONTENTS");
    const server = await startServer({ root: join(work.dir, "root"), port: 0, host: "127.0.0.1" });
    try {
      const paths = [
        ...traversals(rnd, long ? 240 : 40, "secret").map((p) => `/ds/${p}`),
        ...traversals(rnd, long ? 100 : 10, "secret").map((p) => `/${p}`),
      ];
      for (const path of paths) {
        await check(`GET ${path}`, "serve request path", [], async () => {
          const { status, body } = await rawGet(server.url, path);
          if (body.includes("SECRET")) return "wrong";
          // Anything else served (a listing, a page of the viewer) is inside the root.
          return status >= 400 ? "refused" : "correct";
        });
      }
    } finally {
      await server.close();
    }
    return results;
  } finally {
    work.dispose();
  }
}

/** A GET with the path exactly as given (no URL normalisation on the way). */
function rawGet(base: string, path: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((ok, fail) => {
    // Node's client refuses a raw space; every other byte goes as given.
    const req = request({ host: hostname, port, path: path.replaceAll(" ", "%20"), method: "GET" }, (res) => {
      let body = "";
      res.on("data", (d) => {
        body += d;
      });
      res.on("end", () => ok({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", fail);
    req.end();
  });
}

export const hostileKeys: FaultClass = {
  name: "hostile-keys",
  summary:
    "traversal, absolute, encoded and NUL paths in a sporadik block, a manifest's companion path and obs fingerprint, and requests to deltacells serve; huge and malformed numbers in a manifest and in sporadik metadata",
  run,
};
