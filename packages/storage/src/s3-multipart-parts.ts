import { objectAt, StorageError } from "./errors.js";
import type { S3Store } from "./s3.js";
import { escapeXml, initiateUpload } from "./s3-multipart.js";

/**
 * Uploads an object of `byteLength` bytes that arrives as a sequence of parts of any size, as an
 * S3 multipart upload, without holding it whole: the bytes are cut into `partSize` parts as they
 * come, at most `concurrency` parts upload at once (so at most `concurrency + 1` parts are held).
 * Any failure, a length other than `byteLength` included, aborts the upload: no parts are left
 * behind and no object appears under the key from this call.
 */
export async function multipartUploadParts(
  store: S3Store,
  url: string,
  key: string,
  byteLength: number,
  parts: AsyncIterable<Uint8Array>,
  opts: { partSize: number; concurrency: number; signal: AbortSignal | undefined },
): Promise<void> {
  const { signal } = opts;
  const idParam = await initiateUpload(store, url, key, signal);
  const etags: string[] = [];
  const running = new Set<Promise<void>>();
  let failure: { cause: unknown } | undefined;
  const check = () => {
    if (failure !== undefined) throw failure.cause;
  };
  const upload = async (number: number, body: Uint8Array) => {
    const res = await store.request("PUT", `${url}?partNumber=${number}&${idParam}`, key, { body, signal });
    await res.body?.cancel().catch(() => {});
    const etag = res.headers.get("etag");
    if (!etag) {
      throw new StorageError(`${url}: part ${number} was accepted without an ETag`, {
        object: objectAt(store.url, key),
      });
    }
    etags[number - 1] = etag;
  };
  let count = 0;
  const send = async (body: Uint8Array) => {
    const number = ++count;
    while (running.size >= opts.concurrency) await Promise.race(running);
    check();
    const task: Promise<void> = upload(number, body)
      .catch((cause: unknown) => {
        failure ??= { cause };
      })
      .finally(() => running.delete(task));
    running.add(task);
  };
  try {
    let total = 0;
    let buffer = new Uint8Array(opts.partSize);
    let fill = 0;
    for await (const part of parts) {
      total += part.byteLength;
      for (let at = 0; at < part.byteLength; ) {
        const take = Math.min(opts.partSize - fill, part.byteLength - at);
        buffer.set(part.subarray(at, at + take), fill);
        fill += take;
        at += take;
        if (fill === opts.partSize) {
          await send(buffer);
          buffer = new Uint8Array(opts.partSize);
          fill = 0;
        }
      }
      check();
    }
    if (total !== byteLength) {
      throw new StorageError(
        `${url}: ${total} bytes arrived for an object declared as ${byteLength}; the upload was aborted and nothing was written.`,
        { object: objectAt(store.url, key) },
      );
    }
    if (fill > 0 || count === 0) await send(buffer.subarray(0, fill));
    while (running.size > 0) await Promise.all(running);
    check();
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
    await Promise.allSettled(running);
    // Best effort and deliberately without the caller's signal, which may be the reason we are here.
    await store
      .request("DELETE", `${url}?${idParam}`, key, { ok: [200, 204, 404] })
      .then((r) => r.body?.cancel())
      .catch(() => {});
    throw err;
  }
}
