"""SigV4 oracle for the storage tests: recomputes, with botocore, the signature of requests the
TypeScript S3 store sent, so the signer is checked by an independent implementation (moto_server
accepts any signature).

stdin: JSON list of {"method", "url", "headers": {name: value}, "accessKeyId", "secretAccessKey",
"region"}; "headers" are exactly the signed headers (incl. x-amz-date, x-amz-content-sha256).
stdout: JSON list of the botocore "Authorization" header values, in order.
"""

import json
import sys

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


class FixedPayloadAuth(S3SigV4Auth):
    # Use the payload hash the client declared (UNSIGNED-PAYLOAD) instead of botocore's choice.
    def payload(self, request):
        return request.headers["X-Amz-Content-SHA256"]


def authorization(req):
    creds = Credentials(req["accessKeyId"], req["secretAccessKey"], req.get("sessionToken"))
    auth = FixedPayloadAuth(creds, "s3", req["region"])
    request = AWSRequest(method=req["method"], url=req["url"], headers=req["headers"])
    request.context["timestamp"] = req["headers"]["x-amz-date"]
    canonical = auth.canonical_request(request)
    string_to_sign = auth.string_to_sign(request, canonical)
    signature = auth.signature(string_to_sign, request)
    signed = auth.signed_headers(auth.headers_to_sign(request))
    scope = auth.scope(request)
    return f"AWS4-HMAC-SHA256 Credential={scope}, SignedHeaders={signed}, Signature={signature}"


def main():
    requests = json.load(sys.stdin)
    json.dump([authorization(r) for r in requests], sys.stdout)


if __name__ == "__main__":
    main()
