import { AwsV4Signer } from "aws4fetch";
import { syncSigningCrypto } from "#sigv4";
import type { SyncSigningCrypto } from "./sigv4-crypto.js";

/** What signs an S3 request: the credentials, and a cache of the day's signing keys. */
export interface SigV4Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string | undefined;
  region: string;
}

/**
 * aws4fetch's signer (its canonical request: path, query and header encoding, which headers are
 * signed) with the two hashes of a signature computed synchronously. The day's signing key
 * (four HMACs) is cached per secret, date, region and service, as aws4fetch caches it.
 */
class SyncSigner extends AwsV4Signer {
  constructor(
    init: ConstructorParameters<typeof AwsV4Signer>[0],
    private readonly hashes: SyncSigningCrypto,
    private readonly keys: Map<string, Uint8Array>,
  ) {
    super(init);
  }

  override async signature(): Promise<string> {
    const date = this.datetime.slice(0, 8);
    const id = [this.secretAccessKey, date, this.region, this.service].join();
    let key = this.keys.get(id);
    if (key === undefined) {
      const h = this.hashes.hmac;
      key = h(h(h(h(`AWS4${this.secretAccessKey}`, date), this.region), this.service), "aws4_request");
      this.keys.set(id, key);
    }
    const scope = `AWS4-HMAC-SHA256\n${this.datetime}\n${this.credentialString}\n`;
    const toSign = scope + this.hashes.sha256Hex(await this.canonicalString());
    return hex(this.hashes.hmac(key, toSign));
  }
}

function hex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += (b < 16 ? "0" : "") + b.toString(16);
  return out;
}

/**
 * Signs S3 requests with SigV4 (`X-Amz-Content-Sha256: UNSIGNED-PAYLOAD`, as aws4fetch's
 * `AwsClient` does for s3): the headers to send, Authorization included. In Node the hashes are
 * node:crypto's, synchronous (`#sigv4`); elsewhere aws4fetch's WebCrypto. Either way no `Request`
 * is built (`AwsClient.sign` builds one, which fetch then builds again).
 */
export class S3Signer {
  private readonly keys = new Map<string, Uint8Array>();
  private readonly cache = new Map<string, ArrayBuffer>();

  /** `hashes`: null for aws4fetch's WebCrypto ones (the browsers' path, here for tests). */
  constructor(
    private readonly credentials: SigV4Credentials,
    private readonly hashes: SyncSigningCrypto | null = syncSigningCrypto ?? null,
  ) {}

  /**
   * A request's URL as signed (parsed and serialised by `URL`, as `AwsClient.sign` gives it) and
   * its headers, Authorization included; `datetime` (`YYYYMMDDTHHMMSSZ`) only for tests.
   */
  async sign(
    method: string,
    url: string,
    headers: Record<string, string>,
    datetime?: string,
  ): Promise<{ url: string; headers: Headers }> {
    const init = {
      ...this.credentials,
      url,
      method,
      headers,
      service: "s3",
      cache: this.cache,
      ...(datetime === undefined ? {} : { datetime }),
    };
    const signer =
      this.hashes === null ? new AwsV4Signer(init) : new SyncSigner(init, this.hashes, this.keys);
    const signed = await signer.sign();
    return { url: signed.url.toString(), headers: signed.headers };
  }
}
