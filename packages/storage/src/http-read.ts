import { changedError, HttpStatusError, StorageError } from "./errors.js";
import { resolveRange, throwIfAborted } from "./range.js";
import type { ObjectInfo, RangeQuery, StoreOptions } from "./types.js";

/**
 * The read path shared by the HTTP and S3 stores: how a Range request is sent, and how every
 * possible answer is checked so that a caller gets exactly the bytes it asked for, `undefined`,
 * or an error. Browser-safe (fetch and web streams only).
 */

/** The `fetch` signature the stores call; pass your own to add auth, logging or a proxy. */
export type FetchLike = (input: string | Request, init?: RequestInit) => Promise<Response>;

/** What the reader needs to know about one request, mostly to write good error messages. */
export interface HttpReadContext {
  /** The URL requested (for messages). */
  url: string;
  /** The store key. */
  key: string;
  /** The store location. */
  location: string;
  /** Statuses that mean "this object does not exist". */
  missing: ReadonlySet<number>;
  /** Error codes (S3's `<Code>`) that turn a "missing" status into an error, e.g. `NoSuchBucket`. */
  notMissingCodes?: ReadonlySet<string>;
  /** The largest whole object taken when a server ignores a Range header and answers 200. */
  maxIgnoredRangeBytes: number;
  signal: AbortSignal | undefined;
  /** See `StoreOptions.unchangedSince`: checked against the answer's Last-Modified. */
  unchangedSince?: number | undefined;
  /** See `StoreOptions.onInfo`: given Last-Modified and Date of the answer. */
  onInfo?: ((info: ObjectInfo) => void) | undefined;
}

/**
 * An answer of Node's own HTTP client (`#http-get`): what the read path uses of a `Response`,
 * and the body's chunks handed over as they arrive, with no web stream in between.
 */
export interface ChunkedAnswer {
  readonly status: number;
  readonly statusText: string;
  readonly headers: { get(name: string): string | null };
  /** Gives up the body (the connection is closed unless the rest is small). */
  readonly body: { cancel(reason?: unknown): Promise<void> };
  arrayBuffer(): Promise<ArrayBuffer>;
  text(): Promise<string>;
  /**
   * Calls `take` with each chunk of the (decoded) body, synchronously as it arrives; resolves at
   * its end, rejects on a failure (a reset, a stall, an abort) or with what `take` threw.
   */
  eachChunk(take: (chunk: Uint8Array) => void): Promise<void>;
}

/** An answer to a read: fetch's `Response`, or Node's client's {@link ChunkedAnswer}. */
export type Answer = Response | ChunkedAnswer;

/**
 * Sends one request of a store's read (GET or HEAD) with the given headers: how is the store's
 * business (fetch, a SigV4-signed fetch, Node's HTTP client).
 */
export type Send = (method: "GET" | "HEAD", headers: Record<string, string>) => Promise<Answer>;

/**
 * Node's HTTP client for a read (`#http-get`; none in browsers): one GET or HEAD of `url`, with
 * keep-alive connections, failing with a `Timeout` error when nothing arrives for `timeoutMs`
 * (0: never) like {@link withStallTimeout}'s fetch, following redirects like fetch.
 */
export type NodeGet = (
  url: string,
  method: "GET" | "HEAD",
  headers: Record<string, string>,
  signal: AbortSignal | undefined,
  timeoutMs: number,
) => Promise<ChunkedAnswer>;

/**
 * Encodes a normalized key as a URL path: each segment percent-encoded as RFC 3986 and SigV4
 * want it (everything but `A-Z a-z 0-9 - _ . ~`), `/` kept. Encoding `!'()*` too makes the path we
 * send identical to the canonical path we sign, so no server can disagree about it.
 */
export function encodeKeyPath(key: string): string {
  return key
    .split("/")
    .map((seg) =>
      encodeURIComponent(seg).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`),
    )
    .join("/");
}

/** The HTTP Range header value for a range (`bytes=-N` for a suffix). Never called for empty ranges. */
export function rangeHeader(range: RangeQuery): string {
  if ("suffixLength" in range) return `bytes=-${range.suffixLength}`;
  return `bytes=${range.offset}-${range.offset + range.length - 1}`;
}

/**
 * Maps a failure of fetch or of reading a body to what the caller should see: the signal's reason
 * when the call was aborted, storage errors unchanged, anything else a transient `Network` error.
 */
export function networkError(
  err: unknown,
  ctx: Pick<HttpReadContext, "url" | "key" | "location" | "signal">,
) {
  if (ctx.signal?.aborted) return ctx.signal.reason as unknown;
  if (err instanceof StorageError) return err;
  const cause = (err as { cause?: { code?: string; message?: string } } | null)?.cause;
  const detail = cause?.code ?? cause?.message ?? "";
  return new StorageError(
    `request for ${ctx.url} failed: ${(err as Error)?.message ?? String(err)}${detail ? ` (${detail})` : ""}`,
    { tag: "Network", object: ctx.url, cause: err },
  );
}

/**
 * Reads a response body completely. With `expected` (from Content-Length or Content-Range) the
 * body must have exactly that many bytes: fewer means the transfer was cut (a transient `Network`
 * error). More is refused when `exact` (a 206 body must match its Content-Range); otherwise it
 * can only mean fetch decoded a compressed body whose Content-Encoding the browser hid from us
 * (cross-origin), so reading goes on up to `cap`. Without `expected`, reading stops with
 * `RangeUnsupported` once `cap` bytes are exceeded. With `allocate` (a `getInto`), the answer is
 * read into the memory it gives, called once the size is known (`expected`, or all received);
 * a body longer than announced is then gathered in memory of its own.
 */
export async function readBody(
  res: Answer,
  expected: number | undefined,
  cap: number,
  exact: boolean,
  ctx: HttpReadContext,
  allocate?: (size: number) => Uint8Array,
): Promise<Uint8Array> {
  /** The memory of the answer: the caller's, the first time (`getInto`), else new. */
  const space = (size: number) => {
    const given = allocate?.(size).subarray(0, size);
    allocate = undefined;
    return given ?? new Uint8Array(size);
  };
  const stream = "eachChunk" in res ? undefined : res.body;
  if (stream === null) {
    if (expected !== undefined && expected > 0) throw truncated(0, expected, ctx);
    return space(0);
  }
  const chunks: Uint8Array[] = [];
  let out = expected === undefined ? undefined : space(expected);
  let received = 0;
  const take = (value: Uint8Array) => {
    if (out !== undefined && received + value.length > out.length) {
      if (exact) {
        throw new StorageError(
          `${ctx.url} sent more than the ${out.length} bytes it announced; refusing the answer`,
          { object: ctx.url },
        );
      }
      chunks.push(out.subarray(0, received));
      out = undefined;
    }
    if (out !== undefined) {
      out.set(value, received);
    } else {
      if (received + value.length > cap) throw tooLarge(undefined, cap, ctx);
      chunks.push(value);
    }
    received += value.length;
  };
  if (stream === undefined) {
    // Node's client: each chunk copied into place as it arrives, no stream and no promise per chunk.
    try {
      await (res as ChunkedAnswer).eachChunk(take);
    } catch (err) {
      throw networkError(err, ctx);
    }
  } else {
    const reader = stream.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        take(value);
      }
    } catch (err) {
      await reader.cancel().catch(() => {});
      throw networkError(err, ctx);
    }
  }
  if (out !== undefined) {
    if (received !== out.length) throw truncated(received, out.length, ctx);
    return out;
  }
  const joined = space(received);
  let at = 0;
  for (const c of chunks) {
    joined.set(c, at);
    at += c.length;
  }
  return joined;
}

function truncated(got: number, expected: number, ctx: HttpReadContext): StorageError {
  return new StorageError(
    `truncated body from ${ctx.url}: received ${got} of the ${expected} bytes announced (connection cut?)`,
    { tag: "Network", object: ctx.url },
  );
}

function tooLarge(size: number | undefined, cap: number, ctx: HttpReadContext): StorageError {
  return new StorageError(
    `${ctx.url} ignored the Range header and answered with the whole object (${size === undefined ? "size unknown" : `${size} bytes`}); refusing to download more than ${cap} bytes for a range. Serve the data from a server that supports Range requests, or raise maxIgnoredRangeBytes.`,
    { tag: "RangeUnsupported", object: ctx.url },
  );
}

function contentLength(res: Answer): number | undefined {
  const v = res.headers.get("content-length");
  if (v === null || !/^\d+$/.test(v.trim())) return undefined;
  return Number(v);
}

/** Parses `Content-Range: bytes a-b/total` (total may be `*`). */
function parseContentRange(
  v: string | null,
): { start: number; end: number; total: number | undefined } | undefined {
  const m = v === null ? null : /^\s*bytes\s+(\d+)-(\d+)\/(\d+|\*)\s*$/i.exec(v);
  if (m === null) return undefined;
  const start = Number(m[1]);
  const end = Number(m[2]) + 1;
  const total = m[3] === "*" ? undefined : Number(m[3]);
  if (end <= start || (total !== undefined && end > total)) return undefined;
  return { start, end, total };
}

function notSatisfiable(range: RangeQuery, total: number | undefined, ctx: HttpReadContext): StorageError {
  const asked =
    "suffixLength" in range
      ? `the last ${range.suffixLength} bytes`
      : `bytes ${range.offset}..${range.offset + range.length}`;
  return new StorageError(
    `range not satisfiable: ${asked} of ${ctx.url}${total === undefined ? "" : `, which has ${total} bytes`}`,
    { tag: "RangeNotSatisfiable", object: ctx.url },
  );
}

/** Builds the error for an unexpected status, with the server's own explanation when it gave one. */
export async function statusError(
  res: Answer,
  method: string,
  ctx: HttpReadContext,
): Promise<HttpStatusError> {
  let text = "";
  try {
    text = new TextDecoder().decode((await res.arrayBuffer()).slice(0, 2000));
  } catch {
    // the body is only decoration for the message
  }
  return statusErrorFrom(res, text, method, ctx);
}

/** Longest excerpt of an error body shown in a message, in printed characters. */
const EXCERPT_CHARS = 120;

/**
 * At most {@link EXCERPT_CHARS} printed characters of a response body for a message, on one line,
 * in printable ASCII, everything else escaped (`\\x01`, `\\ufffd`, `\\u52ae`): a server may answer
 * an error with anything, binary included, and a message must stay short and safe for a terminal.
 */
export function printableExcerpt(text: string): string {
  let out = "";
  for (const c of text.replace(/\s+/g, " ").trim()) {
    const code = c.codePointAt(0)!;
    const shown =
      code < 0x20 || code === 0x7f
        ? `\\x${code.toString(16).padStart(2, "0")}`
        : code > 0x7f
          ? `\\u${code.toString(16).padStart(4, "0")}`
          : c;
    if (out.length + shown.length > EXCERPT_CHARS) return `${out}...`;
    out += shown;
  }
  return out;
}

function errorCode(text: string): string | undefined {
  return /<Code>([^<]*)<\/Code>/.exec(text)?.[1];
}

function statusErrorFrom(res: Answer, text: string, method: string, ctx: HttpReadContext): HttpStatusError {
  const code = errorCode(text);
  const message = /<Message>([^<]*)<\/Message>/.exec(text)?.[1];
  const detail = printableExcerpt(code !== undefined ? `${code}${message ? `: ${message}` : ""}` : text);
  const hint =
    res.status === 403
      ? " (check the credentials; S3-style servers also answer 403 for a missing object when the caller may not list the bucket)"
      : res.status >= 500 || res.status === 429
        ? " (a transient server error: reads are retried when the store has retries, as openStore's and the command line's do by default)"
        : "";
  return new HttpStatusError(
    `${method} ${ctx.url} answered ${res.status}${res.statusText ? ` ${res.statusText}` : ""}${detail ? ` [${detail}]` : ""}${hint}`,
    { status: res.status, object: ctx.url },
  );
}

/**
 * Whether a "missing" status really means the object is missing. S3 answers 404 both for a
 * missing key (`NoSuchKey`) and a missing bucket (`NoSuchBucket`); the latter is a
 * configuration error that must not pass for an absent object.
 */
async function reallyMissing(res: Answer, method: string, ctx: HttpReadContext): Promise<void> {
  if (ctx.notMissingCodes === undefined || method === "HEAD") {
    await res.body?.cancel().catch(() => {});
    return;
  }
  let text = "";
  try {
    text = (await res.text()).slice(0, 2000);
  } catch (err) {
    throw networkError(err, ctx);
  }
  const code = errorCode(text);
  if (code !== undefined && ctx.notMissingCodes.has(code)) throw statusErrorFrom(res, text, method, ctx);
}

async function sendOrThrow(
  send: Send,
  method: "GET" | "HEAD",
  headers: Record<string, string>,
  ctx: HttpReadContext,
) {
  try {
    return await send(method, headers);
  } catch (err) {
    throw networkError(err, ctx);
  }
}

/** How one key of a store is read: where its requests go, and what checking the answer needs. */
export interface KeyRead {
  send: Send;
  ctx: HttpReadContext;
}

/**
 * `get` and `getRange` of a store read over HTTP: the signal is checked first, before the key is
 * even parsed, then `prepare` maps the key to its request and {@link httpRead} reads it.
 */
export async function readKey(
  key: string,
  range: RangeQuery | undefined,
  opts: StoreOptions | undefined,
  prepare: (key: string, signal: AbortSignal | undefined) => KeyRead,
  allocate?: (size: number) => Uint8Array,
): Promise<Uint8Array | undefined> {
  throwIfAborted(opts?.signal);
  const { send, ctx } = prepare(key, opts?.signal);
  return httpRead(send, range, { ...ctx, ...versionContext(opts) }, allocate);
}

/**
 * GETs a whole object (no range) or a byte range of it, and checks the answer:
 * - a "missing" status (404 by default) is `undefined`;
 * - 206 must carry a Content-Range that covers the request, and a body of exactly that length;
 * - 200 to a range request means the server ignored the Range header: the whole object is read
 *   (up to `maxIgnoredRangeBytes`, else `RangeUnsupported`) and sliced;
 * - 416, or an object shorter than the range, is `RangeNotSatisfiable`;
 * - anything else is an `HttpStatus` error naming the URL and status.
 * `allocate` (whole objects only: `getInto`) gives the memory the object is read into, asked for
 * once its size is known (Content-Length), so the body's chunks are copied once, into it.
 */
export async function httpRead(
  send: Send,
  range: RangeQuery | undefined,
  ctx: HttpReadContext,
  allocate?: (size: number) => Uint8Array,
): Promise<Uint8Array | undefined> {
  const empty =
    range !== undefined && ("suffixLength" in range ? range.suffixLength === 0 : range.length === 0);
  if (range !== undefined) resolveRange(range, Number.MAX_SAFE_INTEGER, ctx.key, ctx.location); // validates
  if (empty) return emptyRange(send, range, ctx);

  const headers: Record<string, string> = range === undefined ? {} : { range: rangeHeader(range) };
  const res = await sendOrThrow(send, "GET", headers, ctx);
  if (ctx.missing.has(res.status)) {
    await reallyMissing(res, "GET", ctx);
    return undefined;
  }
  if (res.status === 416) {
    await res.body?.cancel().catch(() => {});
    throw notSatisfiable(
      range ?? { offset: 0, length: 0 },
      parseContentRange(res.headers.get("content-range"))?.total ?? totalFrom416(res),
      ctx,
    );
  }
  if (res.status === 200 || res.status === 206) await checkUnchanged(res, ctx);
  if (res.status === 200) {
    // With a Content-Encoding, Content-Length counts compressed bytes, not what fetch hands us.
    const encoding = res.headers.get("content-encoding");
    const size = encoding === null || encoding === "identity" ? contentLength(res) : undefined;
    const cap = range === undefined ? Number.MAX_SAFE_INTEGER : ctx.maxIgnoredRangeBytes;
    if (size !== undefined && size > cap) {
      await res.body?.cancel().catch(() => {});
      throw tooLarge(size, cap, ctx);
    }
    if (range === undefined) return readBody(res, size, cap, false, ctx, allocate);
    const body = await readBody(res, size, cap, false, ctx);
    if (!rangeFits(range, body.length)) throw notSatisfiable(range, body.length, ctx);
    const { start, end } = resolveRange(range, body.length, ctx.key, ctx.location);
    return body.slice(start, end);
  }
  if (res.status === 206 && range !== undefined) return readPartial(res, range, ctx);
  throw await statusError(res, "GET", ctx);
}

/** An HTTP date (Last-Modified, Date) in ms since the epoch, or undefined. */
function httpDate(v: string | null): number | undefined {
  if (v === null) return undefined;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : t;
}

/**
 * Reports the answer's Last-Modified and Date to `ctx.onInfo`, and refuses (tag `Changed`) an
 * object whose Last-Modified is after `ctx.unchangedSince`, before its body is read. The headers
 * come with the very bytes they describe, so no request is added and no race is possible.
 * Both have a resolution of one second: a change within the same second is not seen.
 */
async function checkUnchanged(res: Answer, ctx: HttpReadContext): Promise<void> {
  if (ctx.onInfo === undefined && ctx.unchangedSince === undefined) return;
  const changed = httpDate(res.headers.get("last-modified"));
  const readAt = httpDate(res.headers.get("date"));
  ctx.onInfo?.({
    ...(changed === undefined ? {} : { changed }),
    ...(readAt === undefined ? {} : { readAt }),
  });
  if (ctx.unchangedSince !== undefined && changed !== undefined && changed > ctx.unchangedSince) {
    await res.body?.cancel().catch(() => {});
    throw changedError(ctx.key, ctx.location, ctx.url, changed, ctx.unchangedSince);
  }
}

/** The read options a store passes on to {@link HttpReadContext}. */
export function versionContext(
  opts: StoreOptions | undefined,
): Pick<HttpReadContext, "unchangedSince" | "onInfo"> {
  return { unchangedSince: opts?.unchangedSince, onInfo: opts?.onInfo };
}

function totalFrom416(res: Answer): number | undefined {
  const m = /\/(\d+)\s*$/.exec(res.headers.get("content-range") ?? "");
  return m === null ? undefined : Number(m[1]);
}

function rangeFits(range: RangeQuery, size: number): boolean {
  return "suffixLength" in range ? range.suffixLength <= size : range.offset + range.length <= size;
}

async function readPartial(res: Answer, range: RangeQuery, ctx: HttpReadContext): Promise<Uint8Array> {
  const cr = parseContentRange(res.headers.get("content-range"));
  const fail = async (why: string) => {
    await res.body?.cancel().catch(() => {});
    return new StorageError(`${ctx.url} answered 206 with ${why}; refusing the answer`, {
      object: ctx.url,
    });
  };
  if (cr === undefined)
    throw await fail(`a missing or malformed Content-Range (${res.headers.get("content-range")})`);
  // Where the asked bytes must lie, in object coordinates.
  let want: { start: number; end: number };
  if ("suffixLength" in range) {
    if (cr.total !== undefined) {
      if (cr.total < range.suffixLength) {
        await res.body?.cancel().catch(() => {});
        throw notSatisfiable(range, cr.total, ctx);
      }
      want = { start: cr.total - range.suffixLength, end: cr.total };
    } else {
      want = { start: cr.end - range.suffixLength, end: cr.end };
    }
  } else {
    want = { start: range.offset, end: range.offset + range.length };
  }
  if (cr.start > want.start || cr.end < want.end) {
    // A server clamps a range to the object's end: the object is shorter than the range.
    if (cr.start <= want.start && cr.total !== undefined && cr.total < want.end) {
      await res.body?.cancel().catch(() => {});
      throw notSatisfiable(range, cr.total, ctx);
    }
    throw await fail(
      `Content-Range ${cr.start}-${cr.end - 1}, which does not cover bytes ${want.start}..${want.end}`,
    );
  }
  const length = cr.end - cr.start;
  const announced = contentLength(res);
  if (announced !== undefined && announced !== length) {
    throw await fail(`Content-Length ${announced} but Content-Range of ${length} bytes`);
  }
  const encoding = res.headers.get("content-encoding");
  if (encoding !== null && encoding !== "identity") {
    throw await fail(
      `Content-Encoding ${encoding}: the bytes of a compressed range cannot be mapped to the object`,
    );
  }
  const body = await readBody(res, length, length, true, ctx);
  if (cr.start === want.start && cr.end === want.end) return body;
  return body.slice(want.start - cr.start, want.end - cr.start);
}

/** A zero-length range cannot be expressed as a Range header: ask for the size instead. */
async function emptyRange(
  send: Send,
  range: RangeQuery,
  ctx: HttpReadContext,
): Promise<Uint8Array | undefined> {
  const res = await sendOrThrow(send, "HEAD", {}, ctx);
  await res.body?.cancel().catch(() => {});
  if (ctx.missing.has(res.status)) return undefined;
  if (res.status !== 200) throw await statusError(res, "HEAD", ctx);
  const size = contentLength(res);
  if (size === undefined) {
    throw new StorageError(`HEAD ${ctx.url} gave no Content-Length, so an empty range cannot be checked`, {
      object: ctx.url,
    });
  }
  if (!rangeFits(range, size)) throw notSatisfiable(range, size, ctx);
  return new Uint8Array(0);
}
