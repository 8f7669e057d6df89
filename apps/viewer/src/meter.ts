/**
 * What each user action costs at the store: requests, bytes and time, counted by a wrapper every
 * store of the page goes through. The wrapper also carries the action's AbortSignal into every
 * read, so "Cancel" stops the requests themselves, not just the page's interest in them.
 */
import type { RangeQuery, ReadableStore, StoreOptions } from "@deltacells/storage";

/** The cost of one finished (or cancelled, or failed) action. */
export interface ActionCost {
  action: string;
  requests: number;
  /**
   * Rounds of requests: a request that starts while none is in flight opens a new one. Reads
   * that depend on earlier answers (indptr, then the runs it names) take one wave each.
   */
  waves: number;
  bytes: number;
  ms: number;
  outcome: "done" | "cancelled" | "failed";
}

type Listener = (
  live: { action: string; requests: number; bytes: number; inFlight: number } | undefined,
) => void;

export class Meter {
  private current:
    | {
        action: string;
        requests: number;
        waves: number;
        bytes: number;
        inFlight: number;
        ctl: AbortController;
      }
    | undefined;
  /** Every action so far, oldest first (the tests read these through the page's state). */
  readonly history: ActionCost[] = [];
  onLive: Listener = () => {};

  /** Runs `fn` as one action: its reads are counted and abortable; an earlier action is cancelled. */
  async run<T>(action: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T | undefined> {
    this.current?.ctl.abort(new DOMException(`superseded by ${action}`, "AbortError"));
    const ctl = new AbortController();
    const mine = { action, requests: 0, waves: 0, bytes: 0, inFlight: 0, ctl };
    this.current = mine;
    this.onLive(mine);
    const started = performance.now();
    let outcome: ActionCost["outcome"] = "done";
    try {
      return await fn(ctl.signal);
    } catch (err) {
      if (ctl.signal.aborted) {
        outcome = "cancelled";
        return undefined;
      }
      outcome = "failed";
      throw err;
    } finally {
      this.history.push({
        action,
        requests: mine.requests,
        waves: mine.waves,
        bytes: mine.bytes,
        ms: performance.now() - started,
        outcome,
      });
      if (this.current === mine) {
        this.current = undefined;
        this.onLive(undefined);
      }
    }
  }

  cancel(): void {
    this.current?.ctl.abort(new DOMException("cancelled", "AbortError"));
  }

  /** `store`, counted against whichever action is running when a read starts. */
  wrap<S extends ReadableStore & { readonly url?: string }>(
    store: S,
  ): ReadableStore & { readonly url: string } {
    const count = async (
      call: (signal: AbortSignal | undefined) => Promise<Uint8Array | undefined>,
      outer?: AbortSignal,
    ) => {
      const a = this.current;
      if (a) {
        a.requests++;
        if (a.inFlight === 0) a.waves++;
        a.inFlight++;
        this.onLive(a);
      }
      const signal = a && outer ? AbortSignal.any([outer, a.ctl.signal]) : (a?.ctl.signal ?? outer);
      try {
        const bytes = await call(signal);
        if (a) a.bytes += bytes?.byteLength ?? 0;
        return bytes;
      } finally {
        if (a) {
          a.inFlight--;
          if (this.current === a) this.onLive(a);
        }
      }
    };
    return {
      url: store.url ?? "(store)",
      get: (key: string, opts?: StoreOptions) =>
        count((signal) => store.get(key, { ...opts, signal }), opts?.signal),
      getRange: (key: string, range: RangeQuery, opts?: StoreOptions) =>
        count((signal) => store.getRange(key, range, { ...opts, signal }), opts?.signal),
    };
  }
}

/** `1.2 MB`, `830 B`. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** One line for the status bar. */
export function describeCost(c: ActionCost): string {
  const what = `${c.requests} request${c.requests === 1 ? "" : "s"} in ${c.waves} wave${c.waves === 1 ? "" : "s"}, ${formatBytes(c.bytes)}, ${c.ms.toFixed(0)} ms`;
  return c.outcome === "done" ? `${c.action}: ${what}` : `${c.action} ${c.outcome} after ${what}`;
}
