/**
 * The page side of http.browser.test.ts: bundled for the browser with `@deltacells/storage` and run in
 * headless Chromium. Every export is called from Node through the harness and returns JSON.
 */
import { HttpStore, openStore, type RangeQuery, RetryStore } from "@deltacells/storage";
import { caught, type ErrorInfo, errorInfo, plain } from "../../../test-utils/browser/page-helpers.js";

/** `store.get(key)`: the bytes, or null for a missing object. */
export async function get(base: string, key: string): Promise<number[] | null> {
  const bytes = await new HttpStore(base).get(key);
  return bytes === undefined ? null : plain(bytes);
}

/** `store.getRange(key, range)`: the bytes, or null for a missing object. */
export async function getRange(base: string, key: string, range: RangeQuery): Promise<number[] | null> {
  const bytes = await new HttpStore(base).getRange(key, range);
  return bytes === undefined ? null : plain(bytes);
}

/** The error a read rejects with. */
export function getError(base: string, key: string): Promise<ErrorInfo> {
  return caught(() => new HttpStore(base).get(key));
}

/** The read {@link startRead} started, which {@link abortRead} ends. */
let reading: { controller: AbortController; outcome: Promise<unknown> } | undefined;

/** Starts a read with an abort signal and returns at once: the test aborts it once the server has it. */
export function startRead(base: string, key: string): void {
  const controller = new AbortController();
  const outcome = new HttpStore(base).get(key, { signal: controller.signal }).then(
    () => null,
    (err: unknown) => err,
  );
  reading = { controller, outcome };
}

/** Aborts the read {@link startRead} started: how it ended (`error` null: it resolved). */
export async function abortRead(): Promise<{ error: ErrorInfo | null; sameReason: boolean }> {
  const { controller, outcome } = reading!;
  controller.abort();
  const err = await outcome;
  return { error: err === null ? null : errorInfo(err), sameReason: err === controller.signal.reason };
}

/** A read with a signal aborted before the call, with a custom reason. */
export async function preAbortedRange(base: string, key: string): Promise<ErrorInfo> {
  const controller = new AbortController();
  controller.abort(new Error("stopped by the page"));
  return caught(() =>
    new HttpStore(base).getRange(key, { offset: 0, length: 4 }, { signal: controller.signal }),
  );
}

/** `openStore(url)` in the page: which store it made, and a read through it. */
export async function openAndRead(
  url: string,
  key: string,
  range: RangeQuery,
): Promise<{ isHttpStore: boolean; whole: number[] | null; part: number[] | null }> {
  const store = openStore(url);
  const whole = await store.get(key);
  const part = await store.getRange(key, range);
  return {
    isHttpStore: (store instanceof RetryStore ? store.inner : store) instanceof HttpStore,
    whole: whole === undefined ? null : plain(whole),
    part: part === undefined ? null : plain(part),
  };
}

/** The error `openStore` throws for a URL the browser cannot open. */
export function openStoreError(url: string): Promise<ErrorInfo> {
  return caught(() => openStore(url));
}
