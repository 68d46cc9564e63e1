"""openGauss password answers from an independent implementation, for
tests/opengauss_auth.rs.

Reads a JSON list of cases on stdin and prints {"py_opengauss": VERSION,
"results": [...]} with one result per case:

- {"kind": "sha256", "password", "salt", "token", "iterations", "request_hex"}:
  {"proof": ..., "proof_from_request": ...}. The first is py-opengauss's
  rfc5802_algorithm(password, salt, token, "", iterations); the second its
  sha256_pw(user, password, body), which parses the AuthenticationSHA256
  request body itself (request_hex: the 'R' body the server sent, request
  code included; null skips it).
- {"kind": "md5_sha256", "password", "salt", "md5_salt_hex", "iterations"}:
  {"answer": ...}. py-opengauss has no MD5_SHA256 (request 11), so this is
  plain hashlib/hmac code of the server's check (openGauss crypt.cpp,
  uaMD5 with a sha256-stored password): "md5" + MD5 of the stored row after
  its "sha256" prefix, then the md5 salt.

Exits 3 with a message on stderr when py-opengauss is not installed.
"""

import hashlib
import hmac
import json
import sys

try:
    from importlib.metadata import version

    from py_opengauss.resolved.opengauss import rfc5802_algorithm, sha256_pw
except ImportError as e:
    print(f"py-opengauss is not installed ({e})", file=sys.stderr)
    sys.exit(3)


def encode_iteration(n):
    """openGauss user.cpp encode_iteration."""
    out = ""
    for base in "ecdfdcefade":
        out += chr(ord(base) + n % 10)
        n //= 10
    return out


def md5_sha256(password, salt, md5_salt, iterations):
    k = hashlib.pbkdf2_hmac("sha1", password, bytes.fromhex(salt), iterations, dklen=32)
    server_key = hmac.new(k, b"Sever Key", hashlib.sha256).digest()
    client_key = hmac.new(k, b"Client Key", hashlib.sha256).digest()
    stored_key = hashlib.sha256(client_key).digest()
    row = salt + server_key.hex() + stored_key.hex() + encode_iteration(iterations)
    return "md5" + hashlib.md5(row.encode("ascii") + md5_salt).hexdigest()


def answer(case):
    password = case["password"].encode("utf-8")
    if case["kind"] == "sha256":
        proof = rfc5802_algorithm(password, case["salt"], case["token"], "", case["iterations"])
        result = {"proof": proof.decode("ascii"), "proof_from_request": None}
        if case.get("request_hex"):
            body = bytes.fromhex(case["request_hex"])[4:]
            result["proof_from_request"] = sha256_pw(b"unused", password, body).decode("ascii")
        return result
    md5_salt = bytes.fromhex(case["md5_salt_hex"])
    return {"answer": md5_sha256(password, case["salt"], md5_salt, case["iterations"])}


def main():
    cases = json.load(sys.stdin)
    json.dump(
        {"py_opengauss": version("py-opengauss"), "results": [answer(c) for c in cases]},
        sys.stdout,
    )


if __name__ == "__main__":
    main()
