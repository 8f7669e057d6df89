/**
 * S3Store.uploads follows ListMultipartUploads page by page (moto answers in one page, whatever
 * `max-uploads` says, so the paging is checked here against a stub that honours it).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { isStorageError, S3Store } from "@deltacells/storage";

interface Upload {
  key: string;
  id: string;
  initiated: string;
}

/** A fetch answering ListMultipartUploads over `uploads` in pages of `max-uploads`, and recording each request. */
function listingServer(uploads: Upload[], opts: { dropMarkers?: boolean } = {}) {
  const seen: URL[] = [];
  const fetch = async (input: string | Request) => {
    const url = new URL(typeof input === "string" ? input : input.url);
    seen.push(url);
    const q = url.searchParams;
    const prefix = q.get("prefix") ?? "";
    const max = Number(q.get("max-uploads") ?? 1000);
    const after = q.get("key-marker");
    const afterId = q.get("upload-id-marker") ?? "";
    const all = uploads
      .filter((u) => u.key.startsWith(prefix))
      .sort((a, b) => (a.key === b.key ? a.id.localeCompare(b.id) : a.key.localeCompare(b.key)));
    const rest =
      after === null ? all : all.filter((u) => u.key > after || (u.key === after && u.id > afterId));
    const page = rest.slice(0, max);
    const truncated = rest.length > max;
    const last = page[page.length - 1];
    const body = `<?xml version="1.0" encoding="UTF-8"?><ListMultipartUploadsResult><Bucket>bkt</Bucket><IsTruncated>${truncated}</IsTruncated>${
      truncated && !opts.dropMarkers
        ? `<NextKeyMarker>${last!.key}</NextKeyMarker><NextUploadIdMarker>${last!.id}</NextUploadIdMarker>`
        : ""
    }${page
      .map(
        (u) =>
          `<Upload><Key>${u.key}</Key><UploadId>${u.id}</UploadId><Initiated>${u.initiated}</Initiated></Upload>`,
      )
      .join("")}</ListMultipartUploadsResult>`;
    return new Response(body, { status: 200, headers: { "content-type": "application/xml" } });
  };
  return { fetch, seen };
}

const UPLOADS: Upload[] = [
  { key: "atlas/tiles/b.bin", id: "u2", initiated: "2026-01-01T00:00:03.000Z" },
  { key: "atlas/tiles/a.bin", id: "u1", initiated: "2026-01-01T00:00:02.000Z" },
  { key: "atlas/tiles/a.bin", id: "u0", initiated: "2026-01-01T00:00:05.000Z" },
  { key: "atlas/obs/c.bin", id: "u3", initiated: "2026-01-01T00:00:01.000Z" },
  { key: "atlas/var.parquet", id: "u4", initiated: "2026-01-01T00:00:04.000Z" },
  { key: "elsewhere/d.bin", id: "u5", initiated: "2026-01-01T00:00:00.000Z" },
];

test("uploads follows the key and upload-id markers over pages, keeps to the store's prefix, and answers the uploads oldest first with keys inside the store", async () => {
  const server = listingServer(UPLOADS);
  const s3 = new S3Store({
    endpoint: "http://s3.test",
    bucket: "bkt",
    prefix: "atlas",
    signRequests: false,
    fetch: server.fetch,
    listPageSize: 2,
  });
  const found = await s3.uploads();
  assert.deepEqual(
    found.map((u) => [u.key, u.uploadId, u.initiated.toISOString()]),
    [
      ["obs/c.bin", "u3", "2026-01-01T00:00:01.000Z"],
      ["tiles/a.bin", "u1", "2026-01-01T00:00:02.000Z"],
      ["tiles/b.bin", "u2", "2026-01-01T00:00:03.000Z"],
      ["var.parquet", "u4", "2026-01-01T00:00:04.000Z"],
      ["tiles/a.bin", "u0", "2026-01-01T00:00:05.000Z"],
    ],
  );
  assert.equal(server.seen.length, 3, "5 uploads in pages of 2 take 3 requests");
  assert.deepEqual(
    server.seen.map((u) => [u.searchParams.get("key-marker"), u.searchParams.get("upload-id-marker")]),
    [
      [null, null],
      ["atlas/tiles/a.bin", "u0"],
      ["atlas/tiles/b.bin", "u2"],
    ],
  );
  assert.ok(server.seen.every((u) => u.searchParams.get("prefix") === "atlas/"));
  assert.deepEqual(
    (await s3.uploads("tiles")).map((u) => u.uploadId),
    ["u1", "u2", "u0"],
  );
});

test("a truncated listing of uploads without its next markers is a storage error, not a short answer", async () => {
  const s3 = new S3Store({
    endpoint: "http://s3.test",
    bucket: "bkt",
    signRequests: false,
    fetch: listingServer(UPLOADS, { dropMarkers: true }).fetch,
    listPageSize: 2,
  });
  await assert.rejects(
    s3.uploads(),
    (err: unknown) => isStorageError(err) && /next markers/.test(String(err)),
  );
});
