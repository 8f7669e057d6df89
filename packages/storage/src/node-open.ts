import { fileURLToPath } from "node:url";
import { FolderStore } from "./folder.js";
import { type OpenStoreOptions, openStore as openUrl } from "./open.js";
import { s3OptionsFromEnv } from "./s3.js";
import type { Store } from "./types.js";

/**
 * Opens a store in Node: like the browser-safe `openStore`, plus local paths and `file://` URLs
 * (a {@link FolderStore}); for `s3://` URLs the AWS environment variables (`AWS_ACCESS_KEY_ID`,
 * `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`/`AWS_DEFAULT_REGION`,
 * `AWS_ENDPOINT_URL_S3`/`AWS_ENDPOINT_URL`) fill whatever `opts.s3` does not set.
 */
export function openStore(
  url: string,
  opts: OpenStoreOptions & { env?: Record<string, string | undefined> } = {},
): Store {
  // A drive letter (C:\data) is a path, not a scheme.
  const scheme = /^([a-z][a-z0-9+.-]+):/i.exec(url)?.[1]?.toLowerCase();
  if (scheme === undefined) return new FolderStore(url);
  if (scheme === "file") return new FolderStore(fileURLToPath(url));
  const { env = process.env, ...rest } = opts;
  if (scheme === "s3") return openUrl(url, { ...rest, s3: { ...s3OptionsFromEnv(env), ...rest.s3 } });
  return openUrl(url, rest);
}
