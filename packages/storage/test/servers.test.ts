/**
 * The tests' own servers (test-utils/servers.ts) die with the test process however it ends: a
 * test file killed at its timeout runs no `after` hook and no exit handler, and a server it left
 * behind held its port and a core until someone killed it.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { connect } from "node:net";
import { join } from "node:path";
import { test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { pathToFileURL } from "node:url";
import { startServe } from "../../../test-utils/servers.js";

const root = join(import.meta.dirname, "..", "..", "..");

/** Whether something accepts connections on 127.0.0.1:`port`. */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

test("a server started by a test process that is killed (SIGKILL: no hook runs) stops too", async () => {
  const servers = pathToFileURL(join(root, "test-utils", "servers.ts")).href;
  const code = `import { startServe } from ${JSON.stringify(servers)};
const s = await startServe(${JSON.stringify(join(root, "data"))});
console.log(s.port, s.process.pid);`;
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.setEncoding("utf8");
  for await (const chunk of child.stdout) {
    out += chunk;
    if (out.includes("\n")) break;
  }
  const [port, pid] = out.trim().split(" ").map(Number) as [number, number];
  assert.ok(port > 0, `the child printed its server's port, got ${JSON.stringify(out)}`);
  assert.equal(await answers(port), true);
  child.kill("SIGKILL");
  await once(child, "exit");
  // Waits on the server's state; the bound only turns a server that never stops into a failure.
  for (let waited = 0; await answers(port); waited += 100) {
    if (waited > 60_000) {
      // The server's process group (its wrapper's pid): the server itself, not only the wrapper.
      process.kill(-pid, "SIGKILL");
      assert.fail(`the server on port ${port} still answered 60 s after its test process was killed`);
    }
    await delay(100);
  }
});

test("stop() stops the server itself, even once its wrapper is gone", async () => {
  const s = await startServe(join(root, "data"));
  try {
    // The wrapper killed outright: it cannot pass the signal on, and the server outlives it.
    s.process.kill("SIGKILL");
    await once(s.process, "exit");
    assert.equal(await answers(s.port), true, "the server outlived its wrapper");
    await s.stop();
    assert.equal(await answers(s.port), false, "stop() left the server answering");
  } finally {
    // The server's process group (its wrapper's pid), in case stop() did not end it.
    try {
      process.kill(-s.process.pid!, "SIGKILL");
    } catch {}
  }
});
