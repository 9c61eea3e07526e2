"""Keys that never enter the process (PKCS#11): a SoftHSM token made here, a fresh P-256 key put into it with
`keys import --pkcs11`, the .p8 deleted, then `serve` signing through the token; the promotional-offer JWS and
the legacy signature are judged by PyJWT, `cryptography` and Apple's library against the key's public key."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import jwt
import pytest

from support import (
    BUNDLE_ID,
    ISSUER_ID,
    OFFER_OPEN,
    PRODUCT_MONTHLY,
    PRODUCT_YEARLY,
    KeyMaterial,
    Server,
    apple_legacy_payload,
    binary,
    decode_standard_b64,
    der_signature_verifies,
    flip_payload_byte,
    jws_parts,
    jws_verifies,
)
from test_promotional_jws import AUDIENCE, apple_reference, assert_matches_apple

MODULE = "/usr/lib/softhsm/libsofthsm2.so"
TOKEN = "interop"
PIN = "pkcs11-interop-pin-7731"
WRONG_PIN = "wrong-pin-5522"
KEY_ID = "HSMKEY0001"
URI = f"pkcs11:token={TOKEN};object={KEY_ID}"


class Token:
    """A SoftHSM token in a temporary directory; `env` points SoftHSM at it."""

    def __init__(self, directory: Path):
        (directory / "tokens").mkdir()
        conf = directory / "softhsm2.conf"
        conf.write_text(f"directories.tokendir = {directory / 'tokens'}\nobjectstore.backend = file\n"
                        "log.level = ERROR\n")
        self.env = {**os.environ, "SOFTHSM2_CONF": str(conf)}
        self.directory = directory
        result = subprocess.run(
            ["softhsm2-util", "--init-token", "--free", "--label", TOKEN, "--pin", PIN, "--so-pin", "5678"],
            capture_output=True, text=True, env=self.env, timeout=30)
        assert result.returncode == 0, result.stdout + result.stderr

    def cli(self, *args: str, extra_env: dict[str, str] | None = None, timeout: float = 30):
        return subprocess.run([binary(), *args], capture_output=True, text=True,
                              env={**self.env, **(extra_env or {})}, timeout=timeout)

    def tool(self, *args: str):
        return subprocess.run(["pkcs11-tool", "--module", MODULE, "--token-label", TOKEN, *args],
                              capture_output=True, text=True, env=self.env, timeout=30)


def write_protected(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o600)
    return path


def token_config(directory: Path, name: str, key_entry: dict) -> Path:
    config = {
        "listen": {"host": "127.0.0.1", "port": 0},
        "apps": [{
            "bundleId": BUNDLE_ID,
            "issuerId": ISSUER_ID,
            "keys": [key_entry],
            "offers": [{"id": OFFER_OPEN, "type": "promotional", "productIds": [PRODUCT_MONTHLY, PRODUCT_YEARLY],
                        "requiresVerifiedCustomer": False}],
        }],
    }
    path = directory / name
    path.write_text(json.dumps(config, indent=2))
    return path


@pytest.fixture(scope="module")
def token(tmp_path_factory) -> Token:
    return Token(tmp_path_factory.mktemp("softhsm"))


@pytest.fixture(scope="module")
def imported(token: Token):
    """The key material (read before the .p8 is destroyed) and the key entry `keys import` printed."""
    p8 = token.directory / f"AuthKey_{KEY_ID}.p8"
    generated = subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                                "-out", str(p8)], capture_output=True, text=True, timeout=30)
    assert generated.returncode == 0, generated.stderr
    p8.chmod(0o600)
    key = KeyMaterial.load(KEY_ID, p8)
    pin_file = write_protected(token.directory / "pin", PIN + "\n")
    result = token.cli("keys", "import", "--pkcs11", URI, "--module", MODULE, "--pin-file", str(pin_file), str(p8))
    assert result.returncode == 0, result.stdout + result.stderr
    assert PIN not in result.stdout + result.stderr
    entry_line = next(line for line in result.stdout.splitlines() if line.strip().startswith("{"))
    entry = json.loads(entry_line)
    assert entry == {"keyId": KEY_ID, "pkcs11": URI, "pkcs11Module": MODULE, "pinFile": str(pin_file.resolve())}
    p8.unlink()  # what the operator does next: the service must not need the file
    return key, entry


@pytest.fixture(scope="module")
def server(token: Token, imported):
    _, entry = imported
    config = token_config(token.directory, "pkcs11.json", entry)
    check = token.cli("config", "check", "--config", str(config))
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"key {KEY_ID}: signing, prime256v1, {URI} (module {MODULE})" in check.stdout
    running = Server.start(config, token.directory, env={"SOFTHSM2_CONF": token.env["SOFTHSM2_CONF"]})
    yield running
    status = running.stop(signal.SIGTERM, timeout=5)
    assert status == 0, running.stderr_path.read_text(errors="replace")
    assert PIN not in running.stderr_path.read_text(errors="replace")


def test_promotional_jws_verifies_with_pyjwt_and_matches_apple(server, imported):
    key, _ = imported
    for product in (PRODUCT_MONTHLY, PRODUCT_YEARLY):
        response = server.promo(productId=product)
        assert response.status == 200, response.body
        token = response.json()["compactJWS"]
        claims = jwt.decode(token, key.public_key, algorithms=["ES256"], audience=AUDIENCE)
        assert claims["iss"] == ISSUER_ID and claims["productId"] == product
        header, _, _ = jws_parts(token)
        assert header == {"alg": "ES256", "kid": KEY_ID, "typ": "JWT"}
        assert_matches_apple(token, apple_reference(key, product, OFFER_OPEN), key)
        assert not jws_verifies(flip_payload_byte(token), key.public_key)


def test_legacy_signature_verifies_over_apple_payload(server, imported):
    key, _ = imported
    response = server.promo(format="legacy")
    assert response.status == 200, response.body
    body = response.json()
    der = decode_standard_b64(body["signature"])
    payload = apple_legacy_payload(key.pem, KEY_ID, BUNDLE_ID, PRODUCT_MONTHLY, OFFER_OPEN, None, body["nonce"],
                                   body["timestamp"])
    assert der_signature_verifies(der, payload, key.public_key)
    assert not der_signature_verifies(der, payload + b"x", key.public_key)


def test_many_concurrent_signatures_all_verify(server, imported):
    """The service's worker threads sign at once through the token (a session per signature in flight)."""
    from concurrent.futures import ThreadPoolExecutor

    key, _ = imported
    with ThreadPoolExecutor(max_workers=8) as pool:
        responses = list(pool.map(lambda _: server.promo(), range(64)))
    assert all(r.status == 200 for r in responses), [r.body for r in responses if r.status != 200][:3]
    assert all(jws_verifies(r.json()["compactJWS"], key.public_key) for r in responses)


def test_private_key_is_sensitive_and_not_extractable(token: Token, imported):
    listed = token.tool("--login", "--pin", PIN, "--list-objects", "--type", "privkey")
    assert listed.returncode == 0, listed.stderr
    assert f"label:      {KEY_ID}" in listed.stdout, listed.stdout
    access = next(line for line in listed.stdout.splitlines() if line.strip().startswith("Access:"))
    flags = {flag.strip() for flag in access.split(":", 1)[1].split(",")}
    assert "sensitive" in flags and "extractable" not in flags, access
    out = token.directory / "exported.der"
    read = token.tool("--login", "--pin", PIN, "--read-object", "--type", "privkey", "--label", KEY_ID,
                      "--output-file", str(out))
    assert not out.exists() or out.stat().st_size == 0, "the private key was read out of the token"
    assert "not" in (read.stdout + read.stderr).lower() or read.returncode != 0


def test_second_import_with_the_same_label_is_refused(token: Token, imported, tmp_path):
    p8 = tmp_path / "again.p8"
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
                    str(p8)], check=True, capture_output=True, timeout=30)
    p8.chmod(0o600)
    result = token.cli("keys", "import", "--pkcs11", URI, "--module", MODULE, "--pin-env", "HSM_PIN",
                       "--key-id", "OTHER01", str(p8), extra_env={"HSM_PIN": PIN})
    assert result.returncode == 1
    assert "already holds an object with this label" in result.stderr, result.stderr
    assert PIN not in result.stderr


def serve_fails(token: Token, config: Path, extra_env: dict[str, str] | None = None):
    return token.cli("serve", "--config", str(config), "--port", "0", "--host", "127.0.0.1", extra_env=extra_env)


def test_wrong_pin_stops_start_up_naming_the_uri(token: Token, imported):
    _, entry = imported
    entry = {k: v for k, v in entry.items() if k != "pinFile"} | {"pinEnvironment": "HSM_PIN"}
    config = token_config(token.directory, "wrong-pin.json", entry)
    result = serve_fails(token, config, {"HSM_PIN": WRONG_PIN})
    assert result.returncode == 1, result.stdout + result.stderr
    assert "$.apps[0].keys[0].pkcs11" in result.stderr and URI in result.stderr, result.stderr
    assert "refused the PIN" in result.stderr, result.stderr
    assert WRONG_PIN not in result.stdout + result.stderr and PIN not in result.stdout + result.stderr


def test_missing_object_stops_start_up_naming_the_uri(token: Token, imported):
    _, entry = imported
    missing = f"pkcs11:token={TOKEN};object=NOSUCHKEY"
    config = token_config(token.directory, "missing.json", entry | {"pkcs11": missing})
    result = serve_fails(token, config)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{missing}: no private key with this label and ID in the token" in result.stderr, result.stderr
    assert PIN not in result.stdout + result.stderr


def test_missing_token_stops_start_up_naming_the_uri(token: Token, imported):
    _, entry = imported
    missing = f"pkcs11:token=absent;object={KEY_ID}"
    config = token_config(token.directory, "missing-token.json", entry | {"pkcs11": missing})
    result = serve_fails(token, config)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{missing}: no such token in {MODULE}" in result.stderr, result.stderr


def test_pin_in_the_uri_is_refused(token: Token, imported):
    _, entry = imported
    config = token_config(token.directory, "pin-in-uri.json", entry | {"pkcs11": URI + f";pin-value={PIN}"})
    result = token.cli("config", "check", "--config", str(config))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "the PIN does not go in the URI" in result.stderr + result.stdout
    assert PIN not in result.stdout + result.stderr
