/**
 * A static file server for the real-browser tests: serves one directory on 127.0.0.1 with the
 * Content-Types a page needs (JavaScript modules, WASM), byte ranges (206 + Content-Range, 416,
 * suffix ranges) and, on request, the cross-origin isolation headers that unlock
 * SharedArrayBuffer. Every request is logged so tests can assert what the page really fetched.
 */
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { extname, join, normalize, sep } from "node:path";

/** One request the server answered (or saw cancelled). */
export interface LoggedRequest {
  method: string;
  /** The decoded path, e.g. `/tiles/small.dct`. */
  path: string;
  range: string | undefined;
  status: number;
  /** True when the client went away before the response was complete (e.g. an aborted fetch). */
  aborted: boolean;
}

/** Answers a request itself and returns true, or returns false to let the file server answer. */
export type RouteHandler = (req: IncomingMessage, res: ServerResponse, path: string) => boolean;

export interface ServeOptions {
  /** Send `Cross-Origin-Opener-Policy`/`-Embedder-Policy` so pages are cross-origin isolated. */
  crossOriginIsolated?: boolean;
  /** Custom answers for some paths (slow or failing responses); tried before the files. */
  route?: RouteHandler;
}

export interface StaticServer {
  /** `http://127.0.0.1:PORT`, no trailing slash. */
  readonly url: string;
  readonly requests: LoggedRequest[];
  close(): Promise<void>;
}

const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".map": "application/json",
  ".json": "application/json",
  ".wasm": "application/wasm",
  ".txt": "text/plain; charset=utf-8",
};

/** The page every browser test opens: empty, so its origin is the server's. */
export const BLANK_PAGE = "/__harness__.html";
const blankHtml =
  '<!doctype html><meta charset="utf-8"><title>deltacells browser test</title><link rel="icon" href="data:,">\n';

/** `bytes=a-b`, `bytes=a-` or `bytes=-n` against an object of `size` bytes: [start, end) or "bad". */
function parseRange(header: string, size: number): [number, number] | "bad" {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return "bad";
  if (m[1] === "") {
    const n = Number(m[2]);
    return n === 0 ? "bad" : [Math.max(0, size - n), size];
  }
  const start = Number(m[1]);
  const end = m[2] === "" ? size : Math.min(size, Number(m[2]) + 1);
  return start >= size || end <= start ? "bad" : [start, end];
}

/** Serves `root` until `close()`. */
export async function serveDirectory(root: string, opts: ServeOptions = {}): Promise<StaticServer> {
  const requests: LoggedRequest[] = [];
  const base = normalize(root + sep);

  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    const entry: LoggedRequest = {
      method: req.method ?? "GET",
      path,
      range: req.headers.range,
      status: 0,
      aborted: false,
    };
    requests.push(entry);
    res.on("close", () => {
      entry.status = res.statusCode;
      entry.aborted = !res.writableFinished;
    });
    if (opts.crossOriginIsolated) {
      res.setHeader("Cross-Origin-Opener-Policy", "same-origin");
      res.setHeader("Cross-Origin-Embedder-Policy", "require-corp");
    }
    res.setHeader("Cache-Control", "no-store");
    if (opts.route?.(req, res, path)) return;
    void serveFile(req, res, path).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { "Content-Type": "text/plain" });
      res.end(String(err));
    });
  });

  async function serveFile(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { Allow: "GET, HEAD" }).end();
      return;
    }
    if (path === BLANK_PAGE) {
      res
        .writeHead(200, { "Content-Type": contentTypes[".html"] })
        .end(req.method === "HEAD" ? "" : blankHtml);
      return;
    }
    const file = normalize(join(base, path));
    const info = file.startsWith(base) ? await stat(file).catch(() => undefined) : undefined;
    if (info === undefined || !info.isFile()) {
      res.writeHead(404, { "Content-Type": "text/plain" }).end(`not found: ${path}`);
      return;
    }
    const type = contentTypes[extname(file)] ?? "application/octet-stream";
    const headers: Record<string, string | number> = { "Content-Type": type, "Accept-Ranges": "bytes" };
    let start = 0;
    let end = info.size;
    let status = 200;
    if (req.headers.range !== undefined) {
      const r = parseRange(req.headers.range, info.size);
      if (r === "bad") {
        res.writeHead(416, { "Content-Range": `bytes */${info.size}` }).end();
        return;
      }
      [start, end] = r;
      status = 206;
      headers["Content-Range"] = `bytes ${start}-${end - 1}/${info.size}`;
    }
    headers["Content-Length"] = end - start;
    res.writeHead(status, headers);
    if (req.method === "HEAD" || end === start) {
      res.end();
      return;
    }
    createReadStream(file, { start, end: end - 1 }).pipe(res);
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
