/**
 * The sporadik companion of a dataset: a sporadik store inside the dataset's prefix holding the
 * same cells x genes counts with genes in the source's order, named by the manifest's
 * `metadata.sporadik` (a path relative to the dataset). It answers "one gene across all cells" in
 * two reads, which the tiles (built to stream whole cells) cannot. This package never reads it
 * (it does not depend on @deltacells/sporadik): these say where it is, and record it.
 */
import type { Store } from "@deltacells/storage";
import { DeltacellsError } from "../errors.js";
import { type DatasetManifest, encodeManifest, MANIFEST_KEY, parseManifest } from "./manifest.js";

/** Where `deltacells convert --sporadik` writes the companion, and records it: `sporadik/`. */
export const COMPANION_PATH = "sporadik";

/** A relative path of plain names, none starting with a dot: it cannot leave the dataset's prefix. */
const INSIDE = /^[A-Za-z0-9_-][A-Za-z0-9._-]*(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/;

/**
 * The companion a manifest names (`metadata.sporadik`), relative to the dataset at `url`, or
 * undefined when it names none. A name that could leave the dataset's prefix (`..`, an absolute
 * path, a URL) is refused with an `InconsistentManifest` error.
 */
export function companionOf(ds: { url: string; manifest: DatasetManifest }): string | undefined {
  const rel = ds.manifest.metadata.sporadik;
  if (rel === undefined) return undefined;
  if (typeof rel !== "string" || !INSIDE.test(rel)) {
    throw new DeltacellsError(
      `${ds.url}/manifest.json: metadata.sporadik must be a relative path inside the dataset (e.g. "sporadik"), got ${JSON.stringify(rel)}`,
      {
        tag: "InconsistentManifest",
        object: `${ds.url}/manifest.json`,
        field: "metadata.sporadik",
        expected: "a relative path inside the dataset",
        found: rel,
      },
    );
  }
  return rel;
}

/**
 * Names the companion at `rel` (default {@link COMPANION_PATH}) in the manifest of the dataset in
 * `store`, rewritten whole in the writer's serialisation. Call it once the companion is complete:
 * a reader then finds the dataset without a companion, or with a complete one. A manifest gone
 * meanwhile is a `ConcurrentChange` error (another writer at the same place).
 */
export async function nameCompanion(store: Store, rel: string = COMPANION_PATH): Promise<void> {
  const object = `${store.url}/${MANIFEST_KEY}`;
  if (!INSIDE.test(rel)) {
    throw new DeltacellsError(
      `the companion's path must be relative and inside the dataset (e.g. "sporadik"), got ${JSON.stringify(rel)}`,
      { tag: "InvalidInput", object, field: "metadata.sporadik", expected: "a relative path", found: rel },
    );
  }
  const bytes = await store.get(MANIFEST_KEY);
  if (bytes === undefined)
    throw new DeltacellsError(`${object} vanished while the companion was written`, {
      tag: "ConcurrentChange",
      object,
    });
  const manifest = parseManifest(bytes, object);
  manifest.metadata = { ...manifest.metadata, sporadik: rel };
  await store.set(MANIFEST_KEY, encodeManifest(manifest));
}
