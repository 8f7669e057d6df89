import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { processAlive } from "@deltacells/storage/node";

test("processAlive: this process runs; a process that exited, or was killed and is not yet reaped (a zombie), does not", async (t) => {
  assert.equal(processAlive(process.pid), true);
  if (!existsSync("/proc/self/stat")) return t.skip("no /proc: zombies cannot be told apart here");
  // sh starts a child that exits at once, then becomes `sleep`, which never reaps it: a zombie.
  const parent = spawn("sh", ["-c", "sleep 0 & echo $!; exec sleep 30"], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  try {
    const pid = Number(await new Promise<string>((ok) => parent.stdout.once("data", (d) => ok(String(d)))));
    for (let i = 0; i < 100 && processAlive(pid); i++) await new Promise((ok) => setTimeout(ok, 20));
    // Still a process entry (signal 0 answers), yet not running.
    process.kill(pid, 0);
    assert.equal(processAlive(pid), false);
  } finally {
    parent.kill("SIGKILL");
  }
  await new Promise((ok) => parent.once("exit", ok));
  assert.equal(processAlive(parent.pid!), false);
});
