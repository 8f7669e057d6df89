#!/usr/bin/env node
/**
 * `node scripts/bundle-cli.mjs [OUTDIR]`, `npm run build`'s last step: the `deltacells` command
 * bundled with esbuild from the compiled dist/ of the workspace packages (after `tsc -b`) into
 * packages/cli/dist/bundle/: an entry, the tile pool's worker script, and one chunk per set of
 * modules loaded together (each command's modules load when it runs, as with its dynamic import).
 * Node loads a few files much faster than the ~300 ES modules of the command, apache-arrow and the
 * library: a `deltacells stream` spent ~0.3 s of CPU before its first batch resolving and
 * compiling them, competing with its workers' start. bin/deltacells.js runs the bundle when it is
 * newer than every package's last `tsc -b`, else dist/main.js; tests run the sources.
 *
 * What is bundled: the workspace packages and apache-arrow (with its flatbuffers and tslib).
 * Other packages stay imports, resolved from the bundle as from the command (native addons,
 * CommonJS, wasm and their worker scripts load from their own packages). Every module's
 * `import.meta.url` is rewritten to the URL of the dist file it came from, so the files a module
 * finds next to itself (package.json, the native kernel, worker scripts, the viewer) are found as
 * before; except the pool's: its "./worker.js" is the bundle's worker entry.
 */
import { readdir, readFile, rm } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..");
// The folder is an argument for the tests (which bundle into a temporary one).
const outdir = resolve(process.argv[2] ?? join(repo, "packages/cli/dist/bundle"));
const POOL_THREADS = join("packages", "deltacells", "dist", "codec", "pool", "threads-node.js");
const BUNDLED = /^(@deltacells\/|apache-arrow(\/|$)|flatbuffers(\/|$)|tslib(\/|$)|#)/;

/** Bare imports of packages other than the bundled ones stay imports. */
const keepOthersExternal = {
  name: "keep-others-external",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => (BUNDLED.test(args.path) ? undefined : { external: true }));
  },
};

/** `import.meta.url` of each workspace dist module: its own file's URL, relative to the bundle. */
const ownUrls = {
  name: "own-import-meta-url",
  setup(b) {
    b.onLoad({ filter: /\.(m?js|cjs)$/ }, async (args) => {
      const text = await readFile(args.path, "utf8");
      // The pool's worker script is the bundle's own (see entryPoints).
      if (!text.includes("import.meta.url") || args.path.endsWith(POOL_THREADS)) return undefined;
      const rel = relative(outdir, args.path).split("\\").join("/");
      return {
        contents: text.replaceAll("import.meta.url", `new URL(${JSON.stringify(rel)}, import.meta.url).href`),
        loader: "js",
      };
    });
  },
};

const result = await build({
  entryPoints: {
    main: join(repo, "packages/cli/dist/main.js"),
    // The tile pool's worker script: threads-node.js starts "./worker.js" next to itself.
    worker: join(repo, "packages/deltacells/dist/codec/pool/worker.js"),
  },
  outdir,
  // Each command's modules in their own chunks, loaded when the command runs (as its dynamic import).
  splitting: true,
  // Next to the entry: each module's rewritten import.meta.url is relative to this folder.
  chunkNames: "[name]-[hash]",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  // The `source` condition (TypeScript sources, for tests) is never bundled: the compiled dist is.
  conditions: ["node", "import", "default"],
  plugins: [keepOthersExternal, ownUrls],
  logLevel: "warning",
  legalComments: "none",
  metafile: true,
  absWorkingDir: repo,
});
// Chunks of an earlier build (their names hash their contents) would pile up: only this build's stay.
const made = new Set(Object.keys(result.metafile.outputs).map((f) => resolve(repo, f)));
for (const f of await readdir(outdir))
  if (f.endsWith(".js") && !made.has(join(outdir, f))) await rm(join(outdir, f));
