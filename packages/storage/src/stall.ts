import { StorageError } from "./errors.js";
import type { FetchLike } from "./http-read.js";
import { childController, raceAbort } from "./signals.js";

/** Statuses whose answers have no body, which a `Response` refuses to be built with. */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** The transient `Timeout` error of a request to `url` that received nothing for `timeoutMs`. */
export function stallError(url: string, timeoutMs: number): StorageError {
  return new StorageError(
    `${url} sent nothing for ${timeoutMs / 1000} s: the server stalled (the limit is the stall timeout, timeoutMs)`,
    { tag: "Timeout", object: url },
  );
}

/**
 * `fetch` with a stall timeout: a request fails with a transient `Timeout` error naming the URL
 * when no answer comes for `timeoutMs`, or when its body then stops for that long. A slow but
 * moving transfer never times out, however large; a server that stops answering cannot hang a
 * reader. A request with a body (an upload) waits for its answer as long as it takes (the
 * server answers only once the body is in), but its answer's body is watched. Browser-safe.
 */
export function withStallTimeout(fetch: FetchLike, timeoutMs: number): FetchLike {
  return async (input, init = {}) => {
    const url = typeof input === "string" ? input : input.url;
    const { controller, release } = childController(init.signal ?? undefined);
    let stalled: StorageError | undefined;
    const arm = () =>
      setTimeout(() => {
        stalled = stallError(url, timeoutMs);
        controller.abort(stalled);
      }, timeoutMs);
    let timer = init.body == null ? arm() : undefined;
    let res: Response;
    try {
      res = await fetch(input, { ...init, signal: controller.signal });
    } catch (err) {
      release();
      throw stalled ?? err;
    } finally {
      clearTimeout(timer);
    }
    if (res.body === null || NULL_BODY.has(res.status)) {
      release();
      return res;
    }
    const reader = res.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(out) {
        timer = arm();
        try {
          const { done, value } = await raceAbort(reader.read(), controller.signal);
          if (done) {
            release();
            out.close();
          } else out.enqueue(value);
        } catch (err) {
          release();
          reader.cancel(err).catch(() => {});
          out.error(stalled ?? err);
        } finally {
          clearTimeout(timer);
        }
      },
      cancel(reason) {
        release();
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}
