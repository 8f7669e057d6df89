/** The moto_server set-up shared by the CLI's S3 tests (not a test file itself). */
import assert from "node:assert/strict";
import { after, before } from "node:test";
import { S3Store } from "@deltacells/storage";
import { FolderStore } from "@deltacells/storage/node";
import { AwsClient } from "aws4fetch";
import { type RunningServer, startMoto } from "../../../test-utils/servers.js";
import { cliWithEnv, type Run } from "./cli-helpers.js";

const creds = { accessKeyId: "testing", secretAccessKey: "testing", region: "us-east-1" };

/**
 * Starts moto_server with an empty `bucket` before the calling file's tests and stops it after
 * them. Returns `deltacells ARGS...` run from the sources, in this process (cli-helpers'
 * `cliWithEnv`), with the credentials and endpoint of that server in its environment. Call it at
 * the top level of a test file.
 */
export function motoBucket(bucket: string): ((...args: string[]) => Promise<Run>) & {
  /** The AWS environment that reaches the server (for a child process or `openStore`). */
  env(): Record<string, string>;
  /** The same, with `env` over the moto settings (e.g. credentials blanked). */
  withEnv(env: Record<string, string>): (...args: string[]) => Promise<Run>;
  /** Let anyone read the keys under `prefix` without signing (a bucket policy, as for public data). */
  makePublic(prefix: string): Promise<void>;
  /** Copy a local folder to `prefix` in the bucket. */
  upload(folder: string, prefix: string): Promise<void>;
} {
  let moto: RunningServer | undefined;

  before(async () => {
    moto = await startMoto();
    const client = new AwsClient({ ...creds, service: "s3", retries: 0 });
    const res = await client.fetch(`${moto.url}/${bucket}`, { method: "PUT" });
    assert.equal(res.status, 200, await res.text());
  });

  after(async () => {
    await moto?.stop();
  });

  const env = () => {
    assert.ok(moto, "moto_server is not running: call the returned function inside a test");
    return {
      AWS_ACCESS_KEY_ID: creds.accessKeyId,
      AWS_SECRET_ACCESS_KEY: creds.secretAccessKey,
      AWS_REGION: creds.region,
      AWS_ENDPOINT_URL: moto.url,
    };
  };
  const withEnv =
    (extra: Record<string, string>) =>
    (...args: string[]) =>
      cliWithEnv({ ...env(), ...extra })(...args);
  const makePublic = async (prefix: string) => {
    assert.ok(moto, "moto_server is not running");
    const policy = {
      Version: "2012-10-17",
      Statement: [
        {
          Effect: "Allow",
          Principal: "*",
          Action: ["s3:GetObject"],
          Resource: [`arn:aws:s3:::${bucket}/${prefix}*`],
        },
      ],
    };
    const client = new AwsClient({ ...creds, service: "s3", retries: 0 });
    const res = await client.fetch(`${moto.url}/${bucket}?policy`, {
      method: "PUT",
      body: JSON.stringify(policy),
    });
    assert.ok(res.ok, await res.text());
  };
  const upload = async (folder: string, prefix: string) => {
    assert.ok(moto, "moto_server is not running");
    const from = new FolderStore(folder);
    const to = new S3Store({ ...creds, endpoint: moto.url, bucket, prefix });
    for (const key of await from.list()) await to.set(key, (await from.get(key)) as Uint8Array);
  };
  return Object.assign(withEnv({}), { env, withEnv, makePublic, upload });
}
