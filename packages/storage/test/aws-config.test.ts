/**
 * S3 credentials looked up as the AWS CLI does, from a temporary HOME and credential files: which
 * source wins, what a request is signed with (seen at a fake fetch), and the refusals.
 */
import assert from "node:assert/strict";
import { mkdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { isStorageError, S3Store } from "@deltacells/storage";
import { openStore } from "@deltacells/storage/node";
import { tempDir } from "../../../test-utils/temp.js";

/** A HOME with `~/.aws/credentials` and `~/.aws/config` holding `credentials` and `config`. */
function home(credentials?: string, config?: string): string {
  const dir = tempDir("dc-aws-");
  mkdirSync(join(dir, ".aws"));
  if (credentials !== undefined) writeFileSync(join(dir, ".aws", "credentials"), credentials);
  if (config !== undefined) writeFileSync(join(dir, ".aws", "config"), config);
  return dir;
}

/** The headers of the one request a `get` sends, through a fetch that answers 404. */
async function signedWith(env: Record<string, string>, s3: { signRequests?: boolean } = {}) {
  let seen: Headers | undefined;
  let url = "";
  const store = openStore("s3://bucket/prefix", {
    env,
    s3,
    fetch: async (input, init) => {
      url = String(input);
      seen = new Headers(init?.headers);
      return new Response(null, { status: 404 });
    },
  });
  await store.get("k");
  return { authorization: seen?.get("authorization") ?? null, token: seen?.get("x-amz-security-token"), url };
}

const CREDENTIALS = `# made by aws configure
[default]
aws_access_key_id = AKIADEFAULT
aws_secret_access_key = secret-default

[work]
aws_access_key_id=AKIAWORK
aws_secret_access_key=secret-work
aws_session_token = token-work
`;
const CONFIG = `[default]
region = eu-west-3

[profile work]
region = ap-south-1
s3 =
  max_concurrent_requests = 4
`;

test("~/.aws/credentials [default] signs, with the region of ~/.aws/config [default]", async () => {
  const { authorization, url } = await signedWith({ HOME: home(CREDENTIALS, CONFIG) });
  assert.match(authorization ?? "", /Credential=AKIADEFAULT\/\d{8}\/eu-west-3\/s3\/aws4_request/);
  assert.match(url, /^https:\/\/bucket\.s3\.eu-west-3\.amazonaws\.com\/prefix\/k$/);
});

test("AWS_PROFILE picks [name] in credentials and [profile name] in config, session token included", async () => {
  const { authorization, token } = await signedWith({ HOME: home(CREDENTIALS, CONFIG), AWS_PROFILE: "work" });
  assert.match(authorization ?? "", /Credential=AKIAWORK\/\d{8}\/ap-south-1\/s3\/aws4_request/);
  assert.equal(token, "token-work");
});

test("AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE replace the files in ~/.aws; AWS_REGION wins over the file", async () => {
  const elsewhere = home(); // an empty ~/.aws
  const files = home(CREDENTIALS, CONFIG);
  const { authorization } = await signedWith({
    HOME: elsewhere,
    AWS_SHARED_CREDENTIALS_FILE: join(files, ".aws", "credentials"),
    AWS_CONFIG_FILE: join(files, ".aws", "config"),
    AWS_REGION: "us-west-2",
  });
  assert.match(authorization ?? "", /Credential=AKIADEFAULT\/\d{8}\/us-west-2\//);
});

test("keys in the config file's profile are used when the credentials file has none", async () => {
  const config =
    "[profile lab]\naws_access_key_id = AKIALAB\naws_secret_access_key = s\nregion = eu-north-1\n";
  const { authorization } = await signedWith({ HOME: home(undefined, config), AWS_PROFILE: "lab" });
  assert.match(authorization ?? "", /Credential=AKIALAB\/\d{8}\/eu-north-1\//);
});

test("the key variables win over any profile, as in the AWS CLI", async () => {
  const { authorization, token } = await signedWith({
    HOME: home(CREDENTIALS, CONFIG),
    AWS_PROFILE: "work",
    AWS_ACCESS_KEY_ID: "AKIAENV",
    AWS_SECRET_ACCESS_KEY: "secret-env",
    AWS_SESSION_TOKEN: "token-env",
  });
  assert.match(authorization ?? "", /Credential=AKIAENV\/\d{8}\/ap-south-1\//);
  assert.equal(token, "token-env");
});

test("no credentials anywhere is refused, naming every source looked at and the way to read unsigned", () => {
  const dir = home();
  assert.throws(
    () => openStore("s3://bucket/prefix", { env: { HOME: dir } }),
    (e: unknown) => {
      assert.ok(isStorageError(e, "NoCredentials"));
      const m = (e as Error).message;
      assert.match(m, /no AWS credentials for s3:\/\/bucket\/prefix/);
      assert.match(m, /AWS_ACCESS_KEY_ID \/ AWS_SECRET_ACCESS_KEY \(not set\)/);
      assert.ok(m.includes(`${join(dir, ".aws", "credentials")} [default] (no such file)`), m);
      assert.ok(m.includes(`${join(dir, ".aws", "config")} [default] (no such file)`), m);
      assert.match(m, /aws configure/);
      assert.match(m, /read without signing \(option signRequests: false\)/);
      assert.doesNotMatch(m, /--/, "a library names its options, not a command line's flags");
      return true;
    },
  );
});

test("an AWS_PROFILE neither file has is refused by name", () => {
  assert.throws(
    () => openStore("s3://b/p", { env: { HOME: home(CREDENTIALS, CONFIG), AWS_PROFILE: "nope" } }),
    {
      _tag: "NoCredentials",
      message: /no AWS profile "nope" \(named by AWS_PROFILE\)/,
    },
  );
});

test("a profile that gets its keys through SSO or a role is refused with the export command", () => {
  const config = "[profile sso]\nsso_session = corp\nregion = us-east-1\n";
  assert.throws(() => openStore("s3://b/p", { env: { HOME: home(undefined, config), AWS_PROFILE: "sso" } }), {
    _tag: "NoCredentials",
    message: /through sso_session.*aws configure export-credentials --profile sso --format env/,
  });
});

test("signRequests: false sends requests unsigned, without looking for credentials (the profile's region kept)", async () => {
  const { authorization, url } = await signedWith(
    { HOME: home(CREDENTIALS, CONFIG) },
    { signRequests: false },
  );
  assert.equal(authorization, null);
  assert.match(url, /^https:\/\/bucket\.s3\.eu-west-3\.amazonaws\.com\//);
  const empty = await signedWith({ HOME: home() }, { signRequests: false });
  assert.equal(empty.authorization, null);
});

test("the browser-safe S3Store refuses to open without credentials unless told to send unsigned", () => {
  assert.throws(() => new S3Store({ bucket: "b" }), {
    _tag: "NoCredentials",
    message: /no credentials.*signRequests: false/,
  });
  assert.ok(new S3Store({ bucket: "b", signRequests: false }) instanceof S3Store);
});

test("the AWS files are read once per process while unchanged, and again once changed", async () => {
  const dir = home();
  const file = join(dir, ".aws", "credentials");
  const keys = (id: string) => `[default]\naws_access_key_id = ${id}\naws_secret_access_key = s\n`;
  const env = { HOME: dir };
  // Fixed times: the test does not depend on the clock or on the file system's time resolution.
  const write = (id: string, mtime: number) => {
    writeFileSync(file, keys(id));
    utimesSync(file, mtime, mtime);
  };
  try {
    write("AKIAFIRST", 1_700_000_000);
    assert.match((await signedWith(env)).authorization ?? "", /Credential=AKIAFIRST\//);
    // New bytes of the same size under the same time: the parsed file is used, not read again.
    write("AKIALATER", 1_700_000_000);
    assert.match((await signedWith(env)).authorization ?? "", /Credential=AKIAFIRST\//);
    // Touched (as any editor or `aws configure` does): read again.
    write("AKIALATER", 1_700_000_060);
    assert.match((await signedWith(env)).authorization ?? "", /Credential=AKIALATER\//);
    // Removed: no stale keys from the cache.
    rmSync(file);
    assert.throws(
      () => openStore("s3://bucket/prefix", { env }),
      (e: unknown) => isStorageError(e, "NoCredentials"),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
