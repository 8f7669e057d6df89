/**
 * What killed writers leave in a dataset or store, for `validate` to warn about: temporary files
 * of half-written objects (`*.dctmp-*` in a folder, unfinished multipart uploads on S3: no listing
 * shows either), staging prefixes of conversions that never finished moving
 * (`.deltacells-staging-*`), and a writer lock. None makes the data
 * wrong (readers never look at them), so they are warnings, not problems.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { APPEND_STAGING, ATLAS_PREFIX } from "@deltacells/core";
import { LOCK_KEY, STAGING_PREFIX, s3Under, tempFiles } from "@deltacells/core/node";
import type { Store } from "@deltacells/storage";
import { localPath } from "@deltacells/storage/node";

/** One leftover: the object (path or URL) and what to do about it. */
export interface Leftover {
  object: string;
  message: string;
}

const TEMP =
  "a temporary file of a write that never finished (its writer was killed); the next conversion into this place removes it, or delete it";
const UPLOAD = (bucket: string, key: string, id: string) =>
  `an unfinished multipart upload (its writer was killed): S3 bills its parts until it is aborted; the next convert --overwrite, append or finalize here aborts it, or run aws s3api abort-multipart-upload --bucket ${bucket} --key ${key} --upload-id ${id}`;
const STAGING =
  "the staging prefix of a conversion that never finished (killed); convert again with --overwrite to remove it, or delete it";
const APPEND =
  "the staging area of an append that never finished (killed): the dataset is as it was, or, if it was moving into place, the next append of the same inputs completes it; append again, or delete it";
const BUILD =
  "the records of an atlas build (plan, scans, tasks) that was not finalized: run deltacells finalize, or delete it";
const LOCK =
  "a writer lock: a convert, append or finalize is writing here now, or one was killed; if none is running, delete it (or run that command again with --break-lock)";

/** The leftovers at `location` (a local folder, or a store that can list; HTTP cannot, and has none reported). */
export async function findLeftovers(location: string, store: Store): Promise<Leftover[]> {
  const root = localPath(location);
  const base = location.replace(/\/+$/, "");
  if (root !== undefined) {
    const out: Leftover[] = (await tempFiles(root)).map((object) => ({ object, message: TEMP }));
    for (const e of await readdir(root, { withFileTypes: true }).catch(() => [])) {
      if (e.isDirectory() && e.name.startsWith(STAGING_PREFIX))
        out.push({ object: join(root, e.name), message: STAGING });
      if (e.isDirectory() && e.name.startsWith(APPEND_STAGING))
        out.push({ object: join(root, e.name), message: APPEND });
      if (e.isDirectory() && `${e.name}/` === ATLAS_PREFIX)
        out.push({ object: join(root, e.name), message: BUILD });
      if (e.name === LOCK_KEY) out.push({ object: join(root, e.name), message: LOCK });
    }
    return out;
  }
  const keys = await store.list().catch(() => undefined);
  if (keys === undefined) return [];
  const out: Leftover[] = [];
  const prefixes = new Set(keys.filter((k) => k.startsWith(STAGING_PREFIX)).map((k) => k.split("/")[0]!));
  for (const p of prefixes) out.push({ object: `${base}/${p}/`, message: STAGING });
  const appends = new Set(keys.filter((k) => k.startsWith(APPEND_STAGING)).map((k) => k.split("/")[0]!));
  for (const p of appends) out.push({ object: `${base}/${p}/`, message: APPEND });
  if (keys.some((k) => k.startsWith(ATLAS_PREFIX)))
    out.push({ object: `${base}/${ATLAS_PREFIX}`, message: BUILD });
  if (keys.includes(LOCK_KEY)) out.push({ object: `${base}/${LOCK_KEY}`, message: LOCK });
  const s3 = s3Under(store);
  for (const u of (await s3?.uploads().catch(() => undefined)) ?? []) {
    out.push({ object: `${base}/${u.key}`, message: UPLOAD(s3!.bucket, s3!.objectKey(u.key), u.uploadId) });
  }
  return out;
}
