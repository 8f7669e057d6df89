/**
 * What a location string names: one rule for every package and the command, so that a location
 * is never a URL to one reader and a path to another. A scheme of two or more characters before
 * a colon makes a URL (`s3://bucket/x`, `https://host/x`, `file:///data/x`, `memory://name`);
 * anything else is a local path, a Windows drive letter (`C:\data`) included.
 */

/** A location, parsed by {@link parseLocation}. */
export type Location =
  /** A local path, as given (relative or absolute). */
  | { kind: "path"; path: string }
  /** A URL: its scheme in lower case (`s3`, `https`, `file`, ...) and the URL as given. */
  | { kind: "url"; scheme: string; url: string };

const SCHEME = /^([a-z][a-z0-9+.-]+):/i;

/** Whether `location` is a URL or a local path, and its scheme (see the module). */
export function parseLocation(location: string): Location {
  const scheme = SCHEME.exec(location)?.[1];
  return scheme === undefined
    ? { kind: "path", path: location }
    : { kind: "url", scheme: scheme.toLowerCase(), url: location };
}

/**
 * Whether `location` is read over a network (a URL other than `file://`): what local-only readers
 * (HDF5, Matrix Market) refuse and what a stat of the file system cannot answer.
 */
export function isRemoteLocation(location: string): boolean {
  const parsed = parseLocation(location);
  return parsed.kind === "url" && parsed.scheme !== "file";
}

/**
 * The location `rel` (a relative path of `/`-separated names) inside `location`, a path or a URL:
 * `s3://bucket/ds/` and `sporadik` make `s3://bucket/ds/sporadik`, `data/ds` makes `data/ds/sporadik`.
 */
export function joinLocation(location: string, rel: string): string {
  return `${location.replace(/\/+$/, "")}/${rel.replace(/^\/+/, "")}`;
}
