// Real servers for the tests of every package (and the benchmarks), each started on a free 127.0.0.1 port by the test that
// needs it and stopped in its `after` hook, or killed when the test process dies (see tied-child.mjs).
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..");

/** A port that was free a moment ago (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

/** A running child server. `stop()` kills it and waits until it has exited. */
export interface RunningServer {
  url: string;
  port: number;
  /**
   * The process the test holds: tied-child.mjs, which runs the server and kills it when it goes.
   * Its pid is also the process group of the two (`process.kill(-pid, ...)` reaches the server).
   */
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Waits until the server answers: a refused connection is tried again 100 ms later, and an accepted
 * one is given the time left (a server's first answer can take seconds on a loaded machine, as
 * moto loading its backends: with 1 s per try, each try could be cut off before its answer). `timeoutMs` only turns a
 * server that never answers into a failure, so it is generous.
 */
async function waitUntilAnswering(url: string, child: ChildProcess, log: () => string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`server exited with ${child.exitCode} before answering:\n${log()}`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())) });
      await res.body?.cancel();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`server at ${url} did not answer within ${timeoutMs} ms:\n${log()}`);
}

async function startChild(
  cmd: string,
  args: string[],
  port: number,
  env: NodeJS.ProcessEnv = {},
): Promise<RunningServer> {
  // Never leave a server behind, even when the test process dies without running `after`: the
  // server runs under tied-child.mjs, which kills it when the pipe on its stdin (never written,
  // held only by this process) closes. Detached: a process group of its own, which the server
  // joins, so `stop()` can reach the server even when the wrapper can no longer pass a signal on.
  const child = spawn(process.execPath, [join(repoRoot, "test-utils/tied-child.mjs"), cmd, ...args], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, ...env },
    detached: true,
  });
  let output = "";
  child.stdout?.on("data", (d) => (output = (output + d).slice(-4000)));
  child.stderr?.on("data", (d) => (output = (output + d).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  /** SIGKILL to the wrapper and the server; whether any of them was still there. */
  const killGroup = () => {
    try {
      process.kill(-child.pid!, "SIGKILL");
      return true;
    } catch {
      return false; // ESRCH: the group is empty
    }
  };
  const stop = async () => {
    // The wrapper takes SIGTERM as its cue to SIGKILL the server, and exits once the server has.
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    const timer = setTimeout(killGroup, 3000);
    await exited;
    clearTimeout(timer);
    // Killed by a signal, the wrapper never saw its server exit: the server may be running alone,
    // an orphan of the group (not a child of ours to wait on), so its group is asked until empty
    // (for at most 2 s: a container whose init reaps no orphans keeps their zombies in it).
    for (let k = 0; child.signalCode !== null && k < 100 && killGroup(); k++)
      await new Promise((r) => setTimeout(r, 20));
  };
  try {
    await waitUntilAnswering(`${url}/`, child, () => output, 120_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, port, process: child, stop };
}

/** moto_server from the pinned Python conformance environment (an S3-compatible server). */
export async function startMoto(): Promise<RunningServer> {
  const port = await freePort();
  return startChild(
    join(repoRoot, "conformance/.venv/bin/moto_server"),
    ["-H", "127.0.0.1", "-p", String(port)],
    port,
  );
}

/** npm `serve` (static files with correct Range support) serving `dir`. */
export async function startServe(dir: string): Promise<RunningServer> {
  const port = await freePort();
  const bin = join(repoRoot, "node_modules/serve/build/main.js");
  return startChild(
    process.execPath,
    [
      bin,
      "-l",
      `tcp://127.0.0.1:${port}`,
      "--no-clipboard",
      "--no-compression",
      "--no-request-logging",
      "--no-port-switching",
      dir,
    ],
    port,
    { NO_UPDATE_CHECK: "1" },
  );
}
