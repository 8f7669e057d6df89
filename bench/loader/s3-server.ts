/**
 * The local S3 server of bench/loader's (b) rows. `gofakes3`: s3-server/main.go (gofakes3 v1.2.0,
 * the library rclone's `serve s3` is built on, with its in-memory backend), built by Go on first use
 * into `.cache/bench-s3-server/` (keyed by the sources' hash, so an edit rebuilds it). `moto`:
 * moto_server from conformance/.venv, the tests' server: a Python mock, several times slower per
 * GET, whose CPU competes with the loader's decoders on the same cores.
 */
import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startMoto } from "../../test-utils/servers.js";

const REPO = join(import.meta.dirname, "../..");
const SOURCES = join(import.meta.dirname, "s3-server");

export type S3ServerKind = "moto" | "gofakes3";

export interface BenchS3Server {
  kind: S3ServerKind;
  url: string;
  /** CPU seconds the server has used so far (user and system, every thread; Linux's /proc). */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

/** CPU seconds of `pid` and its descendants (the server runs under tied-child.mjs), from /proc. */
function treeCpuSeconds(pid: number): number {
  let ticks = 0;
  const visit = (p: number) => {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(f[11]) + Number(f[12]); // utime, stime
      for (const t of readdirSync(`/proc/${p}/task`))
        for (const c of readFileSync(`/proc/${p}/task/${t}/children`, "utf8").split(" ").filter(Boolean))
          visit(Number(c));
    } catch {
      // gone, or not Linux
    }
  };
  visit(pid);
  return ticks / 100; // USER_HZ
}

/** The Go toolchain: `go` on the PATH, else the usual install folder; undefined when neither runs. */
function findGo(): string | undefined {
  for (const go of ["go", "/usr/local/go/bin/go"]) {
    try {
      execFileSync(go, ["version"], { stdio: "ignore" });
      return go;
    } catch {
      // not there
    }
  }
  return undefined;
}

/** Where the gofakes3 server built from the current sources lives (built or not). */
function binaryPath(): string {
  const hash = createHash("sha256");
  for (const f of ["go.mod", "go.sum", "main.go"]) hash.update(readFileSync(join(SOURCES, f)));
  return join(REPO, ".cache/bench-s3-server", hash.digest("hex").slice(0, 16), "s3-server");
}

/** The gofakes3 server's binary, built first if needed; undefined (and why) when it cannot be. */
function gofakes3Binary(): { path?: string; why?: string } {
  const path = binaryPath();
  if (existsSync(path)) return { path };
  const go = findGo();
  if (go === undefined)
    return {
      why: "Go is not installed (neither `go` on the PATH nor /usr/local/go/bin/go); install Go >= 1.24 to build bench/loader/s3-server",
    };
  mkdirSync(join(path, ".."), { recursive: true });
  console.error(`building bench/loader/s3-server (gofakes3) into ${path} ...`);
  execFileSync(go, ["build", "-o", path, "."], { cwd: SOURCES, stdio: ["ignore", "inherit", "inherit"] });
  return { path };
}

/** Starts gofakes3 on 127.0.0.1 (a port the OS picks), killed with this process (tied-child.mjs). */
function startGofakes3(binary: string): Promise<BenchS3Server> {
  const child = spawn(process.execPath, [join(REPO, "test-utils/tied-child.mjs"), binary], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise<void>((ok) => child.once("exit", () => ok()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
  };
  return new Promise((ok, fail) => {
    let out = "";
    child.stdout!.on("data", (d) => {
      out += d;
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      if (url !== undefined) {
        child.stdout!.removeAllListeners("data");
        ok({ kind: "gofakes3", url, stop, cpuSeconds: () => treeCpuSeconds(child.pid!) });
      }
    });
    child.once("exit", (code) => fail(new Error(`${binary} exited with ${code} before listening:\n${out}`)));
  });
}

/**
 * The server asked for; without `kind`, gofakes3 when it is built or Go can build it, else moto
 * (with a message saying why). Asking for gofakes3 without Go fails with that message.
 */
export async function startBenchS3Server(kind: S3ServerKind | undefined): Promise<BenchS3Server> {
  if (kind !== "moto") {
    const { path, why } = gofakes3Binary();
    if (path !== undefined) return startGofakes3(path);
    if (kind === "gofakes3") throw new Error(`--s3-server gofakes3: ${why}`);
    console.error(`the S3 rows use moto_server: ${why}`);
  }
  const moto = await startMoto();
  return {
    kind: "moto",
    url: moto.url,
    stop: () => moto.stop(),
    cpuSeconds: () => treeCpuSeconds(moto.process.pid!),
  };
}
