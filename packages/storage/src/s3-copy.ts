import type { S3Store } from "./s3.js";
import { uploadInParts } from "./s3-multipart.js";
import { childText } from "./xml.js";

/** The largest object one CopyObject copies (S3's limit); larger ones are copied in parts. */
export const S3_MAX_COPY_OBJECT = 5 * 1024 ** 3;

/**
 * Copies an object of `size` bytes inside S3, the bytes never passing through this process: as
 * parts of `partSize` bytes (UploadPartCopy, `concurrency` at once) of a multipart upload. Any
 * failure aborts the upload, so no parts are left and nothing appears under the target key.
 */
export function multipartCopy(
  store: S3Store,
  url: string,
  key: string,
  source: string,
  size: number,
  opts: { partSize: number; concurrency: number; signal: AbortSignal | undefined },
): Promise<void> {
  const { partSize, signal } = opts;
  const count = Math.max(1, Math.ceil(size / partSize));
  return uploadInParts(
    store,
    url,
    key,
    Array.from({ length: count }, (_, i) => i * partSize),
    async (i, first, idParam) => {
      const last = Math.min(size, first + partSize) - 1;
      const res = await store.request("PUT", `${url}?partNumber=${i + 1}&${idParam}`, key, {
        headers: { "x-amz-copy-source": source, "x-amz-copy-source-range": `bytes=${first}-${last}` },
        signal,
      });
      // The ETag is in the body (CopyPartResult), which may also be an error despite the 200.
      return childText(await store.xml(res, url, key, signal), "ETag");
    },
    { concurrency: opts.concurrency, signal, partName: "copied part" },
  );
}
