import { isStorageError } from "./errors.js";
import { onAbort } from "./signals.js";
import type { RangeQuery, Store, StoreOptions } from "./types.js";
import {
  type AnyStore,
  type GetInto,
  locationOf,
  optionalMethods,
  type PartsWrite,
  writeMethod,
} from "./wrap.js";

/** Options of {@link withCoalescing}. */
export interface CoalesceOptions {
  /**
   * How long calls are collected before they are sent, in ms (default 0: everything issued in
   * the current task, including its promise continuations, goes out together on the next one).
   */
  windowMs?: number;
  /** A merged request never spans more than this many bytes (default 16 MiB). */
  maxMergedBytes?: number;
  /**
   * Ranges separated by a gap of at most this many bytes are merged too, the gap read and dropped
   * (default 0: only touching or overlapping ranges). Many small ranges with short gaps between
   * them (a columnar file's chunks of a few columns, row group after row group) are then a few
   * large requests, for at most this many bytes nobody asked for between two of them.
   */
  maxGapBytes?: number;
}

interface Waiter {
  /** The caller's version pin (`unchangedSince`): only callers with the same pin are merged. */
  pin: number | undefined;
  offset: number;
  end: number;
  signal: AbortSignal | undefined;
  resolve: (v: Uint8Array | undefined) => void;
  reject: (e: unknown) => void;
}

/**
 * Merges concurrent `getRange` calls on the same key whose ranges touch or overlap (or lie at
 * most `maxGapBytes` apart) into one request to the inner store; each caller gets exactly its own
 * bytes (a copy). Longer gaps are not merged (that would download bytes nobody asked for), suffix
 * ranges and empty ranges pass straight through. Calls pinned to a version (`unchangedSince`) are
 * merged only with calls of the same pin, which the merged request carries: an object changed
 * since fails all of them, as it would each. If a merged request is refused as unsatisfiable (one range
 * ran past the end), its members are retried one by one so each gets its own answer. A caller
 * whose signal aborts rejects at once; the merged request is aborted only when all its callers
 * have aborted. Whole-object reads (`get`, and `getInto` where the inner store has it) and
 * writes (`setParts` too) pass straight through.
 */
export class CoalescingStore implements Store {
  readonly url: string;
  readonly inner: AnyStore;
  readonly set: Store["set"];
  readonly delete: Store["delete"];
  readonly list: Store["list"];
  /** The inner store's `getInto`, unchanged; absent when it has none. */
  readonly getInto?: GetInto;
  /** The inner store's `setParts`, unchanged; absent when it has none. */
  readonly setParts?: PartsWrite;
  private readonly windowMs: number;
  private readonly maxMerged: number;
  private readonly maxGap: number;
  private pending = new Map<string, Waiter[]>();
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(inner: AnyStore, opts: CoalesceOptions = {}) {
    this.inner = inner;
    this.url = locationOf(inner);
    this.set = writeMethod(inner, "set");
    this.delete = writeMethod(inner, "delete");
    this.list = writeMethod(inner, "list");
    const { getInto, setParts } = optionalMethods(inner);
    if (getInto !== undefined) this.getInto = getInto;
    if (setParts !== undefined) this.setParts = setParts;
    this.windowMs = opts.windowMs ?? 0;
    this.maxMerged = opts.maxMergedBytes ?? 16 * 1024 * 1024;
    this.maxGap = opts.maxGapBytes ?? 0;
  }

  get(key: string, opts?: StoreOptions): Promise<Uint8Array | undefined> {
    return this.inner.get(key, opts);
  }

  getRange(key: string, range: RangeQuery, opts?: StoreOptions): Promise<Uint8Array | undefined> {
    if (
      "suffixLength" in range ||
      !Number.isSafeInteger(range.offset) ||
      !Number.isSafeInteger(range.length) ||
      range.offset < 0 ||
      range.length <= 0 ||
      // A merged read has no one caller to report the object's version to.
      opts?.onInfo !== undefined
    ) {
      return this.inner.getRange(key, range, opts);
    }
    const signal = opts?.signal;
    signal?.throwIfAborted();
    return new Promise((resolve, reject) => {
      // Detach from the caller's signal once answered, so long-lived signals collect no listeners.
      const done = onAbort(signal, () => reject(signal?.reason));
      const waiter: Waiter = {
        pin: opts?.unchangedSince,
        offset: range.offset,
        end: range.offset + range.length,
        signal,
        resolve: (v) => {
          done();
          resolve(v);
        },
        reject: (e) => {
          done();
          reject(e);
        },
      };
      const slot = `${waiter.pin ?? ""}:${key}`;
      const list = this.pending.get(slot);
      if (list === undefined) this.pending.set(slot, [waiter]);
      else list.push(waiter);
      this.timer ??= setTimeout(() => this.sendPending(), this.windowMs);
    });
  }

  private sendPending(): void {
    this.timer = undefined;
    const pending = this.pending;
    this.pending = new Map();
    for (const [slot, waiters] of pending) {
      const key = slot.slice(slot.indexOf(":") + 1);
      waiters.sort((a, b) => a.offset - b.offset || a.end - b.end);
      let group: Waiter[] = [];
      let start = 0;
      let end = 0;
      for (const w of waiters) {
        if (
          group.length > 0 &&
          w.offset <= end + this.maxGap &&
          Math.max(end, w.end) - start <= this.maxMerged
        ) {
          group.push(w);
          end = Math.max(end, w.end);
        } else {
          if (group.length > 0) this.send(key, group, start, end);
          group = [w];
          start = w.offset;
          end = w.end;
        }
      }
      if (group.length > 0) this.send(key, group, start, end);
    }
  }

  private send(key: string, group: Waiter[], start: number, end: number): void {
    const pin = group[0]!.pin === undefined ? {} : { unchangedSince: group[0]!.pin };
    if (group.length === 1) {
      const w = group[0]!;
      this.inner
        .getRange(key, { offset: start, length: end - start }, w.signal ? { signal: w.signal, ...pin } : pin)
        .then(w.resolve, w.reject);
      return;
    }
    const { signal, release } = allAborted(group);
    this.inner.getRange(key, { offset: start, length: end - start }, signal ? { signal, ...pin } : pin).then(
      (bytes) => {
        release();
        for (const w of group)
          w.resolve(bytes === undefined ? undefined : bytes.slice(w.offset - start, w.end - start));
      },
      (err) => {
        release();
        if (!isStorageError(err, "RangeNotSatisfiable")) {
          for (const w of group) w.reject(err);
          return;
        }
        for (const w of group) {
          const opts = w.signal ? { signal: w.signal, ...pin } : pin;
          this.inner
            .getRange(key, { offset: w.offset, length: w.end - w.offset }, opts)
            .then(w.resolve, w.reject);
        }
      },
    );
  }
}

/**
 * A signal that aborts once every waiter's signal has; undefined when some waiter cannot abort.
 * `release()`, once the merged read has settled, stops waiting on the waiters' signals: a
 * long-lived one (a stream's) would otherwise keep a listener per merged read until it aborts.
 */
function allAborted(group: Waiter[]): { signal: AbortSignal | undefined; release(): void } {
  if (group.some((w) => w.signal === undefined)) return { signal: undefined, release() {} };
  const controller = new AbortController();
  let left = group.length;
  const stops: (() => void)[] = [];
  for (const w of group) {
    const aborted = () => {
      if (--left === 0) controller.abort(w.signal!.reason);
    };
    if (w.signal!.aborted) aborted();
    else stops.push(onAbort(w.signal!, aborted));
  }
  return {
    signal: controller.signal,
    release: () => {
      for (const stop of stops) stop();
    },
  };
}

/**
 * Wraps a store so that concurrent touching or overlapping ranges of one key (or ranges at most
 * `maxGapBytes` apart) become one request.
 */
export function withCoalescing(store: AnyStore, opts?: CoalesceOptions): CoalescingStore {
  return new CoalescingStore(store, opts);
}
