import { objectAt, StorageError } from "./errors.js";
import type { S3Store } from "./s3.js";
import { childText } from "./xml.js";

/** `s` safe inside XML text. */
export function escapeXml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** Starts a multipart upload; answers the `uploadId=...` query parameter its later requests carry. */
export async function initiateUpload(
  store: S3Store,
  url: string,
  key: string,
  signal: AbortSignal | undefined,
): Promise<string> {
  const init = await store.request("POST", `${url}?uploads`, key, { signal });
  const uploadId = childText(await store.xml(init, url, key, signal), "UploadId");
  if (!uploadId) {
    throw new StorageError(`${url}: InitiateMultipartUpload answered without an UploadId`, {
      object: objectAt(store.url, key),
    });
  }
  return `uploadId=${encodeURIComponent(uploadId)}`;
}

/**
 * A multipart upload of the parts `parts` yields: initiate, send them (`putPart(i, part, idParam)`
 * answers part i's ETag; `concurrency` at once, each taking the next part as it is free, so at most
 * `concurrency` parts are held besides the one `parts` is producing), complete. Any failure,
 * including an abort or an error from `parts`, aborts the upload so no orphaned parts keep costing
 * storage, and no object (old or half) appears under the key from this call. `partName` names a
 * part in the error for a missing ETag.
 */
export async function uploadInParts<T>(
  store: S3Store,
  url: string,
  key: string,
  parts: Iterable<T> | AsyncIterable<T>,
  putPart: (i: number, part: T, idParam: string) => Promise<string | null | undefined>,
  opts: { concurrency: number; signal: AbortSignal | undefined; partName: string },
): Promise<void> {
  const { signal } = opts;
  const idParam = await initiateUpload(store, url, key, signal);
  const source = numbered(parts);
  try {
    const etags: string[] = [];
    let failed = false;
    const worker = async () => {
      while (!failed) {
        const next = await source.next();
        if (next.done || failed) return;
        const [i, part] = next.value;
        const etag = await putPart(i, part, idParam);
        if (!etag) {
          throw new StorageError(`${url}: ${opts.partName} ${i + 1} was accepted without an ETag`, {
            object: objectAt(store.url, key),
          });
        }
        etags[i] = etag;
      }
    };
    // Once one part fails the others stop taking new parts, so the abort below is not raced.
    const guarded = () =>
      worker().catch((err) => {
        failed = true;
        throw err;
      });
    const results = await Promise.allSettled(Array.from({ length: opts.concurrency }, guarded));
    const firstFailure = results.find((r) => r.status === "rejected");
    if (firstFailure !== undefined) throw firstFailure.reason;
    const list = etags
      .map((etag, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${escapeXml(etag)}</ETag></Part>`)
      .join("");
    const done = await store.request("POST", `${url}?${idParam}`, key, {
      body: `<CompleteMultipartUpload>${list}</CompleteMultipartUpload>`,
      headers: { "content-type": "application/xml" },
      signal,
    });
    // S3 may answer 200 and still fail: the error is then in the body.
    await store.xml(done, url, key, signal);
  } catch (err) {
    // Close the caller's source (its `finally` runs), then abort: best effort and deliberately
    // without the caller's signal, which may be the reason we are here.
    await source.return(undefined).catch(() => {});
    await store
      .request("DELETE", `${url}?${idParam}`, key, { ok: [200, 204, 404] })
      .then((r) => r.body?.cancel())
      .catch(() => {});
    throw err;
  }
}

/** `parts` with their indexes, pulled one at a time whoever asks (async generators queue calls). */
async function* numbered<T>(parts: Iterable<T> | AsyncIterable<T>): AsyncGenerator<[number, T]> {
  let i = 0;
  for await (const part of parts) yield [i++, part];
}

/**
 * Uploads the byte parts `bodies` yields as an S3 multipart upload, each PUT as it comes (see
 * {@link uploadInParts}); what the byte uploads share, whatever cuts their parts.
 */
function uploadBodies(
  store: S3Store,
  url: string,
  key: string,
  bodies: Iterable<Uint8Array> | AsyncIterable<Uint8Array>,
  opts: { concurrency: number; signal: AbortSignal | undefined },
): Promise<void> {
  const { concurrency, signal } = opts;
  return uploadInParts(
    store,
    url,
    key,
    bodies,
    async (i, body, idParam) => {
      const res = await store.request("PUT", `${url}?partNumber=${i + 1}&${idParam}`, key, { body, signal });
      await res.body?.cancel().catch(() => {});
      return res.headers.get("etag");
    },
    { concurrency, signal, partName: "part" },
  );
}

/** Uploads `value` as an S3 multipart upload of parts of `partSize` bytes (see {@link uploadInParts}). */
export function multipartUpload(
  store: S3Store,
  url: string,
  key: string,
  value: Uint8Array,
  opts: { partSize: number; concurrency: number; signal: AbortSignal | undefined },
): Promise<void> {
  const { partSize } = opts;
  function* slices() {
    for (let at = 0; at < value.length; at += partSize) yield value.subarray(at, at + partSize);
  }
  return uploadBodies(store, url, key, slices(), opts);
}

/**
 * Uploads an object of `byteLength` bytes that arrives as a sequence of parts of any size, as an
 * S3 multipart upload, without holding it whole: the bytes are cut into `partSize` parts as they
 * come, at most `concurrency` parts upload at once (so at most `concurrency + 1` parts are held).
 * Any failure, a length other than `byteLength` included, aborts the upload (see
 * {@link uploadInParts}): no parts are left behind and no object appears under the key.
 */
export function multipartUploadParts(
  store: S3Store,
  url: string,
  key: string,
  byteLength: number,
  parts: AsyncIterable<Uint8Array>,
  opts: { partSize: number; concurrency: number; signal: AbortSignal | undefined },
): Promise<void> {
  const { partSize } = opts;
  // The bytes re-cut into parts of `partSize` (the last shorter; one empty part for no bytes).
  async function* cut() {
    let total = 0;
    let count = 0;
    let buffer = new Uint8Array(partSize);
    let fill = 0;
    for await (const part of parts) {
      total += part.byteLength;
      for (let at = 0; at < part.byteLength; ) {
        const take = Math.min(partSize - fill, part.byteLength - at);
        buffer.set(part.subarray(at, at + take), fill);
        fill += take;
        at += take;
        if (fill === partSize) {
          count++;
          yield buffer;
          buffer = new Uint8Array(partSize);
          fill = 0;
        }
      }
    }
    if (total !== byteLength) {
      throw new StorageError(
        `${url}: ${total} bytes arrived for an object declared as ${byteLength}; the upload was aborted and nothing was written.`,
        { object: objectAt(store.url, key) },
      );
    }
    if (fill > 0 || count === 0) yield buffer.subarray(0, fill);
  }
  return uploadBodies(store, url, key, cut(), opts);
}
