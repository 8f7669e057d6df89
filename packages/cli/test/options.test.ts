/**
 * What each command's help says against what it does: every option its help lists is accepted,
 * every option it accepts is listed, and the ways of asking for help and the version all work.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { type Common, commonOptions } from "../src/args.js";
import { cli, cliPlain, deltacellsPlain, REPO, streamInProcess } from "./cli-helpers.js";

/** The command names the top-level help lists. */
async function commandNames(): Promise<string[]> {
  const r = await cli("--help");
  const section = r.stdout.split("commands:\n")[1]!.split("\n\n")[0]!;
  return section.split("\n").map((l) => l.trim().split(/\s+/)[0]!);
}

/** The options a command's parser takes: its own table, the shared ones it takes, and --debug. */
async function accepted(name: string): Promise<Map<string, "string" | "boolean">> {
  const module = (await import(`../src/${name}/command.js`)) as Record<string, unknown>;
  const tables = Object.entries(module).filter(([k]) => k.endsWith("_OPTIONS"));
  assert.equal(tables.length, 1, `${name}/command.ts exports its option table (one *_OPTIONS)`);
  const common = Object.entries(module).find(([k]) => k.endsWith("_COMMON"))?.[1] as Common | undefined;
  const all = { ...(tables[0]![1] as object), ...commonOptions(common) } as Record<string, { type: string }>;
  const out = new Map(Object.entries(all).map(([k, o]) => [k, o.type as "string" | "boolean"]));
  out.set("debug", "boolean");
  return out;
}

/** The options the help lists: the names at the start of each line of its options section. */
function listed(help: string): string[] {
  const section = help.split("\noptions:\n")[1];
  assert.ok(section, "the help has an options: section");
  const names = new Set<string>();
  for (const line of section.split("\n")) {
    if (!/^ {2}(-\w, )?--/.test(line)) continue;
    const spec = line.slice(2).split(/ {2,}/)[0]!;
    for (const m of spec.matchAll(/--([a-z0-9-]+)/g)) names.add(m[1]!);
  }
  return [...names].sort();
}

test("every command's help lists exactly the options it accepts, and each listed one is accepted", async () => {
  const names = await commandNames();
  assert.ok(names.includes("convert") && names.includes("serve"), names.join(" "));
  for (const name of names) {
    const help = await cli(name, "--help");
    assert.equal(help.code, 0, help.stderr);
    const options = await accepted(name);
    const shown = listed(help.stdout);
    const unlisted = [...options.keys()].filter((o) => !shown.includes(o));
    const unknown = shown.filter((o) => !options.has(o));
    assert.deepEqual({ unlisted, unknown }, { unlisted: [], unknown: [] }, `deltacells ${name} --help`);
    for (const [option, type] of options) {
      const r = await cli(name, type === "string" ? `--${option}=1` : `--${option}`, "--help");
      assert.equal(r.code, 0, `deltacells ${name} --${option} --help: ${r.stderr}`);
      assert.equal(r.stdout, help.stdout);
    }
  }
});

test("stream refuses --json and serve the remote-read options, as their help no longer lists them", async () => {
  const stream = await streamInProcess("ds", "--json");
  assert.equal(stream.code, 2);
  assert.match(stream.stderr, /^deltacells stream: unknown option --json\n/);
  const serve = await deltacellsPlain("serve", ".", "--retries", "3");
  assert.equal(serve.code, 2);
  assert.match(serve.stderr, /^deltacells serve: unknown option --retries\n/);
});

test("an unknown option is named in the command's words, with the nearest known one", async () => {
  const r = await streamInProcess("ds", "--batchsize", "10");
  assert.equal(r.code, 2);
  assert.equal(
    r.stderr,
    "deltacells stream: unknown option --batchsize; did you mean --batch-size?\nRun `deltacells stream --help` for usage.\n",
  );
  const far = await cliPlain("inspect", "ds", "--frobnicate");
  assert.match(far.stderr, /^deltacells inspect: unknown option --frobnicate\n/);
  const short = await cliPlain("inspect", "ds", "-x");
  assert.match(short.stderr, /^deltacells inspect: unknown option -x\n/);
  const single = await cliPlain("inspect", "ds", "-json");
  assert.match(
    single.stderr,
    /^deltacells inspect: unknown option -json \(options take two dashes: --json\?\)\n/,
  );
  const missing = await cliPlain("export", "ds", "out.mtx", "--cells");
  assert.match(missing.stderr, /^deltacells export: --cells needs a value\n/);
  const dash = await cliPlain("export", "ds", "out.mtx", "--cells", "--quiet");
  assert.match(dash.stderr, /^deltacells export: --cells needs a value, got the option --quiet/);
  const value = await cliPlain("export", "ds", "out.mtx", "--quiet=yes");
  assert.match(value.stderr, /^deltacells export: --quiet takes no value, got "--quiet=yes"\n/);
  for (const out of [r, far, short, single, missing, dash, value])
    assert.doesNotMatch(out.stderr, /positional|'/, "none of parseArgs' wording or quoting");
});

test("deltacells help COMMAND prints the command's help; help of an unknown command is a usage error", async () => {
  for (const name of ["convert", "stream", "serve"]) {
    const help = await cli("help", name);
    assert.equal(help.code, 0, help.stderr);
    assert.equal(help.stdout, (await cli(name, "--help")).stdout);
  }
  const unknown = await cliPlain("help", "frobnicate");
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /^deltacells help: unknown command "frobnicate"/);
});

test("-v, -V, --version and version all print the version", async () => {
  const expected = (await cli("--version")).stdout;
  assert.match(expected, /^deltacells \d+\.\d+\.\d+/);
  for (const word of ["-v", "-V", "version"]) {
    const r = await cli(word);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, expected);
  }
});

test("docs/cli.md names every option of every command in the command's section", async () => {
  const doc = readFileSync(join(REPO, "docs/cli.md"), "utf8");
  for (const name of await commandNames()) {
    const section = doc.split(`\n## \`deltacells ${name}\``)[1]?.split("\n## ")[0];
    assert.ok(section, `docs/cli.md has a section for ${name}`);
    const module = (await import(`../src/${name}/command.js`)) as Record<string, object>;
    const own = Object.keys(Object.entries(module).find(([k]) => k.endsWith("_OPTIONS"))![1]);
    const missing = own.filter((o) => !section.includes(`\`--${o}\``));
    assert.deepEqual(missing, [], `docs/cli.md, deltacells ${name}`);
  }
});
