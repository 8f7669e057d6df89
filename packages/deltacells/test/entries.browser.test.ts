/**
 * Every package's browser-safe entry, bundled for the browser platform by esbuild as an
 * application would (package.json `exports`/`imports` conditions `browser` and `source`, dynamic
 * imports split into chunks of their own): no Node built-in anywhere in the bundle, no native
 * module (`zstd-napi`), and no apache-arrow among what the entry loads up front (obs load it on
 * first use). And no source file of the packages hides an import from bundlers (a computed
 * specifier, `@vite-ignore`, a runtime "is this Node?" test): environments differ by module, chosen
 * by conditions, never by run-time checks. (Bundling only: no browser is started.)
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { staticInputs } from "../../../test-utils/up-front.js";

const repo = join(dirname(fileURLToPath(import.meta.url)), "../../..");

/** Each browser-safe entry, and the packages it may load up front beyond its own sources. */
const ENTRIES: Record<string, { allowed?: string[] }> = {
  "@deltacells/storage": {},
  "@deltacells/core": {},
  "@deltacells/core/worker": {},
  "@deltacells/core/arrow": { allowed: ["apache-arrow", "hyparquet-writer"] },
  "@deltacells/sporadik": {},
  "@deltacells/sporadik/spec": {},
  "@deltacells/anndata": {},
};

/** Never in a browser bundle, not even in a lazily loaded chunk. */
const NODE_ONLY_PACKAGES = ["zstd-napi"];
/** Node's globals (`process`, `Buffer`, CommonJS), which a browser does not have. */
const NODE_GLOBALS = /\bprocess\.(?:env|versions|argv|cwd|platform)\b|\bBuffer\.|\b__dirname\b|\brequire\(/;
/** Source text without its comments (which may well mention `process.env`). */
function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\/|(^|[^:])\/\/.*$/gm, "$1");
}

/** Only in a chunk loaded on demand (or where an entry says it is wanted). */
const LAZY_PACKAGES = ["apache-arrow", "hyparquet", "hyparquet-writer", "hyparquet-compressors"];

const builtins = new Set(builtinModules);
const isBuiltin = (s: string) => s.startsWith("node:") || builtins.has(s) || builtins.has(s.split("/")[0]!);

function packageOf(input: string): string | undefined {
  return /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input)?.[1];
}

async function bundle(entry: string) {
  const result = await build({
    stdin: { contents: `import * as m from "${entry}"; globalThis.__m = m;`, resolveDir: repo },
    bundle: true,
    splitting: true,
    write: false,
    outdir: join(repo, "bench/out/entries"),
    format: "esm",
    platform: "browser",
    target: "chrome120",
    conditions: ["source"],
    metafile: true,
    logLevel: "silent",
    supported: { "import-meta": true, "top-level-await": true },
  });
  return { meta: result.metafile, texts: result.outputFiles.map((f) => f.text) };
}

for (const [entry, { allowed = [] }] of Object.entries(ENTRIES)) {
  test(`${entry} bundles for the browser with no Node built-in, no native module, nothing heavy up front`, async () => {
    const { meta, texts } = await bundle(entry);
    const builtinImports = Object.entries(meta.inputs).flatMap(([file, input]) =>
      input.imports
        .filter((i) => isBuiltin(i.original ?? i.path))
        .map((i) => `${file} -> ${i.original ?? i.path}`),
    );
    assert.deepEqual(builtinImports, [], "imports of Node built-ins");
    for (const text of texts)
      assert.doesNotMatch(
        text,
        /\b(?:import|from|require)\s*\(?\s*["']node:/,
        "a node: specifier in the output",
      );
    // Node globals type-check in the browser config too (apache-arrow's types pull in @types/node),
    // so the modules the bundle holds are checked for them here.
    const nodeGlobals = Object.keys(meta.inputs)
      .filter((i) => i.startsWith("packages/"))
      .filter((i) => NODE_GLOBALS.test(withoutComments(readFileSync(join(repo, i), "utf8"))));
    assert.deepEqual(nodeGlobals, [], "modules using Node globals");
    const everywhere = new Set(Object.keys(meta.inputs).map(packageOf));
    for (const p of NODE_ONLY_PACKAGES) assert.ok(!everywhere.has(p), `${p} is in the bundle`);
    const front = new Set([...staticInputs(meta)].map(packageOf));
    for (const p of LAZY_PACKAGES)
      if (!allowed.includes(p)) assert.ok(!front.has(p), `${p} is loaded up front by ${entry}`);
  });
}

test("the entries' own sources are in the bundles: the check above saw the real modules", async () => {
  const { meta } = await bundle("@deltacells/core");
  const own = Object.keys(meta.inputs).filter((i) => i.startsWith("packages/deltacells/src/"));
  for (const f of [
    "codec/native/addon-browser.ts",
    "codec/zstd/platform-browser.ts",
    "codec/pool/threads-browser.ts",
  ])
    assert.ok(own.includes(`packages/deltacells/src/${f}`), `${f} is what the browser gets`);
  assert.ok(
    !own.some((f) => /-node\.ts$|-source\.ts$/.test(f)),
    `Node modules in the bundle: ${own.join(", ")}`,
  );
});

/** Ways to hide an import from a bundler, or to pick an environment at run time. */
const HIDDEN = [
  { what: "a computed import specifier", re: /\bimport\s*\(\s*(?:\/\*[^*]*\*\/\s*)?(?:[A-Za-z_]|\$(?!\{))/ },
  { what: "a specifier assembled from parts", re: /\[\s*["'](?:node|zstd-napi)["']\s*,/ },
  { what: "@vite-ignore", re: /@vite-ignore|webpackIgnore/ },
  { what: "a run-time Node check", re: /\bversions\??\.node\b|\bisNode\b/ },
];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? sources(join(dir, d.name)) : d.name.endsWith(".ts") ? [join(dir, d.name)] : [],
  );
}

test("no source file hides an import from bundlers or tests for Node at run time", () => {
  const found: string[] = [];
  for (const pkg of ["storage", "deltacells", "sporadik", "anndata"]) {
    for (const file of sources(join(repo, "packages", pkg, "src"))) {
      const text = readFileSync(file, "utf8");
      for (const { what, re } of HIDDEN) if (re.test(text)) found.push(`${relative(repo, file)}: ${what}`);
    }
  }
  assert.deepEqual(found, []);
});

test("the check catches each trick it looks for", () => {
  const tricks = [
    'await import(["node", "module"].join(":"))',
    "await import(/* @vite-ignore */ specifier)",
    "const p = globalThis.process; if (typeof p?.versions?.node === 'string') {}",
    "function isNode() {}",
  ];
  for (const t of tricks)
    assert.ok(
      HIDDEN.some(({ re }) => re.test(t)),
      t,
    );
  assert.ok(!HIDDEN.some(({ re }) => re.test('await import("./arrow.js")')), "a literal dynamic import");
  assert.ok(
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the text of generated worker code, on purpose
    !HIDDEN.some(({ re }) => re.test("`import(${tsx}).then(...)`")),
    "an import in generated worker code",
  );
});
