/** Detecting an input's format from its path and content, and opening it. Node-only. */

import { open as openFile, readdir, readFile, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { constants, gunzipSync } from "node:zlib";
import { parseLocation } from "@deltacells/storage";
import { openAnnData } from "./anndata.js";
import { AnndataError } from "./errors.js";
import { LocalZarrStore } from "./folder-store.js";
import { openHdf5 } from "./hdf5-thread.js";
import { openMtx, openTenxMtx } from "./mtx.js";
import { checkRemote, detectRemoteFormat, notLocal, RemoteZarrStore, remoteScheme } from "./remote.js";
import { copyToTemp, removingOnClose, TENX_MTX_FILES } from "./remote-copy.js";
import { openTenxH5 } from "./tenx-h5.js";
import type { InputFormat, MatrixSource, OpenInputOptions } from "./types.js";
import { openZarrArray } from "./zarr-array.js";
import { openZarrTree } from "./zarr-tree.js";

const FORMATS: InputFormat[] = ["h5ad", "anndata-zarr", "10x-h5", "10x-mtx", "mtx", "zarr-array"];
const HDF5_MAGIC = [0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a];

/**
 * Opens a count matrix, detecting its format from the path and its content:
 * - a file starting with the HDF5 signature: `10x-h5` when it has a top-level `matrix` group or
 *   Cell Ranger v2 genome groups (with `barcodes`/`genes`), `h5ad` otherwise;
 * - a folder with `.zgroup`/`zarr.json` and an `obs` or `X` entry: `anndata-zarr` (also a pre-0.7
 *   group, whose obs/var are record arrays), or `zarr-array` when it is a plain array (`.zarray`);
 * - a folder with `matrix.mtx[.gz]`: `10x-mtx`;
 * - a file starting with `%%MatrixMarket` (optionally gzipped): `mtx`.
 * `opts.format` skips detection. `path` may be a `file://` URL; an `s3://` or `http(s)://` URL is
 * read through `opts.openStore` when it is a zarr store, and refused (with the command that copies
 * it) when it is an HDF5 or Matrix Market input.
 */
export async function openInput(location: string, opts: OpenInputOptions = {}): Promise<MatrixSource> {
  const scheme = remoteScheme(location);
  let remote: RemoteZarrStore | undefined;
  if (scheme !== undefined) {
    checkRemote(location, scheme, opts.openStore);
    const open = opts.openStore as NonNullable<OpenInputOptions["openStore"]>;
    if (/\.mtx(\.gz)?$/i.test(location) && (opts.format === undefined || opts.format === "mtx")) {
      // One object: copied through a store opened on its folder.
      const cut = location.lastIndexOf("/");
      const name = location.slice(cut + 1);
      const dir = await copyToTemp(open(location.slice(0, cut)), location, [[name]]);
      return removingOnClose(await openMtx(join(dir, name), opts.transpose ?? false, mtxNames(opts)), dir);
    }
    remote = new RemoteZarrStore(open(location));
  }
  const parsed = parseLocation(location);
  const path = parsed.kind === "url" && parsed.scheme === "file" ? fileURLToPath(location) : location;
  const format =
    opts.format ?? (remote ? await detectRemoteFormat(remote, location) : await detectFormat(path));
  if (remote && format === "10x-mtx" && opts.layer === undefined && !opts.raw && !opts.transpose) {
    const dir = await copyToTemp(remote.store, location, TENX_MTX_FILES);
    return removingOnClose(await openTenxMtx(dir), dir);
  }
  if (remote && format !== "anndata-zarr" && format !== "zarr-array" && format !== "10x-mtx")
    throw notLocal(location, `a ${format} input`);
  if (!FORMATS.includes(format)) {
    throw new AnndataError(
      `${path}: unknown input format ${JSON.stringify(format)}; expected one of ${FORMATS.join(", ")}.`,
      { tag: "UnknownFormat", object: path },
    );
  }
  if (
    (opts.layer !== undefined || opts.raw) &&
    format !== "h5ad" &&
    format !== "anndata-zarr" &&
    format !== "zarr-array"
  ) {
    throw new AnndataError(
      `${path}: a ${format} input has no layers or raw matrix; the ${opts.raw ? "raw" : "layer"} option applies to AnnData inputs only.`,
      {
        tag: "MissingMatrix",
        object: path,
        hint: { kind: "drop-option", option: opts.raw ? "raw" : "layer" },
      },
    );
  }
  if (opts.genome !== undefined && format !== "10x-h5") {
    throw new AnndataError(
      `${path}: the genome option applies to Cell Ranger HDF5 files only, not to ${format}: this input has one matrix.`,
      { tag: "Unsupported", object: path, hint: { kind: "drop-option", option: "genome" } },
    );
  }
  if (opts.transpose && format !== "mtx") {
    throw new AnndataError(
      `${path}: transpose applies to plain Matrix Market files only, not to ${format}.`,
      {
        tag: "Unsupported",
        object: path,
        hint: { kind: "drop-option", option: "transpose" },
      },
    );
  }
  for (const [option, axis] of [
    ["geneNames", "genes"],
    ["cellNames", "cells"],
  ] as const) {
    if (opts[option] !== undefined && format !== "mtx") {
      throw new AnndataError(
        `${path}: names files (${option}) name the ${axis} of a plain Matrix Market file; a ${format} input names its own.`,
        { tag: "Unsupported", object: path, hint: { kind: "drop-option", option } },
      );
    }
  }
  switch (format) {
    case "h5ad": {
      const tree = await openHdf5(path, { timeoutSeconds: opts.hdf5Timeout });
      try {
        return await openAnnData(tree, format, opts);
      } catch (err) {
        await tree.close();
        throw err;
      }
    }
    case "anndata-zarr":
      return openAnnData(openZarrTree(path, remote ?? new LocalZarrStore(path)), format, opts);
    case "zarr-array":
      return openZarrArray(openZarrTree(path, remote ?? new LocalZarrStore(path)), opts);
    case "10x-h5": {
      const tree = await openHdf5(path, { timeoutSeconds: opts.hdf5Timeout });
      try {
        return await openTenxH5(tree, opts.genome);
      } catch (err) {
        await tree.close();
        throw err;
      }
    }
    case "10x-mtx":
      return openTenxMtx(path);
    case "mtx":
      return openMtx(path, opts.transpose ?? false, mtxNames(opts));
  }
}

/** The names files of a plain Matrix Market file. */
function mtxNames(opts: OpenInputOptions): { genes?: string; cells?: string } {
  return { genes: opts.geneNames, cells: opts.cellNames };
}

async function head(path: string, n: number): Promise<Uint8Array> {
  const fh = await openFile(path, "r");
  try {
    const buf = new Uint8Array(n);
    const { bytesRead } = await fh.read(buf, 0, n, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** The format of the input at `path` (see {@link openInput}). */
export async function detectFormat(path: string): Promise<InputFormat> {
  let st: Awaited<ReturnType<typeof stat>>;
  try {
    st = await stat(path);
  } catch (cause) {
    throw new AnndataError(`${path}: no such file or folder.`, { tag: "UnknownFormat", object: path, cause });
  }
  if (st.isDirectory()) {
    const names = new Set(await readdir(path));
    if (names.has(".zarray")) return "zarr-array";
    if (names.has("zarr.json") && (await zarrJsonNodeType(join(path, "zarr.json"))) === "array")
      return "zarr-array";
    if ((names.has(".zgroup") || names.has("zarr.json")) && (names.has("X") || names.has("obs")))
      return "anndata-zarr";
    if (names.has("matrix.mtx") || names.has("matrix.mtx.gz")) return "10x-mtx";
    throw new AnndataError(
      `${path}: a folder that is neither a zarr store (.zgroup, zarr.json, .zarray) nor a 10x Matrix Market folder (matrix.mtx[.gz]).`,
      { tag: "UnknownFormat", object: path },
    );
  }
  const bytes = await head(path, 512);
  if (HDF5_MAGIC.every((b, i) => bytes[i] === b)) return (await isTenxH5(path)) ? "10x-h5" : "h5ad";
  let text = bytes;
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      // the first 64 KB of the compressed stream are plenty for the banner; the sync flush
      // tolerates the truncation
      text = gunzipSync(await head(path, 65536), { finishFlush: constants.Z_SYNC_FLUSH }).subarray(0, 64);
    } catch {
      text = new Uint8Array(0);
    }
  }
  if (new TextDecoder().decode(text.subarray(0, 14)).toLowerCase() === "%%matrixmarket") return "mtx";
  throw new AnndataError(
    `${path}: ${basename(path)} is not an HDF5 file (.h5ad, 10x .h5), a Matrix Market file, or a zarr/10x folder.`,
    { tag: "UnknownFormat", object: path },
  );
}

async function zarrJsonNodeType(path: string): Promise<unknown> {
  try {
    return (JSON.parse(await readFile(path, "utf8")) as { node_type?: unknown }).node_type;
  } catch {
    return undefined;
  }
}

async function isTenxH5(path: string): Promise<boolean> {
  const tree = await openHdf5(path);
  try {
    const root = await tree.get("");
    const keys = root?.kind === "group" ? await root.keys() : [];
    if (keys.includes("X") || keys.includes("obs")) return false;
    if (keys.includes("matrix")) return true;
    for (const k of keys) {
      const g = await tree.get(k);
      if (g?.kind === "group") {
        const sub = await g.keys();
        if (sub.includes("barcodes") && (sub.includes("genes") || sub.includes("features"))) return true;
      }
    }
    return false;
  } finally {
    await tree.close();
  }
}
