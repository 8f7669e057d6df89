/**
 * S3 settings from what a user has after `aws configure`, looked up as the AWS CLI does (Node-only:
 * it reads files): the `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` (/ `AWS_SESSION_TOKEN`)
 * variables, else the profile named by `AWS_PROFILE` (default `default`) in the shared credentials
 * file (`AWS_SHARED_CREDENTIALS_FILE`, default `~/.aws/credentials`, `[name]` sections) and the
 * config file (`AWS_CONFIG_FILE`, default `~/.aws/config`, `[profile name]` sections, `[default]`).
 * Region from `AWS_REGION` / `AWS_DEFAULT_REGION`, else the profile's `region`; endpoint from
 * `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL`, else the profile's `endpoint_url`.
 */
import { readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { StorageError } from "./errors.js";
import type { S3Connection } from "./s3.js";

type Section = Record<string, string>;

/** An AWS INI file: `[section]` headers, `key = value` lines, `#` and `;` comment lines. */
export function parseAwsIni(text: string): Map<string, Section> {
  const sections = new Map<string, Section>();
  let current: Section | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[\s*([^\]]+?)\s*\]$/.exec(line);
    if (header) {
      const name = (header[1] as string).replace(/\s+/g, " ");
      current = sections.get(name) ?? {};
      sections.set(name, current);
      continue;
    }
    const eq = line.indexOf("=");
    // Nested values (an indented `s3 =` block) and lines outside a section are not settings we use.
    if (current === undefined || eq < 0 || /^\s/.test(raw)) continue;
    current[line.slice(0, eq).trim().toLowerCase()] = line.slice(eq + 1).trim();
  }
  return sections;
}

/**
 * The files parsed so far, by path, with the status they had: every `openStore` of an `s3://`
 * URL looks its settings up, and a job opens many stores, so a file is read again only once its
 * modification time or size changed (a `stat` per lookup instead of a read and a parse).
 */
const parsed = new Map<string, { mtimeMs: number; size: number; sections: Map<string, Section> }>();

/** A file's sections, or undefined when it does not exist; any other failure is an error. */
function readIni(path: string): Map<string, Section> | undefined {
  const fail = (cause: unknown) =>
    new StorageError(`cannot read the AWS file ${path}: ${(cause as Error).message}`, {
      object: path,
      cause,
    });
  let status: { mtimeMs: number; size: number };
  try {
    status = statSync(path);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code !== "ENOENT") throw fail(cause);
    parsed.delete(path);
    return undefined;
  }
  const known = parsed.get(path);
  if (known?.mtimeMs === status.mtimeMs && known.size === status.size) return known.sections;
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw fail(cause);
  }
  const sections = parseAwsIni(text);
  parsed.set(path, { mtimeMs: status.mtimeMs, size: status.size, sections });
  return sections;
}

/** Ways a profile can get credentials that this reader does not implement. */
const DELEGATED = [
  "role_arn",
  "sso_session",
  "sso_start_url",
  "credential_process",
  "web_identity_token_file",
];

/**
 * The S3 connection settings for `location` from the AWS sources in `env`. Throws a
 * `NoCredentials` {@link StorageError} naming every source it looked at when none holds a key pair,
 * and when `AWS_PROFILE` names a profile neither file has. With `credentials: false` (keys given
 * by the caller, or unsigned requests) only the region and endpoint are looked up.
 */
export function s3ConnectionFromAws(
  location: string,
  env: Record<string, string | undefined>,
  options: { credentials?: boolean } = {},
): S3Connection {
  const home = env.HOME || env.USERPROFILE || homedir();
  const expand = (p: string) => (p.startsWith("~/") ? join(home, p.slice(2)) : p);
  const credentialsFile = expand(env.AWS_SHARED_CREDENTIALS_FILE || join(home, ".aws", "credentials"));
  const configFile = expand(env.AWS_CONFIG_FILE || join(home, ".aws", "config"));
  const named = env.AWS_PROFILE || env.AWS_DEFAULT_PROFILE;
  const profile = named || "default";
  const credentials = readIni(credentialsFile);
  const config = readIni(configFile);
  const fromCredentials = credentials?.get(profile);
  const fromConfig =
    config?.get(profile === "default" ? "default" : `profile ${profile}`) ??
    config?.get(`profile ${profile}`);
  const settings = { ...fromConfig, ...fromCredentials };
  const out: S3Connection = {};
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION || settings.region;
  if (region) out.region = region;
  const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || settings.endpoint_url;
  if (endpoint) out.endpoint = endpoint;
  if (options.credentials === false) return out;
  if (env.AWS_ACCESS_KEY_ID || env.AWS_SECRET_ACCESS_KEY) {
    // The variables win over any profile, as in the AWS CLI; S3Store refuses half a pair.
    if (env.AWS_ACCESS_KEY_ID) out.accessKeyId = env.AWS_ACCESS_KEY_ID;
    if (env.AWS_SECRET_ACCESS_KEY) out.secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
    if (env.AWS_SESSION_TOKEN) out.sessionToken = env.AWS_SESSION_TOKEN;
    return out;
  }
  const where = (file: string, sections: Map<string, Section> | undefined, section: string) =>
    `${file} [${section}] (${sections === undefined ? "no such file" : sections.has(section) ? "no keys there" : "no such profile"})`;
  const looked = [
    "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (not set)",
    where(credentialsFile, credentials, profile),
    where(configFile, config, profile === "default" ? "default" : `profile ${profile}`),
  ];
  if (named && fromCredentials === undefined && fromConfig === undefined) {
    throw new StorageError(
      `no AWS profile ${JSON.stringify(profile)} (named by ${env.AWS_PROFILE ? "AWS_PROFILE" : "AWS_DEFAULT_PROFILE"}) for ${location}: looked at ${looked.slice(1).join(", ")}. Check the name, or run \`aws configure --profile ${profile}\`.`,
      { tag: "NoCredentials", object: location },
    );
  }
  if (settings.aws_access_key_id && settings.aws_secret_access_key) {
    out.accessKeyId = settings.aws_access_key_id;
    out.secretAccessKey = settings.aws_secret_access_key;
    if (settings.aws_session_token) out.sessionToken = settings.aws_session_token;
    return out;
  }
  const delegated = DELEGATED.filter((k) => settings[k] !== undefined);
  const hint = delegated.length
    ? ` Profile ${JSON.stringify(profile)} gets its keys through ${delegated.join(", ")}, which this reader does not do: export them first with \`eval "$(aws configure export-credentials --profile ${profile} --format env)"\`.`
    : " Run `aws configure` (or set AWS_PROFILE, or export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY).";
  throw new StorageError(
    `no AWS credentials for ${location}: looked at ${looked.join(", ")}.${hint} For a public bucket, read without signing (option signRequests: false).`,
    { tag: "NoCredentials", object: location },
  );
}
