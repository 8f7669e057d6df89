/**
 * A local output file written all or nothing: the exporters write a temporary file beside it,
 * renamed over `path` only when complete, so a failed export (a corrupt tile, a missing object, a
 * full disk) never replaces a good file with a partial one.
 */
import { randomBytes } from "node:crypto";
import { open, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { CliError } from "./errors.js";

/** The output file cannot be created where it was asked for. */
export class OutputFileError extends CliError {
  declare readonly _tag: "OutputNotWritable";
  /** The system error code (ENOENT, EACCES, EROFS, ...), when there was one; also `found`. */
  readonly code: string | undefined;
  /** `object` is the output path. */
  constructor(message: string, options: { object: string; code: string | undefined; cause?: unknown }) {
    super(message, {
      tag: "OutputNotWritable",
      object: options.object,
      found: options.code,
      cause: options.cause,
    });
    this.name = "OutputFileError";
    this.code = options.code;
  }
}

const WHY: Record<string, (dir: string) => string> = {
  ENOENT: (dir) => `the folder ${dir} does not exist; create it first or choose another path`,
  ENOTDIR: (dir) => `${dir} is not a folder`,
  EACCES: (dir) => `permission denied in ${dir}; choose a folder you can write to`,
  EPERM: (dir) => `permission denied in ${dir}; choose a folder you can write to`,
  EROFS: (dir) => `${dir} is on a read-only file system; choose another folder`,
  ENOSPC: () => "the disk is full",
};

/** The error for a failed `operation` on a file in `dir`, said in one line. */
function explain(path: string, dir: string, err: unknown): OutputFileError {
  const code = (err as { code?: string }).code;
  const why = (code && WHY[code]?.(dir)) ?? (err as Error).message;
  return new OutputFileError(`cannot write ${path}: ${why}`, { object: path, code, cause: err });
}

/**
 * Run `write(tmp)` to fill a temporary file beside `path`, then rename it to `path`; on any
 * failure the temporary file is removed and `path` is left as it was. The temporary file is
 * created before `write` runs, so a folder that is missing or read-only is reported before any
 * work is done.
 */
export async function writeFileAtomically(
  path: string,
  write: (tmp: string) => Promise<void>,
): Promise<void> {
  const dir = dirname(resolve(path));
  if ((await stat(path).catch(() => undefined))?.isDirectory())
    throw new OutputFileError(`cannot write ${path}: it is a folder; name a file`, {
      object: path,
      code: "EISDIR",
    });
  const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString("hex")}.partial`);
  try {
    await (await open(tmp, "wx")).close();
  } catch (err) {
    throw explain(path, dir, err);
  }
  try {
    await write(tmp);
    await rename(tmp, path).catch((err) => {
      throw explain(path, dir, err);
    });
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}
