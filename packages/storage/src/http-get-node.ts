import http from "node:http";
import https from "node:https";
import type { Readable } from "node:stream";
import zlib from "node:zlib";
import type { ChunkedAnswer, NodeGet } from "./http-read.js";
import { onAbort } from "./signals.js";
import { stallError } from "./stall.js";

/**
 * Reads over node:http(s) instead of fetch (undici): a GET's body arrives as Buffers copied
 * straight into the caller's memory, with no WHATWG stream, promise or fetch bookkeeping per
 * chunk. This costs about 0.6x the CPU of fetch for the same tiles, which matters when the
 * calling thread shares the cores with the decoders (bench/loader). The answers are checked by
 * the same code as fetch's (`http-read.ts`); this file only mimics what fetch does on the wire:
 * keep-alive connections, redirects, decoding of gzip/deflate/br bodies, and fetch's errors
 * (`TypeError("fetch failed")` / `"terminated"` with the system error as `cause`).
 */

/**
 * Idle connections are closed after 4 s (or sooner when the server's Keep-Alive hint says so), as
 * undici does, so that a request rarely goes out on a connection the server has just closed.
 * (Node's agent applies this timeout to idle sockets only; a request is watched by the stall timer.)
 */
const agentOptions = { keepAlive: true, timeout: 4_000 };
const agents = { "http:": new http.Agent(agentOptions), "https:": new https.Agent(agentOptions) };

/** Redirects fetch follows before failing. */
const MAX_REDIRECTS = 20;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** An unread rest of a body up to this size is drained, keeping its connection, rather than cut. */
const DRAIN_BYTES = 64 * 1024;

const decoders: Record<string, () => zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress> = {
  gzip: () => zlib.createGunzip(),
  "x-gzip": () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
};

export const nodeGet: NodeGet = (url, method, headers, signal, timeoutMs) => {
  // One value per name whatever its case, the last one winning, as fetch's Headers would have it.
  const lower: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) lower[name.toLowerCase()] = value;
  return request(url, method, lower, signal, timeoutMs, MAX_REDIRECTS);
};

function request(
  url: string,
  method: "GET" | "HEAD",
  headers: Record<string, string>,
  signal: AbortSignal | undefined,
  timeoutMs: number,
  redirects: number,
): Promise<ChunkedAnswer> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const target = new URL(url);
    const client = target.protocol === "https:" ? https : target.protocol === "http:" ? http : undefined;
    if (client === undefined) {
      reject(new TypeError("fetch failed", { cause: new Error(`unsupported protocol ${target.protocol}`) }));
      return;
    }
    /** Why the request was ended by us (a stall or an abort): what every later failure reports. */
    let ended: unknown;
    /** Where a failure goes: the answer's promise, then the body's reader. */
    let fail = (err: unknown) => reject(ended ?? new TypeError("fetch failed", { cause: err }));
    const end = (why: unknown) => {
      ended ??= why;
      req.destroy(why instanceof Error ? why : undefined);
      fail(why);
    };
    const timer = timeoutMs > 0 ? setTimeout(() => end(stallError(url, timeoutMs)), timeoutMs) : undefined;
    const stopWaiting = onAbort(signal, () => end(signal?.reason));
    const done = () => {
      clearTimeout(timer);
      stopWaiting();
    };
    const req = client.request(target, { method, headers, agent: agents[target.protocol as "http:"] });
    req.on("error", (err) => {
      done();
      fail(err);
    });
    req.on("response", (res) => {
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (REDIRECTS.has(status) && location !== undefined) {
        done();
        res.resume();
        if (redirects === 0) {
          reject(new TypeError("fetch failed", { cause: new Error("redirect count exceeded") }));
          return;
        }
        const next = new URL(location, target);
        const rest = { ...headers };
        // As fetch: credentials are not sent to another origin.
        if (next.origin !== target.origin) delete rest.authorization;
        resolve(request(next.href, method, rest, signal, timeoutMs, redirects - 1));
        return;
      }
      timer?.refresh();
      const encoding = res.headers["content-encoding"]?.trim().toLowerCase();
      const decode = method === "HEAD" || encoding === undefined ? undefined : decoders[encoding]?.();
      const body: Readable = decode === undefined ? res : res.pipe(decode);
      if (decode !== undefined) res.on("error", (err) => decode.destroy(err));
      let finished = false;
      const finish = () => {
        finished = true;
        done();
      };
      /** How the body failed, once it has, for a reader that comes later. */
      let failure: unknown;
      let rejectBody: ((err: unknown) => void) | undefined;
      fail = (err) => {
        finish();
        body.destroy();
        failure ??= ended ?? new TypeError("terminated", { cause: err });
        rejectBody?.(failure);
      };
      // Listened to from the start: a failure before the body is read (a reset, a corrupt gzip
      // stream) must reach its reader, not become an uncaught error.
      body.on("error", (err) => fail(err));
      // A connection closed before the end of a body without Content-Length: the parser has no
      // error to give, and the byte count cannot tell either, so say so here.
      body.on("close", () => {
        if (!finished) fail(new Error("the connection closed before the end of the body"));
      });
      const eachChunk = (take: (chunk: Uint8Array) => void) =>
        new Promise<void>((resolveBody, reject) => {
          if (failure !== undefined) {
            reject(failure);
            return;
          }
          rejectBody = reject;
          body.on("data", (chunk: Buffer) => {
            timer?.refresh();
            try {
              take(chunk);
            } catch (err) {
              ended ??= err;
              req.destroy();
              fail(err);
            }
          });
          body.on("end", () => {
            finish();
            resolveBody();
          });
        });
      const gather = async () => {
        const parts: Buffer[] = [];
        await eachChunk((c) => parts.push(c as Buffer));
        const all = Buffer.concat(parts);
        return all.buffer.slice(all.byteOffset, all.byteOffset + all.length) as ArrayBuffer;
      };
      resolve({
        status,
        statusText: res.statusMessage ?? "",
        headers: {
          get: (name) => {
            const v = res.headers[name.toLowerCase()];
            return v === undefined ? null : Array.isArray(v) ? v.join(", ") : v;
          },
        },
        body: {
          cancel: async () => {
            if (finished) return;
            const size = Number(res.headers["content-length"]);
            if (ended === undefined && decode === undefined && (method === "HEAD" || size <= DRAIN_BYTES)) {
              // A short error body: read and dropped, the connection kept for the next request.
              res.on("end", finish);
              res.resume();
              return;
            }
            finish();
            ended ??= new Error("cancelled");
            req.destroy();
          },
        },
        arrayBuffer: gather,
        text: async () => new TextDecoder().decode(await gather()),
        eachChunk,
      });
    });
    req.end();
  });
}
