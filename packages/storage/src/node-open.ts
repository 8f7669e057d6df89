import { fileURLToPath } from "node:url";
import { s3ConnectionFromAws } from "./aws-config.js";
import { FolderStore, type FolderStoreOptions } from "./folder.js";
import { parseLocation } from "./location.js";
import { type OpenStoreOptions, openStore as openUrl } from "./open.js";
import { parseS3Url } from "./s3.js";
import type { Store } from "./types.js";

/**
 * Opens a store in Node: like the browser-safe `openStore`, plus local paths and `file://` URLs
 * (a {@link FolderStore}); for `s3://` URLs the AWS sources a user has after `aws configure` fill
 * whatever `opts.s3` does not set: the variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
 * `AWS_SESSION_TOKEN`, `AWS_REGION`/`AWS_DEFAULT_REGION`, `AWS_ENDPOINT_URL_S3`/`AWS_ENDPOINT_URL`),
 * then the `AWS_PROFILE` profile of `~/.aws/credentials` and `~/.aws/config` (or
 * `AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE`). No credentials anywhere is a `NoCredentials`
 * error naming the sources, unless `opts.s3.signRequests` is false (a public bucket).
 * `opts.folder` configures a {@link FolderStore} (its `blockingReads`, say).
 */
export function openStore(
  url: string,
  opts: OpenStoreOptions & { env?: Record<string, string | undefined>; folder?: FolderStoreOptions } = {},
): Store {
  // A drive letter (C:\data) is a path, not a scheme.
  const location = parseLocation(url);
  if (location.kind === "path") return new FolderStore(url, opts.folder);
  const { scheme } = location;
  if (scheme === "file") return new FolderStore(fileURLToPath(url), opts.folder);
  const { env = process.env, folder: _folder, ...rest } = opts;
  if (scheme === "s3") {
    parseS3Url(url); // a malformed URL is refused as such before any credentials are looked for
    const given = rest.s3 ?? {};
    // Explicit keys, or unsigned requests, need no lookup of credentials; the region and
    // endpoint still come from the environment and the profile when not given.
    const credentials = !(given.signRequests === false || given.accessKeyId !== undefined);
    return openUrl(url, { ...rest, s3: { ...s3ConnectionFromAws(url, env, { credentials }), ...given } });
  }
  return openUrl(url, rest);
}
