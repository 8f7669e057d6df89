/**
 * The HTTP server behind `deltacells serve`: the objects of every deltacells dataset and sporadik
 * store under one folder, read-only, with byte ranges, validators and CORS, and the viewer's static
 * files at `/`. Range, conditional requests and HEAD are handled by `send` (the engine of Express's
 * `serve-static`); this module only decides which file, if any, a request may reach.
 */
import { realpathSync, statSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join, sep } from "node:path";
import send from "send";
import { CliError } from "../errors.js";

/** Where the viewer's assets are served from; a dataset of this name would be shadowed. */
export const VIEWER_ASSETS = "_viewer";

export interface ServeOptions {
  /** The folder whose datasets and stores are served. */
  root: string;
  /** The built viewer (index.html and `_viewer/`); without it `/` explains how to build it. */
  viewerDir?: string;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
}

export interface RunningServer {
  /** `http://HOST:PORT/`, with the trailing slash. */
  readonly url: string;
  readonly server: Server;
  close(): Promise<void>;
}

// The headers a cross-origin page may read: a store checks Content-Range and Content-Length.
const CORS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Expose-Headers": "Content-Range, Content-Length, Accept-Ranges, ETag, Last-Modified",
};

/** The files a folder holds when it is the root of a dataset (manifest) or of a zarr store. */
const ROOT_MARKERS = ["manifest.json", "zarr.json"];

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * The decoded segments of a URL path, or undefined when any segment could reach outside the tree or
 * name a hidden file: `..`, `.`, empty segments inside the path, backslashes, NUL, bad escapes, and
 * names starting with a dot (temporary files of an atomic write, `.git`).
 */
export function safeSegments(rawPath: string): string[] | undefined {
  if (!rawPath.startsWith("/")) return undefined;
  const parts = rawPath.slice(1).split("/");
  const out: string[] = [];
  for (const [i, raw] of parts.entries()) {
    let seg: string;
    try {
      seg = decodeURIComponent(raw);
    } catch {
      return undefined;
    }
    if (seg === "" && i === parts.length - 1) break;
    if (seg === "" || seg.startsWith(".") || /[/\\\0:]/.test(seg) || seg.length > 255) return undefined;
    out.push(seg);
  }
  return out;
}

/**
 * The real path of the file `segments` names under `root`, when it is a regular file inside a
 * dataset or store (some folder from `root` down to the file's own holds a root marker) and its
 * real path, symlinks resolved, is still under `root`. Anything else is undefined, answered 404.
 */
export function resolveDataFile(realRoot: string, segments: readonly string[]): string | undefined {
  if (segments.length === 0) return undefined;
  let dir = realRoot;
  let inside = false;
  for (let i = 0; i < segments.length - 1 && !inside; i++) {
    dir = join(dir, segments[i]!);
    inside = ROOT_MARKERS.some((m) => isFile(join(dir, m)));
  }
  // The root folder itself may be one dataset.
  if (!inside) inside = ROOT_MARKERS.some((m) => isFile(join(realRoot, m))) && segments.length >= 1;
  if (!inside) return undefined;
  let real: string;
  try {
    real = realpathSync(join(realRoot, ...segments));
  } catch {
    return undefined;
  }
  if (!real.startsWith(realRoot + sep) || !isFile(real)) return undefined;
  return real;
}

/**
 * RFC 9110 14.1.2: a suffix range longer than the object selects all of it. `send`'s range parser
 * answers 416 instead, so such a header is rewritten to the whole object before it looks.
 */
function widenLongSuffix(req: IncomingMessage, file: string): void {
  const m = /^bytes=-(\d+)$/.exec(req.headers.range?.trim() ?? "");
  if (m && Number(m[1]) > 0 && Number(m[1]) > statSync(file).size) req.headers.range = "bytes=0-";
}

/** Names a browser may use for a server bound to a loopback address (DNS rebinding is refused). */
function allowedHosts(host: string, port: number): Set<string> | undefined {
  const loopback = host === "127.0.0.1" || host === "localhost" || host === "::1";
  if (!loopback) return undefined;
  return new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]);
}

function plain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, {
    ...CORS,
    "Content-Type": "text/plain; charset=utf-8",
    "Cache-Control": "no-store",
  });
  res.end(`${text}\n`);
}

const NO_VIEWER = `<!doctype html><meta charset="utf-8"><title>deltacells serve</title>
<p>The viewer is not built. Run <code>npm run build -w apps/viewer</code> in the deltacells checkout, then restart <code>deltacells serve</code>. The datasets are served all the same.</p>\n`;

/** Starts the server; resolves once it listens. */
export async function startServer(opts: ServeOptions): Promise<RunningServer> {
  const realRoot = realpathSync(opts.root);
  if (!statSync(realRoot).isDirectory()) {
    throw new CliError(`${opts.root} is not a folder`, { tag: "NotAFolder", object: opts.root });
  }
  const host = opts.host ?? "127.0.0.1";
  const viewerIndex = opts.viewerDir ? join(opts.viewerDir, "index.html") : undefined;
  const hasViewer = viewerIndex !== undefined && isFile(viewerIndex);
  let hosts: Set<string> | undefined;

  const sendFile = (req: IncomingMessage, res: ServerResponse, file: string, cache: string) => {
    widenLongSuffix(req, file);
    send(req, file, { dotfiles: "deny", index: false, cacheControl: false, etag: true, lastModified: true })
      .on("headers", (r: ServerResponse) => {
        for (const [k, v] of Object.entries(CORS)) r.setHeader(k, v);
        r.setHeader("Cache-Control", cache);
      })
      .on("error", (err: { status?: number }) => plain(res, err.status ?? 500, "not found"))
      .pipe(res);
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    if (hosts && !hosts.has(req.headers.host ?? "")) {
      plain(res, 421, "unexpected Host header: this server answers only to its loopback address");
      return;
    }
    if (req.method === "OPTIONS") {
      res.writeHead(204, {
        ...CORS,
        "Access-Control-Allow-Methods": "GET, HEAD, OPTIONS",
        "Access-Control-Allow-Headers": "Range, If-None-Match, If-Modified-Since, If-Range",
        "Access-Control-Max-Age": "600",
      });
      res.end();
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("Allow", "GET, HEAD, OPTIONS");
      plain(res, 405, "read-only: GET, HEAD and OPTIONS only");
      return;
    }
    const raw = req.url ?? "/";
    const q = raw.indexOf("?");
    const path = q < 0 ? raw : raw.slice(0, q);
    const segments = safeSegments(path);
    if (segments === undefined) return plain(res, 404, "not found");
    if (segments.length === 0) {
      if (!hasViewer) {
        res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" });
        res.end(NO_VIEWER);
        return;
      }
      return sendFile(req, res, viewerIndex!, "no-cache");
    }
    if (segments[0] === VIEWER_ASSETS && hasViewer) {
      const file = resolveViewerFile(opts.viewerDir!, segments);
      return file ? sendFile(req, res, file, "no-cache") : plain(res, 404, "not found");
    }
    const file = resolveDataFile(realRoot, segments);
    if (file === undefined) return plain(res, 404, "not found");
    // Revalidated every time: a dataset converted again in place must not be read from a stale cache.
    sendFile(req, res, file, "no-cache");
  };

  const server = createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 8000, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  hosts = allowedHosts(host, port);
  const shown = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}/`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A file of the built viewer (its folder is trusted, but the same segment rules apply). */
function resolveViewerFile(viewerDir: string, segments: readonly string[]): string | undefined {
  let real: string;
  try {
    real = realpathSync(join(viewerDir, ...segments));
  } catch {
    return undefined;
  }
  const base = realpathSync(viewerDir);
  return real.startsWith(base + sep) && isFile(real) ? real : undefined;
}
