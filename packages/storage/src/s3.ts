import { objectAt, StorageError } from "./errors.js";
import { DEFAULT_MAX_IGNORED_RANGE_BYTES, type ReadGet, remoteClients } from "./http.js";
import {
  encodeKeyPath,
  type FetchLike,
  type HttpReadContext,
  type KeyRead,
  networkError,
  readKey,
  statusError,
} from "./http-read.js";
import { normalizeKey, normalizePrefix } from "./keys.js";
import { throwIfAborted } from "./range.js";
import { multipartCopy, S3_MAX_COPY_OBJECT } from "./s3-copy.js";
import { multipartUpload, multipartUploadParts } from "./s3-multipart.js";
import { S3Signer } from "./sigv4.js";
import type { RangeQuery, Store, StoreOptions } from "./types.js";
import { child, childrenNamed, childText, parseXml } from "./xml.js";

/** Credentials and endpoint of an S3 store; {@link s3OptionsFromEnv} reads them from the environment. */
export interface S3Connection {
  /** Region for signing (default `us-east-1`). */
  region?: string;
  /** A custom endpoint such as `http://127.0.0.1:9000` (MinIO, moto, R2...). Implies path-style URLs. */
  endpoint?: string;
  /** Path-style (`endpoint/bucket/key`) rather than virtual-hosted URLs; default: true iff `endpoint` is set. */
  forcePathStyle?: boolean;
  /**
   * Credentials for SigV4 signing. Without them the store refuses to open (`NoCredentials`)
   * unless {@link signRequests} is false.
   */
  accessKeyId?: string;
  secretAccessKey?: string;
  sessionToken?: string;
  /**
   * False to send requests unsigned, for a public bucket (the AWS CLI's `--no-sign-request`);
   * credentials are then ignored. Default true: a store without credentials is refused, rather
   * than sending anonymous requests that fail later as "access denied" or read another bucket's
   * public view.
   */
  signRequests?: boolean;
}

/** Options of {@link S3Store}. */
export interface S3StoreOptions extends S3Connection {
  bucket: string;
  /** Key prefix inside the bucket under which this store lives (no leading `/`). */
  prefix?: string;
  /**
   * The fetch to use. Default: the global one, except for reads (`get`, `getRange`, `getInto`)
   * in Node, which go over node:http(s) with keep-alive connections (less CPU per byte).
   */
  fetch?: FetchLike;
  /** See {@link HttpStoreOptions.timeoutMs}: the stall timeout of every request (default none). */
  timeoutMs?: number;
  /** Objects larger than this are uploaded in parts (default 64 MiB). */
  multipartThreshold?: number;
  /** Size of each part of a multipart upload (default 16 MiB; S3 requires at least 5 MiB). */
  partSize?: number;
  /** Parts uploaded at the same time (default 4). */
  partConcurrency?: number;
  /**
   * Objects larger than this are copied (by {@link S3Store.copy}) in parts with UploadPartCopy
   * rather than by one CopyObject (default and at most 5 GiB, S3's CopyObject limit).
   */
  copyThreshold?: number;
  /** Size of each part of a copy in parts (default 512 MiB; at least 5 MiB, at most 5 GiB). */
  copyPartSize?: number;
  /** Keys asked for per ListObjectsV2 page (`max-keys`, default and S3's maximum 1000). */
  listPageSize?: number;
  /** See {@link HttpStoreOptions.maxIgnoredRangeBytes}. */
  maxIgnoredRangeBytes?: number;
}

/** A multipart upload neither completed nor aborted, as {@link S3Store.uploads} lists it. */
export interface S3Upload {
  /** The object's key in the store (under its prefix). */
  key: string;
  uploadId: string;
  /** When it was begun (the server's clock). */
  initiated: Date;
}

/** The smallest part S3 accepts (every part but the last). */
export const S3_MIN_PART_SIZE = 5 * 1024 * 1024;

/**
 * Reads the standard AWS variables from an environment record (pass `process.env` in Node):
 * `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION` (or
 * `AWS_DEFAULT_REGION`) and `AWS_ENDPOINT_URL_S3` (or `AWS_ENDPOINT_URL`). Pure: it touches no
 * global, so it is safe to bundle for the browser.
 */
export function s3OptionsFromEnv(env: Record<string, string | undefined>): S3Connection {
  const out: S3Connection = {};
  const set = <K extends keyof S3Connection>(k: K, v: string | undefined) => {
    if (v !== undefined && v !== "") (out as Record<string, unknown>)[k] = v;
  };
  set("accessKeyId", env.AWS_ACCESS_KEY_ID);
  set("secretAccessKey", env.AWS_SECRET_ACCESS_KEY);
  set("sessionToken", env.AWS_SESSION_TOKEN);
  set("region", env.AWS_REGION || env.AWS_DEFAULT_REGION);
  set("endpoint", env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL);
  return out;
}

/** Parses `s3://bucket/prefix` into bucket and prefix. */
export function parseS3Url(url: string): { bucket: string; prefix: string } {
  const m = /^s3:\/\/([^/?#]+)\/?([^?#]*)$/.exec(url);
  if (m === null) {
    throw new StorageError(`not an S3 URL: ${url} (expected s3://bucket/optional/prefix)`, {
      tag: "UnsupportedUrl",
      object: url,
    });
  }
  return { bucket: m[1]!, prefix: m[2]!.replace(/\/+$/, "") };
}

type Method = "GET" | "HEAD" | "PUT" | "POST" | "DELETE";

/**
 * An S3 (or S3-compatible) bucket prefix as a store: range GETs (suffix ranges included), PUT
 * with multipart upload above a threshold, ListObjectsV2 with continuation paging, DELETE.
 * Requests are signed with SigV4 by `aws4fetch`'s signer (10 KB, so this works in browsers too;
 * in Node with node:crypto's synchronous hashes, see `sigv4.ts`). Reads are not retried here:
 * wrap the store with `withRetries`.
 */
export class S3Store implements Store {
  readonly url: string;
  readonly bucket: string;
  readonly prefix: string;
  private readonly signer: S3Signer | undefined;
  private readonly fetch: FetchLike;
  /** Node's client for reads, when no fetch was given (`#http-get`). */
  private readonly nodeGet: ReadGet | undefined;
  private readonly bucketUrl: string;
  private readonly multipartThreshold: number;
  private readonly partSize: number;
  private readonly partConcurrency: number;
  private readonly listPageSize: number;
  private readonly copyThreshold: number;
  private readonly copyPartSize: number;
  private readonly maxIgnoredRangeBytes: number;
  private static readonly MISSING: ReadonlySet<number> = new Set([404]);
  private static readonly NOT_MISSING: ReadonlySet<string> = new Set(["NoSuchBucket"]);

  constructor(opts: S3StoreOptions) {
    // Lenient on purpose (S3-compatible servers accept more than AWS), but nothing that could
    // change the URL's meaning.
    if (!/^[A-Za-z0-9._-]{1,255}$/.test(opts.bucket)) {
      throw new StorageError(`invalid bucket name ${JSON.stringify(opts.bucket)}`, { tag: "UnsupportedUrl" });
    }
    this.bucket = opts.bucket;
    this.prefix = normalizePrefix(opts.prefix ?? "").replace(/\/$/, "");
    this.url = `s3://${this.bucket}${this.prefix ? `/${this.prefix}` : ""}`;
    const region = opts.region ?? "us-east-1";
    const pathStyle = opts.forcePathStyle ?? (opts.endpoint !== undefined || opts.bucket.includes("."));
    const endpoint = new URL(opts.endpoint ?? `https://s3.${region}.amazonaws.com`);
    const origin = endpoint.origin + endpoint.pathname.replace(/\/+$/, "");
    this.bucketUrl = pathStyle
      ? `${origin}/${encodeURIComponent(this.bucket)}`
      : `${endpoint.protocol}//${this.bucket}.${endpoint.host}${endpoint.pathname.replace(/\/+$/, "")}`;
    if (opts.signRequests === false) {
      this.signer = undefined;
    } else if (opts.accessKeyId === undefined && opts.secretAccessKey === undefined) {
      throw new StorageError(
        `S3 store ${this.url}: no credentials. Pass accessKeyId and secretAccessKey (in Node, openStore from @deltacells/storage/node reads them from the AWS environment and ~/.aws), or signRequests: false to read a public bucket unsigned.`,
        { tag: "NoCredentials", object: this.url },
      );
    } else {
      if (!opts.accessKeyId || !opts.secretAccessKey) {
        throw new StorageError(
          `S3 store ${this.url}: accessKeyId and secretAccessKey must be given together (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)`,
          { tag: "InvalidArgument", object: this.url },
        );
      }
      this.signer = new S3Signer({
        accessKeyId: opts.accessKeyId,
        secretAccessKey: opts.secretAccessKey,
        ...(opts.sessionToken ? { sessionToken: opts.sessionToken } : {}),
        region,
      });
    }
    ({ fetch: this.fetch, nodeGet: this.nodeGet } = remoteClients(opts));
    this.multipartThreshold = opts.multipartThreshold ?? 64 * 1024 * 1024;
    this.partSize = opts.partSize ?? 16 * 1024 * 1024;
    if (this.partSize < S3_MIN_PART_SIZE) {
      throw new StorageError(
        `S3 store ${this.url}: partSize ${this.partSize} is below S3's minimum of 5 MiB`,
        {
          tag: "InvalidArgument",
          object: this.url,
          expected: `>= ${S3_MIN_PART_SIZE}`,
          found: this.partSize,
        },
      );
    }
    this.partConcurrency = Math.max(1, opts.partConcurrency ?? 4);
    this.copyThreshold = Math.min(opts.copyThreshold ?? S3_MAX_COPY_OBJECT, S3_MAX_COPY_OBJECT);
    this.copyPartSize = opts.copyPartSize ?? 512 * 1024 * 1024;
    if (!(this.copyPartSize >= S3_MIN_PART_SIZE && this.copyPartSize <= S3_MAX_COPY_OBJECT)) {
      throw new StorageError(
        `S3 store ${this.url}: copyPartSize ${this.copyPartSize} is outside S3's 5 MiB to 5 GiB`,
        {
          tag: "InvalidArgument",
          object: this.url,
          expected: `${S3_MIN_PART_SIZE} to ${S3_MAX_COPY_OBJECT}`,
          found: this.copyPartSize,
        },
      );
    }
    this.listPageSize = Math.min(1000, Math.max(1, opts.listPageSize ?? 1000));
    this.maxIgnoredRangeBytes = opts.maxIgnoredRangeBytes ?? DEFAULT_MAX_IGNORED_RANGE_BYTES;
  }

  /** The object key in the bucket for a store key. */
  objectKey(key: string): string {
    const k = normalizeKey(key, this.url);
    return this.prefix ? `${this.prefix}/${k}` : k;
  }

  private objectUrl(key: string): string {
    return `${this.bucketUrl}/${encodeKeyPath(this.objectKey(key))}`;
  }

  /** Sends one (signed, when there are credentials) request. */
  private async send(
    method: Method,
    url: string,
    headers: Record<string, string>,
    body: Uint8Array | string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Response> {
    // A Uint8Array may view a SharedArrayBuffer in TypeScript's eyes; fetch copies it either way.
    const payload = (body ?? null) as BodyInit | null;
    if (this.signer === undefined)
      return this.fetch(url, { method, headers, body: payload, signal: signal ?? null });
    // The body is not needed to sign: S3 requests carry X-Amz-Content-Sha256: UNSIGNED-PAYLOAD
    // (aws4fetch's default for s3; TLS protects the body), which spares hashing large parts.
    const signed = await this.signer.sign(method, url, headers);
    return this.fetch(signed.url, { method, headers: signed.headers, body: payload, signal: signal ?? null });
  }

  /** Sends a request that must succeed; maps network failures and bad statuses to storage errors. */
  async request(
    method: Method,
    url: string,
    key: string,
    opts: {
      headers?: Record<string, string>;
      body?: Uint8Array | string;
      signal?: AbortSignal | undefined;
      ok?: number[];
    },
  ): Promise<Response> {
    const ctx = this.ctx(url, key, opts.signal);
    let res: Response;
    try {
      res = await this.send(method, url, opts.headers ?? {}, opts.body, opts.signal);
    } catch (err) {
      throw networkError(err, ctx);
    }
    if (!(opts.ok ?? [200]).includes(res.status)) throw await statusError(res, method, ctx);
    return res;
  }

  /** Reads a whole XML answer and parses it; an `<Error>` root (S3 can send one with 200) throws. */
  async xml(res: Response, url: string, key: string, signal: AbortSignal | undefined) {
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      throw networkError(err, this.ctx(url, key, signal));
    }
    let root: ReturnType<typeof parseXml>;
    try {
      root = parseXml(text);
    } catch (err) {
      throw new StorageError(`${url} answered with malformed XML: ${(err as Error).message}`, {
        object: objectAt(this.url, key),
        cause: err,
      });
    }
    if (root.name === "Error") {
      throw new StorageError(`${url} failed: ${childText(root, "Code")}: ${childText(root, "Message")}`, {
        object: objectAt(this.url, key),
      });
    }
    return root;
  }

  private ctx(url: string, key: string, signal: AbortSignal | undefined): HttpReadContext {
    return {
      url,
      key,
      location: this.url,
      missing: S3Store.MISSING,
      notMissingCodes: S3Store.NOT_MISSING,
      maxIgnoredRangeBytes: this.maxIgnoredRangeBytes,
      signal,
    };
  }

  get(key: string, opts?: StoreOptions): Promise<Uint8Array | undefined> {
    return readKey(key, undefined, opts, this.keyRead);
  }

  getRange(key: string, range: RangeQuery, opts?: StoreOptions): Promise<Uint8Array | undefined> {
    return readKey(key, range, opts, this.keyRead);
  }

  /**
   * `get` into memory from `allocate(size)`, called once the answer's Content-Length is known
   * (without one, once the whole body is in): the body's chunks are copied once, into it, and
   * nothing object-sized is allocated (a tile read into a decoder pool's shared memory).
   */
  getInto(
    key: string,
    allocate: (size: number) => Uint8Array,
    opts?: StoreOptions,
  ): Promise<Uint8Array | undefined> {
    return readKey(key, undefined, opts, this.keyRead, allocate);
  }

  /** A read of a key: a (signed) GET of its object, by Node's client when there is one. */
  private readonly keyRead = (key: string, signal: AbortSignal | undefined): KeyRead => {
    const url = this.objectUrl(key);
    const get = this.nodeGet;
    return {
      send:
        get === undefined
          ? (method, headers) => this.send(method, url, headers, undefined, signal)
          : async (method, headers) => {
              if (this.signer === undefined) return get(url, method, headers, signal);
              const signed = await this.signer.sign(method, url, headers);
              return get(signed.url, method, Object.fromEntries(signed.headers), signal);
            },
      ctx: this.ctx(url, key, signal),
    };
  };

  async set(key: string, value: Uint8Array, opts?: StoreOptions): Promise<void> {
    throwIfAborted(opts?.signal);
    const url = this.objectUrl(key);
    if (opts?.createOnly) {
      await this.create(url, key, value, opts.signal);
      return;
    }
    if (value.length <= this.multipartThreshold) {
      await this.request("PUT", url, key, { body: value, signal: opts?.signal });
      return;
    }
    await multipartUpload(this, url, key, value, {
      partSize: this.partSize,
      concurrency: this.partConcurrency,
      signal: opts?.signal,
    });
  }

  /**
   * A PUT with `If-None-Match: *`: S3 (since 2024) and moto refuse it with 412 when the key exists,
   * and with 409 when another conditional write of it is in flight; both are `AlreadyExists`.
   */
  private async create(url: string, key: string, value: Uint8Array, signal: AbortSignal | undefined) {
    if (value.length > this.multipartThreshold) {
      throw new StorageError(
        `${url}: a create-only write is limited to one PUT (${this.multipartThreshold} bytes)`,
        { tag: "InvalidArgument", object: objectAt(this.url, key) },
      );
    }
    const res = await this.request("PUT", url, key, {
      body: value,
      headers: { "if-none-match": "*" },
      signal,
      ok: [200, 409, 412],
    });
    await res.body?.cancel().catch(() => {});
    if (res.status !== 200) {
      throw new StorageError(`${url} already exists (the create-only PUT was answered ${res.status})`, {
        tag: "AlreadyExists",
        object: objectAt(this.url, key),
      });
    }
  }

  /**
   * Write one object of `byteLength` bytes that arrives in parts, never held whole: above the
   * multipart threshold it is uploaded part by part as the bytes come (see `multipartUploadParts`);
   * at or below it, gathered and PUT. A length other than `byteLength` writes nothing.
   */
  async setParts(
    key: string,
    byteLength: number,
    parts: AsyncIterable<Uint8Array>,
    opts?: StoreOptions,
  ): Promise<void> {
    throwIfAborted(opts?.signal);
    const url = this.objectUrl(key);
    if (byteLength > this.multipartThreshold) {
      await multipartUploadParts(this, url, key, byteLength, parts, {
        partSize: this.partSize,
        concurrency: this.partConcurrency,
        signal: opts?.signal,
      });
      return;
    }
    const whole = new Uint8Array(byteLength);
    let at = 0;
    for await (const part of parts) {
      if (at + part.byteLength > byteLength) break;
      whole.set(part, at);
      at += part.byteLength;
    }
    if (at !== byteLength) {
      throw new StorageError(
        `${url}: the parts of an object declared as ${byteLength} bytes did not add up to it; nothing was written.`,
        { object: objectAt(this.url, key) },
      );
    }
    await this.request("PUT", url, key, { body: whole, signal: opts?.signal });
  }

  /**
   * Copy object `from` to `to` inside the bucket, server-side: the bytes never pass through this
   * process, so a gigabyte object costs no memory here. One CopyObject up to `copyThreshold`
   * (5 GiB, S3's limit), else a multipart upload of UploadPartCopy parts (aborted on failure, so
   * nothing half-copied appears under `to`). A HEAD of `from` first learns its size: a missing
   * `from` is a `StorageError`, never an empty copy. Returns the bytes copied.
   */
  async copy(from: string, to: string, opts?: StoreOptions): Promise<number> {
    throwIfAborted(opts?.signal);
    const fromUrl = this.objectUrl(from);
    const head = await this.request("HEAD", fromUrl, from, { signal: opts?.signal, ok: [200, 404] });
    await head.body?.cancel().catch(() => {});
    if (head.status === 404) {
      throw new StorageError(`${fromUrl} cannot be copied to ${to}: there is no such object`, {
        object: objectAt(this.url, from),
        expected: "an object",
        found: "none",
      });
    }
    const size = Number(head.headers.get("content-length"));
    if (!Number.isSafeInteger(size) || size < 0) {
      throw new StorageError(
        `${fromUrl} answered HEAD without a usable Content-Length; it cannot be copied`,
        {
          object: objectAt(this.url, from),
        },
      );
    }
    const url = this.objectUrl(to);
    const source = `/${encodeURIComponent(this.bucket)}/${encodeKeyPath(this.objectKey(from))}`;
    if (size > this.copyThreshold) {
      await multipartCopy(this, url, to, source, size, {
        partSize: this.copyPartSize,
        concurrency: this.partConcurrency,
        signal: opts?.signal,
      });
      return size;
    }
    const res = await this.request("PUT", url, to, {
      headers: { "x-amz-copy-source": source },
      signal: opts?.signal,
    });
    // S3 may answer 200 and still fail: the error is then in the body.
    await this.xml(res, url, to, opts?.signal);
    return size;
  }

  async delete(key: string, opts?: StoreOptions): Promise<void> {
    throwIfAborted(opts?.signal);
    const res = await this.request("DELETE", this.objectUrl(key), key, {
      signal: opts?.signal,
      ok: [200, 204, 404],
    });
    await res.body?.cancel().catch(() => {});
  }

  /**
   * The multipart uploads begun under `prefix` and neither completed nor aborted
   * (ListMultipartUploads, followed page by page), oldest first: what a writer killed in the middle
   * of a large upload leaves. No listing shows them, and S3 bills their parts until they are
   * aborted ({@link abortUpload}) or a lifecycle rule does it.
   */
  async uploads(prefix?: string, opts?: StoreOptions): Promise<S3Upload[]> {
    throwIfAborted(opts?.signal);
    const p = normalizePrefix(prefix, this.url);
    const full = this.prefix ? `${this.prefix}/${p}` : p;
    const out: S3Upload[] = [];
    let marker: { key: string; uploadId: string } | undefined;
    do {
      const q = new URLSearchParams({ uploads: "", prefix: full, "max-uploads": String(this.listPageSize) });
      if (marker !== undefined) {
        q.set("key-marker", marker.key);
        q.set("upload-id-marker", marker.uploadId);
      }
      const url = `${this.bucketUrl}?${q.toString().replace(/\+/g, "%20")}`;
      const res = await this.request("GET", url, p, { signal: opts?.signal });
      const root = await this.xml(res, url, p, opts?.signal);
      for (const u of childrenNamed(root, "Upload")) {
        const k = childText(u, "Key");
        const uploadId = childText(u, "UploadId");
        if (k === undefined || uploadId === undefined || !k.startsWith(full)) continue;
        out.push({
          key: this.prefix ? k.slice(this.prefix.length + 1) : k,
          uploadId,
          initiated: new Date(childText(u, "Initiated") ?? Number.NaN),
        });
      }
      const truncated = childText(root, "IsTruncated") === "true";
      const key = childText(root, "NextKeyMarker");
      const uploadId = childText(root, "NextUploadIdMarker");
      if (truncated && (!key || uploadId === undefined)) {
        throw new StorageError(`${url}: a truncated listing of uploads without its next markers`, {
          object: this.url,
        });
      }
      marker = truncated ? { key: key!, uploadId: uploadId! } : undefined;
    } while (marker !== undefined);
    return out.sort((a, b) => a.initiated.getTime() - b.initiated.getTime());
  }

  /** Abort the multipart upload `uploadId` of `key`, dropping its parts; one already gone is no error. */
  async abortUpload(key: string, uploadId: string, opts?: StoreOptions): Promise<void> {
    throwIfAborted(opts?.signal);
    const url = `${this.objectUrl(key)}?uploadId=${encodeURIComponent(uploadId)}`;
    const res = await this.request("DELETE", url, key, { signal: opts?.signal, ok: [200, 204, 404] });
    await res.body?.cancel().catch(() => {});
  }

  /**
   * Every key under `prefix`, following ListObjectsV2 continuation tokens. Objects whose names
   * are not valid store keys (folder markers ending in `/`, `..` segments) are left out.
   */
  async list(prefix?: string, opts?: StoreOptions): Promise<string[]> {
    throwIfAborted(opts?.signal);
    const p = normalizePrefix(prefix, this.url);
    const full = this.prefix ? `${this.prefix}/${p}` : p;
    const out: string[] = [];
    let token: string | undefined;
    do {
      const q = new URLSearchParams({
        "list-type": "2",
        prefix: full,
        "max-keys": String(this.listPageSize),
      });
      if (token !== undefined) q.set("continuation-token", token);
      const url = `${this.bucketUrl}?${q.toString().replace(/\+/g, "%20")}`;
      const res = await this.request("GET", url, p, { signal: opts?.signal });
      const root = await this.xml(res, url, p, opts?.signal);
      for (const c of childrenNamed(root, "Contents")) {
        const k = childText(c, "Key");
        if (k === undefined || !k.startsWith(full)) continue;
        const rel = this.prefix ? k.slice(this.prefix.length + 1) : k;
        try {
          out.push(normalizeKey(rel));
        } catch {
          // not addressable through this interface (e.g. a "folder/" marker)
        }
      }
      const truncated = childText(root, "IsTruncated") === "true";
      token = truncated ? child(root, "NextContinuationToken")?.text : undefined;
      if (truncated && !token) {
        throw new StorageError(`${url}: a truncated listing without NextContinuationToken`, {
          object: this.url,
        });
      }
    } while (token !== undefined);
    return out.sort();
  }
}
