/**
 * Faulty-network reads: a dataset served by a local HTTP server that injects one kind of fault
 * per case into a seeded share of its responses: 503s, 500s with a binary body, connection resets
 * (headers sent, then the socket destroyed), stalls (headers and part of the body, then silence),
 * short bodies (fewer bytes than Content-Length), and a wrong Content-Range (the right length, an
 * offset off by 8). The dataset is read through `openDataset(url)` with default options and
 * `cells()`, through the commands `inspect`, `export` and `validate`, and through `slice` on a
 * byte-addressable sporadik store (Range requests), all run in-process with their default flags. Correct (same numbers, same export) or a tagged, readable error naming
 * the URL; no call may hang past the case's timeout.
 */
import { readFileSync, statSync } from "node:fs";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { openDataset } from "@deltacells/core/node";
import { exportCommand } from "../../packages/cli/src/export/command.js";
import { inspect } from "../../packages/cli/src/inspect/command.js";
import { slice } from "../../packages/cli/src/slice/command.js";
import { validate } from "../../packages/cli/src/validate/command.js";
import { mulberry32 } from "../../test-utils/prng.js";
import type { FaultClass, RunOptions } from "./classes.js";
import { workDir, writeSynthetic } from "./fixtures.js";
import { type CaseResult, inParallel, judgeError, withTimeout } from "./outcome.js";
import { SHAPE, type Slices, sameSlices, writeSporadik } from "./sporadik-fixture.js";

export const FAULTS = ["503", "500-binary", "reset", "stall", "short-body", "wrong-range"] as const;
type Fault = (typeof FAULTS)[number];

interface Faulty {
  url: string;
  server: Server;
  requests: number;
  close(): Promise<void>;
}

/** Serves `root` with Range support; each response is faulty with probability `rate`. */
export async function faultyServer(
  root: string,
  fault: Fault,
  rate: number,
  rnd: () => number,
): Promise<Faulty> {
  const state = { requests: 0 };
  const server = createServer((req, res) => {
    state.requests++;
    const path = join(root, decodeURIComponent((req.url ?? "/").split("?")[0]!));
    if (!path.startsWith(root)) return void res.writeHead(400).end();
    let body: Uint8Array;
    try {
      if (!statSync(path).isFile()) return void res.writeHead(404).end();
      body = readFileSync(path);
    } catch {
      return void res.writeHead(404).end();
    }
    let start = 0;
    let end = body.length;
    const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? "");
    if (range) {
      if (range[1] === "") start = Math.max(0, body.length - Number(range[2]));
      else {
        start = Number(range[1]);
        if (range[2] !== "") end = Math.min(body.length, Number(range[2]) + 1);
      }
    }
    const part = body.subarray(start, end);
    const headers = (from: number) => ({
      "Content-Length": String(part.length),
      "Accept-Ranges": "bytes",
      ...(range ? { "Content-Range": `bytes ${from}-${from + part.length - 1}/${body.length}` } : {}),
    });
    const status = range ? 206 : 200;
    if (rnd() >= rate)
      return void send(res, status, headers(start), req.method === "HEAD" ? undefined : part);
    switch (fault) {
      case "503":
        return void res
          .writeHead(503, { "Content-Type": "text/plain" })
          .end("Service Unavailable: slow down");
      case "500-binary":
        return void res
          .writeHead(500, { "Content-Type": "application/octet-stream" })
          .end(Uint8Array.from({ length: 4096 }, () => Math.floor(rnd() * 256)));
      case "reset":
        res.writeHead(status, headers(start));
        res.write(part.subarray(0, part.length >> 1));
        return void res.socket?.destroy();
      case "stall":
        res.writeHead(status, headers(start));
        return void res.write(part.subarray(0, part.length >> 1));
      case "short-body":
        res.writeHead(status, headers(start));
        res.write(part.subarray(0, Math.max(0, part.length - 1 - Math.floor(rnd() * 64))));
        return void res.socket?.end();
      case "wrong-range":
        return void send(res, status, headers(start + 8), part);
    }
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    get requests() {
      return state.requests;
    },
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

function send(res: ServerResponse, status: number, headers: Record<string, string>, body?: Uint8Array): void {
  res.writeHead(status, headers);
  res.end(body);
}

/** A readable message: printable text of sensible length, naming the URL. */
function readable(err: unknown, url: string): boolean {
  const message = err instanceof Error ? err.message : String(err);
  const unprintable = [...message].some((ch) => {
    const code = ch.codePointAt(0)!;
    return (code < 0x20 && ch !== "\t") || code === 0xfffd;
  });
  return message.length <= 600 && message.includes(url) && !unprintable;
}

type Op = "cells" | "inspect" | "export" | "validate" | "slice";
/** The stall timeout the cases run with (`--timeout`, `timeoutMs`). */
const STALL_S = 2;
const NET = ["--timeout", String(STALL_S)];
const OPS: Op[] = ["cells", "cells", "inspect", "export", "validate", "slice", "slice"];

async function run({ seed, long, cases: count, log }: RunOptions): Promise<CaseResult[]> {
  const total = count ?? (long ? 300 : 36);
  const work = workDir("network");
  try {
    const dsDir = join(work.dir, "ds");
    await writeSynthetic(dsDir, seed);
    // A byte-addressable sporadik store beside it: `slice` reads it with Range requests.
    const expected = await writeSporadik(join(work.dir, "store.zarr"), seed, true);
    const reference = await openDataset(dsDir);
    // The hang deadline follows the machine: five times the slowest fault-free operation over
    // HTTP (validate, which starts a decoding worker), at least 6 s.
    const clean = await faultyServer(work.dir, "503", 0, mulberry32(seed));
    let slowest = 0;
    for (const op of [
      () => exportCommand([`${clean.url}/ds/`, join(work.dir, "clean.mtx"), "--quiet"]),
      () => validate([`${clean.url}/ds/`, "--json", "--quiet", "--threads", "1"]),
    ]) {
      const started = performance.now();
      await op();
      slowest = Math.max(slowest, performance.now() - started);
    }
    // Reads run with a 2 s stall timeout (the default 15 s would make every stalled case last a
    // minute): a stalled request gives up after its 4 attempts, 2 s each plus backoff, and a
    // command makes a few requests one after another (validate: manifest, gene files, tiles).
    const timeoutMs = Math.max(STALL_S * 1000 * 4 * 4, 5 * slowest);
    await clean.close();
    log(`network: ${(timeoutMs / 1000).toFixed(1)} s without an answer is a hang`);
    const rnd = mulberry32(seed);
    const cases = Array.from({ length: total }, (_, n) => {
      const fault = FAULTS[n % FAULTS.length]!;
      const op = OPS[Math.floor(rnd() * OPS.length)]!;
      const rate = [0.05, 0.3, 1][Math.floor(rnd() * 3)]!;
      const a = Math.floor(rnd() * reference.nCells);
      const b = a + 1 + Math.floor(rnd() * (reference.nCells - a));
      return { n, fault, op, rate, a, b, serverSeed: Math.floor(rnd() * 2 ** 31) };
    });
    let done = 0;
    const results = await inParallel(
      cases.map(({ n, fault, op, rate, a, b, serverSeed }) => async (): Promise<CaseResult> => {
        const id = `${n}: ${fault} on ${Math.round(rate * 100)}% of responses, ${op}${op === "inspect" || op === "validate" ? "" : ` ${a}:${b}`}`;
        const kind = `${fault}/${op}`;
        const server = await faultyServer(work.dir, fault, rate, mulberry32(serverSeed));
        const url = `${server.url}/ds/`;
        const out = join(work.dir, `export-${n}.mtx`);
        try {
          const seen = await withTimeout(timeoutMs, async (): Promise<Omit<CaseResult, "id" | "kind">> => {
            try {
              if (op === "cells") {
                const got = await (await openDataset(url, { timeoutMs: STALL_S * 1000 })).cells(a, b);
                const want = await reference.cells(a, b);
                const same =
                  got.indices.length === want.indices.length &&
                  got.indices.every((v, i) => v === want.indices[i] && got.data[i] === want.data[i]);
                return same ? { outcome: "correct" } : { outcome: "wrong", detail: "cells differ" };
              }
              if (op === "slice") {
                const axis = a % 2;
                const positions = [a % SHAPE[axis]!, b % SHAPE[axis]!, (a * 7) % SHAPE[axis]!];
                const r = await slice([
                  `${server.url}/store.zarr/`,
                  "--axis",
                  String(axis),
                  ...positions.map(String),
                  "--json",
                  ...NET,
                ]);
                const got: Slices = (
                  r.json as { slices: { indices: number[]; values: number[] }[] }
                ).slices.map((s) => ({
                  positions: s.indices,
                  values: s.values,
                }));
                return sameSlices(
                  got,
                  positions.map((p) => expected[axis]![p]!),
                )
                  ? { outcome: "correct" }
                  : { outcome: "wrong", detail: "slices differ" };
              }
              if (op === "inspect") {
                const r = await inspect([url, "--json", ...NET]);
                const shape = r.json as { n_cells?: number; nCells?: number };
                return JSON.stringify(r.json).includes(String(reference.nCells)) && shape
                  ? { outcome: "correct" }
                  : { outcome: "wrong", detail: "inspect shows another dataset" };
              }
              if (op === "validate") {
                const r = await validate([url, "--json", "--quiet", "--threads", "1", ...NET]);
                const report = r.json as { valid: boolean; problems?: { tag: string; message: string }[] };
                if (report.valid) return { outcome: "correct" };
                const p = report.problems?.[0];
                const clear =
                  p !== undefined && p.tag !== "Error" && readable(new Error(p.message), server.url);
                return {
                  outcome: clear ? "refused" : "refused-unclear",
                  tag: p?.tag,
                  detail: p?.message.slice(0, 200),
                };
              }
              await exportCommand([url, out, "--cells", `${a}:${b}`, "--quiet", ...NET]);
              const got = readFileSync(out, "utf8");
              await exportCommand([dsDir, `${out}.want.mtx`, "--cells", `${a}:${b}`, "--quiet"]);
              // The header names the source; compare the numbers.
              const body = (s: string) =>
                s
                  .split("\n")
                  .filter((l) => !l.startsWith("%"))
                  .join("\n");
              return body(got) === body(readFileSync(`${out}.want.mtx`, "utf8"))
                ? { outcome: "correct" }
                : { outcome: "wrong", detail: "export differs" };
            } catch (err) {
              const judged = judgeError(err, [server.url]);
              if (judged.outcome === "refused" && !readable(err, server.url)) {
                return {
                  ...judged,
                  outcome: "refused-unclear",
                  detail: `unreadable message: ${judged.detail}`,
                };
              }
              return judged;
            }
          });
          return seen === "timeout"
            ? { id, kind, outcome: "hang", detail: `no answer in ${(timeoutMs / 1000).toFixed(1)} s` }
            : { id, kind, ...seen };
        } finally {
          await server.close();
          if (++done % 50 === 0) log(`network: ${done}/${total}`);
        }
      }),
      6,
    );
    return results;
  } finally {
    work.dispose();
  }
}

export const network: FaultClass = {
  name: "network",
  summary:
    "a local HTTP server injecting 503s, binary 500s, resets, stalls, short bodies or a wrong Content-Range into 5%, 30% or all responses; read with openDataset(url).cells() and the inspect, export, validate and (ranged reads of a sporadik store) slice commands with their default retries and a 2 s stall timeout",
  run,
};
