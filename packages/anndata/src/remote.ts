/**
 * Inputs given as `s3://` or `http(s)://` URLs, read through a store the caller opens (the storage
 * layer: ranged reads, credentials, request counts): zarr stores (AnnData or a bare array) in
 * place, Matrix Market files copied to a temporary folder first (see remote-copy.ts). HDF5 inputs
 * need a local file (h5wasm reads a file from its own file system; in Node it has no lazily
 * fetched file), so they are refused with the command that copies them.
 */
import { parseLocation } from "@deltacells/storage";
import { AnndataError } from "./errors.js";
import type { InputFormat, RemoteStore } from "./types.js";
import type { ZarrTreeStore } from "./zarr-tree.js";

const METADATA = [".zarray", ".zgroup", "zarr.json"];

/** The scheme of a URL input (`s3`, `https`, ...), or undefined for a local path or `file://`. */
export function remoteScheme(location: string): string | undefined {
  const parsed = parseLocation(location);
  return parsed.kind === "url" && parsed.scheme !== "file" ? parsed.scheme : undefined;
}

/** The command that copies a remote input to a local path. */
function copyCommand(url: string, folder: boolean): string {
  const name = url.replace(/\/+$/, "").split("/").pop() || "input";
  if (url.startsWith("s3://"))
    return folder ? `aws s3 cp --recursive ${url} ./${name}` : `aws s3 cp ${url} ./${name}`;
  return folder ? `a recursive download of ${url} (HTTP lists no folder)` : `curl -fL -o ./${name} ${url}`;
}

/** Refusal of a remote input whose format is read from local files only. */
export function notLocal(url: string, what: string, folder = false): AnndataError {
  return new AnndataError(
    `${url}: ${what} is read from a local file only (zarr stores and Matrix Market files are read over the network), so copy it first: ${copyCommand(url, folder)}; then convert the copy.`,
    { tag: "NotLocal", object: url },
  );
}

/** Refuses a URL the readers cannot reach: an unknown scheme, or no store to read it through. */
export function checkRemote(url: string, scheme: string, openStore: unknown): void {
  if (scheme !== "s3" && scheme !== "http" && scheme !== "https") {
    throw new AnndataError(
      `${url}: inputs are local paths, file://, s3:// or http(s):// URLs, not ${scheme}://.`,
      { tag: "Unsupported", object: url },
    );
  }
  if (/\.(h5ad|h5|hdf5)$/i.test(url)) throw notLocal(url, "an HDF5 file (.h5ad, 10x .h5)");
  if (typeof openStore !== "function") {
    throw new AnndataError(
      `${url}: reading a zarr input over ${scheme}:// needs a store: pass openInput's openStore option (the deltacells command does).`,
      { tag: "Unsupported", object: url },
    );
  }
}

/** A storage-layer store as zarrita reads it; group members listed where the store can list. */
export class RemoteZarrStore implements ZarrTreeStore {
  constructor(readonly store: RemoteStore) {}

  get(key: `/${string}`): Promise<Uint8Array | undefined> {
    return this.store.get(key.slice(1));
  }

  /**
   * Whether an object exists, without downloading it where the store reads ranges: zero bytes
   * are asked for (a HEAD over HTTP and S3), so a 10x folder's matrix is fetched once, by the copy.
   */
  async has(key: `/${string}`): Promise<boolean> {
    const name = key.slice(1);
    const found = this.store.getRange
      ? this.store.getRange(name, { offset: 0, length: 0 })
      : this.store.get(name);
    return (await found) !== undefined;
  }

  async children(path: string): Promise<string[]> {
    if (!this.store.list) return [];
    const prefix = path.replace(/^\/+|\/+$/g, "");
    let keys: string[];
    try {
      keys = await this.store.list(prefix ? `${prefix}/` : "");
    } catch {
      return []; // HTTP cannot list: the members stay unknown, as over consolidated-less zarr
    }
    const names = new Set<string>();
    for (const key of keys) {
      const parts = key.slice(prefix ? prefix.length + 1 : 0).split("/");
      if (parts.length === 2 && METADATA.includes(parts[1] as string)) names.add(parts[0] as string);
    }
    return [...names].sort();
  }
}

/** The format of a remote zarr input, from its metadata objects; anything else is refused. */
export async function detectRemoteFormat(store: RemoteZarrStore, url: string): Promise<InputFormat> {
  const has = (key: `/${string}`) => store.has(key);
  const v3 = await store.get("/zarr.json");
  if (v3 !== undefined) {
    let nodeType: unknown;
    try {
      nodeType = (JSON.parse(new TextDecoder().decode(v3)) as { node_type?: unknown }).node_type;
    } catch (cause) {
      throw new AnndataError(`${url}/zarr.json is not JSON.`, { tag: "MalformedInput", object: url, cause });
    }
    if (nodeType === "array") return "zarr-array";
    if ((await has("/X/zarr.json")) || (await has("/obs/zarr.json"))) return "anndata-zarr";
  } else if (await has("/.zarray")) {
    return "zarr-array";
  } else if (await has("/.zgroup")) {
    // a pre-0.7 group's obs is a record array (`/obs/.zarray`)
    if (
      (await has("/X/.zarray")) ||
      (await has("/X/.zgroup")) ||
      (await has("/obs/.zgroup")) ||
      (await has("/obs/.zarray"))
    )
      return "anndata-zarr";
  }
  if ((await has("/matrix.mtx.gz")) || (await has("/matrix.mtx"))) return "10x-mtx";
  throw new AnndataError(
    `${url}: no AnnData zarr store, zarr array or 10x Matrix Market folder there (no zarr.json, .zgroup or .zarray with X or obs, no matrix.mtx[.gz]). HDF5 inputs must be local: copy them first (${copyCommand(url, false)}).`,
    { tag: "UnknownFormat", object: url },
  );
}
