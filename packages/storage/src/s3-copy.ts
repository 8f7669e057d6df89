import { objectAt, StorageError } from "./errors.js";
import type { S3Store } from "./s3.js";
import { escapeXml, initiateUpload } from "./s3-multipart.js";
import { childText } from "./xml.js";

/** The largest object one CopyObject copies (S3's limit); larger ones are copied in parts. */
export const S3_MAX_COPY_OBJECT = 5 * 1024 ** 3;

/**
 * Copies an object of `size` bytes inside S3, the bytes never passing through this process: as
 * parts of `partSize` bytes (UploadPartCopy, `concurrency` at once) of a multipart upload. Any
 * failure aborts the upload, so no parts are left and nothing appears under the target key.
 */
export async function multipartCopy(
  store: S3Store,
  url: string,
  key: string,
  source: string,
  size: number,
  opts: { partSize: number; concurrency: number; signal: AbortSignal | undefined },
): Promise<void> {
  const { signal } = opts;
  const idParam = await initiateUpload(store, url, key, signal);
  try {
    const count = Math.max(1, Math.ceil(size / opts.partSize));
    const etags: string[] = new Array(count);
    let next = 0;
    let failed = false;
    const worker = async () => {
      while (!failed && next < count) {
        const i = next++;
        const first = i * opts.partSize;
        const last = Math.min(size, first + opts.partSize) - 1;
        const res = await store.request("PUT", `${url}?partNumber=${i + 1}&${idParam}`, key, {
          headers: { "x-amz-copy-source": source, "x-amz-copy-source-range": `bytes=${first}-${last}` },
          signal,
        });
        // The ETag is in the body (CopyPartResult), which may also be an error despite the 200.
        const etag = childText(await store.xml(res, url, key, signal), "ETag");
        if (!etag) {
          throw new StorageError(`${url}: copied part ${i + 1} was accepted without an ETag`, {
            object: objectAt(store.url, key),
          });
        }
        etags[i] = etag;
      }
    };
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
