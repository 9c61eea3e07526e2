"""The benchmark's peer (Benchmarks/peer/server.py, Apple's Python library behind uvicorn): it serves, its JWS verify
with PyJWT, and it decides the lapsed-customer offer as offer-signer does, on the same signed data."""

from __future__ import annotations

import http.client
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
import uuid

import jwt
import pytest

from support import (
    BUNDLE_ID,
    ISSUER_ID,
    OFFER_LAPSED,
    PRODUCT_MONTHLY,
    REPO_ROOT,
    flip_payload_byte,
    jws_parts,
    renewal_payload,
    sign_with_testkit,
    transaction_payload,
)

PEER = REPO_ROOT / "Benchmarks" / "peer" / "server.py"
PEER_LISTENING = re.compile(r"^peer listening on http://127\.0\.0\.1:(\d+)$")
OPEN_OFFER = "bench_open"
RULE_OFFER = "bench_winback_rules"  # expired and daysSinceExpiry >= 30, as the verified server's OFFER_LAPSED
PROMO_PATH = "/v1/signatures/promotional-offer"
APP_TRANSACTION_ID = "7042895723110001"  # transaction_payload's appTransactionId for its default customer


class Peer:
    def __init__(self, process: subprocess.Popen, port: int):
        self.process, self.port = process, port

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        try:
            data = json.dumps(body) if body is not None else None
            connection.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
            response = connection.getresponse()
            return response.status, json.loads(response.read())
        finally:
            connection.close()

    def promo(self, **fields) -> tuple[int, dict]:
        return self.request("POST", PROMO_PATH, {"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY, **fields})


@pytest.fixture(scope="module")
def peer(testkit_dir, signing_key):
    stderr_path = testkit_dir / "peer.stderr"
    with open(stderr_path, "wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, str(PEER), "--host", "127.0.0.1", "--port", "0", "--workers", "2",
             "--key", str(signing_key.path), "--key-id", signing_key.key_id, "--issuer-id", ISSUER_ID,
             "--bundle-id", BUNDLE_ID, "--root", str(testkit_dir / "ca" / "root.cer"), "--environment", "Sandbox"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr)
    try:
        line = b""
        deadline = time.monotonic() + 60
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            assert left > 0 and process.poll() is None, (
                f"the peer announced no port (got {line!r}): {stderr_path.read_text(errors='replace')}")
            if select.select([process.stdout], [], [], left)[0]:
                line += os.read(process.stdout.fileno(), 1)
        match = PEER_LISTENING.match(line.decode().rstrip("\n"))
        assert match, f"unexpected first stdout line: {line!r}"
        yield Peer(process, int(match.group(1)))
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            status = process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        rest = process.stdout.read()
        process.stdout.close()
    assert status == 0, f"the peer exited {status} after SIGTERM: {stderr_path.read_text(errors='replace')}"
    assert rest == b"", f"the peer printed more than its listening line: {rest!r}"


def transaction(testkit_dir, expired_days_ago: int, ca: str = "ca") -> str:
    now = int(time.time() * 1000)
    return sign_with_testkit(testkit_dir, testkit_dir / ca, "transaction", transaction_payload(now, expired_days_ago))


def renewal_info(testkit_dir, **overrides) -> str:
    now = int(time.time() * 1000)
    return sign_with_testkit(testkit_dir, testkit_dir / "ca", "renewal-info", renewal_payload(now, **overrides))


def verified_claims(body: dict, signing_key) -> dict:
    """The claims of the answer's JWS, after PyJWT verified it with the signing key's public key."""
    assert body["format"] == "jws" and body["keyId"] == signing_key.key_id, body
    claims = jwt.decode(body["compactJWS"], signing_key.public_key, algorithms=["ES256"],
                        audience="promotional-offer", issuer=ISSUER_ID)
    header = jwt.get_unverified_header(body["compactJWS"])
    assert header == {"alg": "ES256", "kid": signing_key.key_id, "typ": "JWT"}, header
    assert claims["nonce"] == body["nonce"] and uuid.UUID(body["nonce"]).version == 4, body
    return claims


def test_livez_answers_ok(peer):
    assert peer.request("GET", "/livez") == (200, {"status": "ok"})


def test_the_open_offer_is_a_jws_that_verifies_with_the_right_claims(peer, signing_key):
    before = int(time.time())
    status, body = peer.promo(offerId=OPEN_OFFER)
    assert status == 200, body
    claims = verified_claims(body, signing_key)
    assert before - 1 <= claims.pop("iat") <= int(time.time()) + 1
    claims.pop("nonce")
    assert claims == {"iss": ISSUER_ID, "aud": "promotional-offer", "bid": BUNDLE_ID, "productId": PRODUCT_MONTHLY,
                      "offerIdentifier": OPEN_OFFER}
    # A fresh nonce per signature.
    assert peer.promo(offerId=OPEN_OFFER)[1]["nonce"] != body["nonce"]


def test_a_lapsed_customer_gets_a_jws_naming_the_verified_customer(peer, signing_key, testkit_dir):
    status, body = peer.promo(offerId=RULE_OFFER, signedTransaction=transaction(testkit_dir, 70))
    assert status == 200, body
    claims = verified_claims(body, signing_key)
    assert (claims["offerIdentifier"], claims["transactionId"]) == (RULE_OFFER, APP_TRANSACTION_ID), claims


def test_a_recent_customer_is_not_eligible(peer, testkit_dir):
    assert peer.promo(offerId=RULE_OFFER, signedTransaction=transaction(testkit_dir, 10)) == (
        403, {"error": {"code": "not_eligible"}})


@pytest.mark.parametrize("change", ["tampered", "stranger"])
def test_signed_data_that_does_not_verify_is_refused(peer, testkit_dir, change):
    signed = flip_payload_byte(transaction(testkit_dir, 70)) if change == "tampered" else transaction(
        testkit_dir, 70, ca="stranger")
    status, body = peer.promo(offerId=RULE_OFFER, signedTransaction=signed)
    assert status == 400 and body["error"]["code"] == "untrusted_signed_data", body


def test_bad_input_is_refused(peer):
    assert peer.request("POST", PROMO_PATH, {"bundleId": BUNDLE_ID, "offerId": OPEN_OFFER})[0] == 400
    assert peer.promo(offerId="no_such_offer")[0] == 404
    assert peer.request("GET", PROMO_PATH)[0] == 405


# The same signed data to both: the peer's bench_winback_rules and offer-signer's lapsed_30 (the same rule).
CUSTOMERS = {
    "lapsed 70 days": (70, None),
    "lapsed 10 days": (10, None),
    "lapsed 40 days, no renewal info (Apple may still retry)": (40, None),
    "lapsed 40 days, renewal info says no retry": (40, {"isInBillingRetryPeriod": False}),
    "lapsed 40 days, in billing retry": (40, {"isInBillingRetryPeriod": True}),
    "lapsed 70 days, renewal info of another subscription": (70, {"originalTransactionId": "2000000000000999"}),
}


@pytest.mark.parametrize("name", CUSTOMERS)
def test_the_peer_decides_as_offer_signer(peer, verified_server, signing_key, testkit_dir, name):
    days, renewal = CUSTOMERS[name]
    fields = {"signedTransaction": transaction(testkit_dir, days)}
    if renewal is not None:
        fields["signedRenewalInfo"] = renewal_info(testkit_dir, **renewal)
    ours = verified_server.promo(offerId=OFFER_LAPSED, **fields)
    status, body = peer.promo(offerId=RULE_OFFER, **fields)
    assert status == ours.status, (name, body, ours.body)
    if status == 200:
        _, our_claims, _ = jws_parts(ours.json()["compactJWS"])
        assert verified_claims(body, signing_key)["transactionId"] == our_claims["transactionId"], name
    else:
        assert body["error"]["code"] == ours.json()["error"]["code"], (name, body, ours.body)
