import { isTransient, objectAt, RetriesExhaustedError, StorageError } from "./errors.js";
import { childController, raceAbort, sleep } from "./signals.js";
import type { RangeQuery, Store, StoreOptions } from "./types.js";
import {
  type AnyStore,
  type GetInto,
  locationOf,
  optionalMethods,
  type PartsWrite,
  writeMethod,
} from "./wrap.js";

/** Options of {@link withRetries}. */
export interface RetryOptions {
  /** Total attempts per read, the first included (default 4). */
  attempts?: number;
  /** Backoff base: the wait before retry k is uniform in [0, min(maxDelayMs, baseDelayMs * 2^(k-1))] (default 100). */
  baseDelayMs?: number;
  /** Cap of one wait (default 5000). */
  maxDelayMs?: number;
  /** Per-attempt timeout; an attempt that takes longer is aborted and counts as a transient failure. */
  timeoutMs?: number;
  /** Which failures are worth another attempt (default {@link isTransient}). */
  isRetryable?: (err: unknown) => boolean;
  /** Source of jitter in [0, 1) (default Math.random); tests pass a fixed one. */
  random?: () => number;
  /** Called before each wait, e.g. to log retries. */
  onRetry?: (info: { key: string; attempt: number; delayMs: number; error: unknown }) => void;
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/**
 * Retries idempotent reads (`get`, `getRange`, `list`) on transient failures: 5xx and 429
 * answers, network errors and resets, truncated bodies and attempt timeouts. Waits between
 * attempts grow exponentially with full jitter. After `attempts` failures it throws a
 * `RetriesExhausted` error listing every cause. Other errors (4xx, invalid keys, unsatisfiable
 * ranges) are thrown at once, and an aborted signal stops everything immediately with its reason.
 * Writes pass through untouched: a failed write is reported, not repeated behind the caller's back.
 * The inner store's `getInto` (retried like `get`) and `setParts` (a write) are kept when it has them.
 */
export class RetryStore implements Store {
  readonly url: string;
  readonly inner: AnyStore;
  readonly set: Store["set"];
  readonly delete: Store["delete"];
  /** The inner store's `setParts` (an upload of an object arriving in parts), when it has one; a write, so not retried. */
  readonly setParts?: PartsWrite;
  /**
   * The inner store's `getInto`, retried like `get`; absent when it has none. `allocate` is still
   * called at most once: a later attempt reads into the same memory (or, when the object grew
   * in between, into memory of its own).
   */
  readonly getInto?: GetInto;
  /** The inner store's server-side `copy`, when it has one; a write, so not retried. */
  readonly copy?: Store["copy"];
  private readonly attempts: number;
  private readonly base: number;
  private readonly max: number;
  private readonly timeoutMs: number | undefined;
  private readonly retryable: (err: unknown) => boolean;
  private readonly random: () => number;
  private readonly onRetry: RetryOptions["onRetry"];

  constructor(inner: AnyStore, opts: RetryOptions = {}) {
    this.inner = inner;
    this.url = locationOf(inner);
    this.set = writeMethod(inner, "set");
    this.delete = writeMethod(inner, "delete");
    const { getInto, setParts } = optionalMethods(inner);
    if (setParts !== undefined) this.setParts = setParts;
    if (getInto !== undefined)
      this.getInto = (key, allocate, opts) => {
        let space: Uint8Array | undefined;
        const once = (size: number) => {
          if (space === undefined) return (space = allocate(size));
          return space.length >= size ? space : new Uint8Array(size);
        };
        return this.run(key, `reading ${key}`, (o) => getInto(key, once, o), opts);
      };
    if (inner.copy !== undefined) this.copy = inner.copy.bind(inner);
    this.attempts = Math.max(1, Math.floor(opts.attempts ?? 4));
    this.base = opts.baseDelayMs ?? 100;
    this.max = opts.maxDelayMs ?? 5000;
    this.timeoutMs = opts.timeoutMs;
    this.retryable = opts.isRetryable ?? isTransient;
    this.random = opts.random ?? Math.random;
    this.onRetry = opts.onRetry;
  }

  get(key: string, opts?: StoreOptions): Promise<Uint8Array | undefined> {
    return this.run(key, `reading ${key}`, (o) => this.inner.get(key, o), opts);
  }

  getRange(key: string, range: RangeQuery, opts?: StoreOptions): Promise<Uint8Array | undefined> {
    const what =
      "suffixLength" in range
        ? `reading the last ${range.suffixLength} bytes of ${key}`
        : `reading bytes ${range.offset}..${range.offset + range.length} of ${key}`;
    return this.run(key, what, (o) => this.inner.getRange(key, range, o), opts);
  }

  list(prefix?: string, opts?: StoreOptions): Promise<string[]> {
    const list = writeMethod(this.inner, "list");
    return this.run(prefix ?? "", `listing ${prefix ?? "everything"}`, (o) => list(prefix, o), opts);
  }

  private async run<T>(
    key: string,
    what: string,
    attempt: (opts: StoreOptions) => Promise<T>,
    opts?: StoreOptions,
  ): Promise<T> {
    const signal = opts?.signal;
    const causes: unknown[] = [];
    for (let n = 1; ; n++) {
      signal?.throwIfAborted();
      try {
        return await this.once(attempt, opts, key);
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        if (!this.retryable(err)) throw err;
        causes.push(err);
        if (n >= this.attempts) {
          throw new RetriesExhaustedError(
            // One line, naming the last failure; every attempt's error is in `causes`.
            `${what} from ${this.url} failed ${n} times (all attempts used), last: ${describe(err).split("\n")[0]}`,
            { attempts: n, causes, object: objectAt(this.url, key) },
          );
        }
        const delayMs = this.random() * Math.min(this.max, this.base * 2 ** (n - 1));
        this.onRetry?.({ key, attempt: n, delayMs, error: err });
        await sleep(delayMs, signal);
      }
    }
  }

  /** One attempt, aborted (and reported as a transient `Timeout`) when it outlives `timeoutMs`. */
  private async once<T>(
    attempt: (opts: StoreOptions) => Promise<T>,
    opts: StoreOptions | undefined,
    key: string,
  ) {
    if (this.timeoutMs === undefined) return attempt({ ...opts });
    const { controller, release } = childController(opts?.signal);
    const timer = setTimeout(() => {
      controller.abort(
        new StorageError(`an attempt on ${key} at ${this.url} took longer than ${this.timeoutMs} ms`, {
          tag: "Timeout",
          object: objectAt(this.url, key),
        }),
      );
    }, this.timeoutMs);
    try {
      // Raced as well, in case the inner store ignores its signal.
      return await raceAbort(attempt({ ...opts, signal: controller.signal }), controller.signal);
    } finally {
      clearTimeout(timer);
      release();
    }
  }
}

/** Wraps a store so that its reads are retried on transient failures (see {@link RetryStore}). */
export function withRetries(store: AnyStore, opts?: RetryOptions): RetryStore {
  return new RetryStore(store, opts);
}
