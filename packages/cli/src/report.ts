/**
 * How the command shows an error: one line saying what went wrong, and at most one more saying
 * what to do, in the command line's words. Libraries give structured hints (a matrix path, an
 * option name); the flags are named here. The stack is shown only with `--debug`.
 */

/** A structured hint of the input readers (`InputHint` of @deltacells/anndata). */
type Hint =
  | { kind: "other-matrices"; matrices: string[] }
  | { kind: "choose-genome"; genomes: string[] }
  | { kind: "drop-option"; option: string }
  | { kind: "raise-timeout"; option: string; seconds: number };

/** The reader options whose flag has another name. */
const OPTION_FLAGS: Record<string, string> = { geneNames: "genes", cellNames: "barcodes" };

/** The flag that reads a matrix path of an AnnData input. */
function flagFor(matrix: string): string {
  return matrix.startsWith("layers/") ? `--layer ${matrix.slice("layers/".length)}` : "--raw";
}

/** The hint line for `err`, when it carries a hint this command line can name flags for. */
export function cliHint(err: unknown): string | undefined {
  const e = err as { _tag?: unknown; field?: unknown; hint?: Hint };
  // Errors of @deltacells/storage and @deltacells/core name their options; the flags are here.
  if (e._tag === "NoCredentials") return "for a public bucket, read without signing: --no-sign-request";
  // The loader's message offers `onUnreadableTile: "skip"`, which `stream` has no flag for.
  if (e._tag === "UnreadableTile")
    return "deltacells validate DATASET lists every damaged tile; re-fetch them or convert the input again";
  if (e._tag === "NotFound" && e.field === "has_obs")
    return "convert the input again without --no-obs to keep its cell table (AnnData obs, 10x barcodes; a Matrix Market file or a bare zarr array has none)";
  if (e._tag === "InvalidInput" && e.field === "obsm")
    return "choose the obsm entries with --obsm KEYS, or store none with --obsm none";
  const hint = e.hint;
  switch (hint?.kind) {
    case "other-matrices":
      return `try ${[...new Set(hint.matrices.map(flagFor))].join(" or ")}`;
    case "choose-genome":
      return `choose one with --genome NAME (${hint.genomes.join(", ")})`;
    case "drop-option":
      return `leave out --${OPTION_FLAGS[hint.option] ?? hint.option}`;
    case "raise-timeout":
      return `allow more time with --hdf5-timeout SECONDS (it was ${hint.seconds}; 0 waits for ever)`;
    default:
      return undefined;
  }
}

/** The tag shown in brackets: the error's `_tag`, or the system error code (ENOENT, EACCES, ...). */
export function tagOf(err: unknown): string | undefined {
  const e = err as { _tag?: unknown; code?: unknown };
  if (typeof e?._tag === "string") return e._tag;
  if (typeof e?.code === "string" && /^E[A-Z]+$/.test(e.code)) return e.code;
  return undefined;
}

/**
 * The message of `err` on one line. A whole HDF5 error stack (h5wasm's throwing handler) becomes
 * its innermost reason, and a message of several lines keeps its first.
 */
export async function oneLine(err: unknown): Promise<string> {
  const message = err instanceof Error ? err.message : String(err);
  if (message.includes("HDF5-DIAG")) {
    const { hdf5Reason } = await import("@deltacells/anndata/node");
    return `HDF5 failed: ${hdf5Reason(message)}`;
  }
  return message.split("\n")[0]!.trim();
}

/** The stack of `err` and of each of its causes, for `--debug`. */
export function stackOf(err: unknown): string {
  const out: string[] = [];
  let e: unknown = err;
  for (let depth = 0; e !== undefined && depth < 8; depth++) {
    out.push(
      depth ? `caused by: ${e instanceof Error ? e.stack : String(e)}` : String((e as Error)?.stack ?? e),
    );
    e = (e as { cause?: unknown })?.cause;
  }
  return out.join("\n");
}
