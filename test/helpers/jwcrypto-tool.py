"""Signs and verifies detached JWS with jwcrypto (Debian's python3-jwcrypto), an independent JOSE
implementation, for test/unit/signature/jws/interop.test.ts. Reads a JSON list of operations on
stdin and prints a JSON list of results, one per operation, so a test file starts Python once.

  {"op": "sign", "key": PEM | "secret": text, "protected": {...} | text, "payload": base64}
                                                                    -> {"jws": "<p>..<s>"}
  {"op": "verify", "key": PEM, "jws": "<p>..<s>", "payload": base64} -> {"valid": bool, "error"?}

The payload travels as base64 of its bytes; b64 in the protected header decides how jwcrypto
puts it into the signing input. The extra critical names the dialects use are registered as
understood, as a JAdES or UK OB verifier built on jwcrypto would register them.
"""

import base64
import json
import sys

from jwcrypto import jwk, jws
from jwcrypto.common import JWSEHeaderParameter, base64url_encode

EXTRA = {
    name: JWSEHeaderParameter(name, False, True, None)
    for name in [
        "sigT",
        "sigD",
        "http://openbanking.org.uk/iat",
        "http://openbanking.org.uk/iss",
        "http://openbanking.org.uk/tan",
        # A name no dialect of ours understands: jwcrypto signs it, our verifier must refuse it.
        "http://example.com/unknown",
    ]
}


def sign(op):
    if "secret" in op:
        # An HMAC key made of these bytes: the "public key as HS256 secret" game.
        key = jwk.JWK(kty="oct", k=base64url_encode(op["secret"].encode()))
    else:
        key = jwk.JWK.from_pem(op["key"].encode())
    payload = base64.b64decode(op["payload"])
    token = jws.JWS(payload, header_registry=EXTRA)
    # A string is signed as given (duplicate members included); a dict as jwcrypto writes it.
    protected = op["protected"] if isinstance(op["protected"], str) else json.dumps(op["protected"])
    token.add_signature(key, None, protected)
    # What serialize() would write for the two outer parts; its JSON form cannot carry an unencoded
    # payload of bytes, and its compact form refuses one holding a '.'.
    protected_b64 = base64url_encode(token.objects["protected"])
    return {"jws": protected_b64 + ".." + base64url_encode(token.objects["signature"])}


def verify(op):
    key = jwk.JWK.from_pem(op["key"].encode())
    payload = base64.b64decode(op["payload"])
    protected, empty, signature = op["jws"].split(".")
    assert empty == ""
    header = json.loads(base64.urlsafe_b64decode(protected + "=" * (-len(protected) % 4)))
    if header.get("b64", True):
        body = base64url_encode(payload)
    else:
        body = payload.decode("latin-1")
    token = jws.JWS(header_registry=EXTRA)
    token.deserialize(json.dumps({"protected": protected, "payload": body, "signature": signature}))
    try:
        token.verify(key)
        return {"valid": True}
    except Exception as e:  # noqa: BLE001 - the test wants the reason, whatever it is
        return {"valid": False, "error": repr(e)[:300]}


def main():
    ops = json.load(sys.stdin)
    out = []
    for op in ops:
        try:
            out.append(sign(op) if op["op"] == "sign" else verify(op))
        except Exception as e:  # noqa: BLE001
            out.append({"error": repr(e)[:300]})
    json.dump(out, sys.stdout)


main()
