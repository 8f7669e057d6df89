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
 * A multipart upload of `count` parts: initiate, send the parts (`putPart(i, idParam)` answers
 * part i's ETag; `concurrency` at once), complete. Any failure, including an abort, aborts the
 * upload so no orphaned parts keep costing storage, and no object (old or half) appears under the
 * key from this call. `partName` names a part in the error for a missing ETag.
 */
export async function uploadInParts(
  store: S3Store,
  url: string,
  key: string,
  count: number,
  putPart: (i: number, idParam: string) => Promise<string | null | undefined>,
  opts: { concurrency: number; signal: AbortSignal | undefined; partName: string },
): Promise<void> {
  const { signal } = opts;
  const idParam = await initiateUpload(store, url, key, signal);
  try {
    const etags: string[] = new Array(count);
    let next = 0;
    let failed = false;
    const worker = async () => {
      while (!failed && next < count) {
        const i = next++;
        const etag = await putPart(i, idParam);
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
    const results = await Promise.allSettled(
      Array.from({ length: Math.min(opts.concurrency, count) }, guarded),
    );
    const firstFailure = results.find((r) => r.status === "rejected");
    if (firstFailure !== undefined) throw firstFailure.reason;
    const parts = etags
      .map((etag, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${escapeXml(etag)}</ETag></Part>`)
      .join("");
    const done = await store.request("POST", `${url}?${idParam}`, key, {
      body: `<CompleteMultipartUpload>${parts}</CompleteMultipartUpload>`,
      headers: { "content-type": "application/xml" },
      signal,
    });
    // S3 may answer 200 and still fail: the error is then in the body.
    await store.xml(done, url, key, signal);
  } catch (err) {
    // Best effort and deliberately without the caller's signal, which may be the reason we are here.
    await store
      .request("DELETE", `${url}?${idParam}`, key, { ok: [200, 204, 404] })
      .then((r) => r.body?.cancel())
      .catch(() => {});
    throw err;
  }
}

/** Uploads `value` as an S3 multipart upload of parts of `partSize` bytes (see {@link uploadInParts}). */
export function multipartUpload(
  store: S3Store,
  url: string,
  key: string,
  value: Uint8Array,
  opts: { partSize: number; concurrency: number; signal: AbortSignal | undefined },
): Promise<void> {
  const { partSize, signal } = opts;
  const count = Math.ceil(value.length / partSize);
  return uploadInParts(
    store,
    url,
    key,
    count,
    async (i, idParam) => {
      const body = value.subarray(i * partSize, Math.min(value.length, (i + 1) * partSize));
      const res = await store.request("PUT", `${url}?partNumber=${i + 1}&${idParam}`, key, { body, signal });
      await res.body?.cancel().catch(() => {});
      return res.headers.get("etag");
    },
    { concurrency: opts.concurrency, signal, partName: "part" },
  );
}
