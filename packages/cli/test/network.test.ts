/**
 * The command (run in this process) against a misbehaving HTTP server: retries and the stall
 * timeout by default, and their flags.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { type RunningServer, startServe } from "../../../test-utils/servers.js";
import { FaultProxy } from "../../storage/test/helpers/fault-proxy.js";
import { cli, tempDir } from "./cli-helpers.js";

let server: RunningServer | undefined;
let proxy: FaultProxy | undefined;
let dir = "";

before(async () => {
  dir = tempDir();
  const r = await cli(
    "convert",
    "data/anndata/csr.h5ad",
    join(dir, "ds"),
    "--tile-size",
    "16",
    "--level",
    "3",
  );
  assert.equal(r.code, 0, r.stderr);
  server = await startServe(dir);
  proxy = await FaultProxy.start(server.url);
});

after(async () => {
  await proxy?.stop();
  await server?.stop();
});

/** A plan where every third request is answered 503 (far more than the 5% that used to fail a command). */
function every3rd503(n = 300) {
  return Array.from({ length: n }, (_, i) => (i % 3 === 0 ? ("503" as const) : ("pass" as const)));
}

test("inspect, validate and export succeed when a third of the requests are answered 503", async () => {
  const url = `${proxy!.url}/ds`;
  proxy!.reset(every3rd503());
  const inspect = await cli("inspect", url);
  assert.equal(inspect.code, 0, inspect.stderr);
  proxy!.reset(every3rd503());
  const validate = await cli("validate", url);
  assert.equal(validate.code, 0, validate.stdout + validate.stderr);
  proxy!.reset(every3rd503());
  const out = join(dir, "out.mtx");
  const exp = await cli("export", url, out);
  assert.equal(exp.code, 0, exp.stderr);
  assert.ok(proxy!.seen.some((s) => s.fault === "503"));
  proxy!.reset(every3rd503());
  const none = await cli("inspect", url, "--retries", "0");
  assert.equal(none.code, 1);
  assert.match(none.stderr, /error \[HttpStatus\]: GET .*\/ds\/manifest\.json answered 503/);
});

test("a stalled server fails inspect within --timeout x (--retries + 1), tagged, naming the URL", async () => {
  proxy!.reset([], "stall");
  const t0 = performance.now();
  const r = await cli("inspect", `${proxy!.url}/ds`, "--timeout", "1", "--retries", "1");
  const seconds = (performance.now() - t0) / 1000;
  assert.equal(r.code, 1, r.stderr);
  assert.match(
    r.stderr,
    /error \[RetriesExhausted\]: reading manifest\.json from http:\/\/127\.0\.0\.1:\d+\/ds failed 2 times \(all attempts used\), last: http:\/\/127\.0\.0\.1:\d+\/ds\/manifest\.json sent nothing for 1 s/,
  );
  // Each of the 2 attempts waited out the 1 s limit its message names. Only a lower bound: an upper
  // one would fail on a loaded machine, where starting the command alone can take seconds.
  assert.equal(proxy!.seen.length, 2);
  assert.ok(seconds >= 2, `took ${seconds} s`);
  proxy!.reset([], "stall");
  const once = await cli("inspect", `${proxy!.url}/ds`, "--timeout", "0.5", "--retries", "0");
  assert.match(
    once.stderr,
    /error \[Timeout\]: http:\/\/127\.0\.0\.1:\d+\/ds\/manifest\.json sent nothing for 0\.5 s/,
  );
});

test("validate tags a failed HTTP read with the storage error's tag, not [Error]", async () => {
  // The manifest and every other request pass; the tiles are answered 500 every time.
  proxy!.reset([], "pass");
  const plan: ("pass" | "500")[] = ["pass"];
  for (let i = 0; i < 200; i++) plan.push("500");
  proxy!.reset(plan);
  const r = await cli("validate", `${proxy!.url}/ds`, "--retries", "0", "--json");
  assert.equal(r.code, 1, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.ok(report.problems.length > 0);
  for (const p of report.problems) assert.equal(p.tag, "HttpStatus", JSON.stringify(p));
});

test("--retries and --timeout are documented in every command's help and refuse bad values", async () => {
  for (const command of ["inspect", "validate", "export", "convert", "obs", "slice"]) {
    const help = await cli(command, "--help");
    assert.match(help.stdout, /--retries N/, command);
    assert.match(help.stdout, /--timeout SECONDS/, command);
  }
  const bad = await cli("inspect", "x", "--timeout", "soon");
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--timeout must be a number of seconds/);
  const neg = await cli("inspect", "x", "--retries", "-1");
  assert.equal(neg.code, 2);
});
