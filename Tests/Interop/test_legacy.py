"""Legacy promotional offer signatures (APPLE.md section 4): DER ECDSA over the payload that Apple's
PromotionalOfferSignatureCreator builds (its own code builds the payload here), sent as padded Base64."""

from __future__ import annotations

import base64
import json
import time
import uuid

import pytest
from appstoreserverlibrary.promotional_offer import PromotionalOfferSignatureCreator
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import utils

from support import (
    BUNDLE_ID,
    FIXTURES,
    LEGACY_SEPARATOR,
    OFFER_OPEN,
    PRODUCT_MONTHLY,
    PRODUCT_YEARLY,
    apple_legacy_payload,
    decode_standard_b64,
    der_signature_verifies,
    is_uuid_v7_lower,
    run_cli,
)

TOKEN_LOWER = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
TOKEN_UPPER = TOKEN_LOWER.upper()
# Letters in every group, so upper and lower case differ everywhere they can.
assert TOKEN_UPPER != TOKEN_LOWER


def check_legacy_body(body: dict, key, token_sent: str | None) -> bytes:
    """Checks the response fields and returns the DER signature."""
    expected = {"format", "keyId", "nonce", "timestamp", "signature"}
    if token_sent is not None:
        expected.add("appAccountToken")
        assert body["appAccountToken"] == token_sent.lower()
    assert set(body) == expected
    assert body["format"] == "legacy"
    assert body["keyId"] == key.key_id
    assert is_uuid_v7_lower(body["nonce"]), body["nonce"]
    timestamp = body["timestamp"]
    assert type(timestamp) is int, f"timestamp must be an integer, got {timestamp!r}"
    assert abs(timestamp - time.time() * 1000) <= 10_000, f"timestamp {timestamp} is not now in milliseconds"
    der = decode_standard_b64(body["signature"])
    # A DER ECDSA-Sig-Value: SEQUENCE of two INTEGERs. Usually 70 to 72 bytes, but shorter when r or s has
    # leading zero bytes (1 time in 256 for 69), so check the structure rather than a length range.
    r, s = utils.decode_dss_signature(der)
    assert r > 0 and s > 0 and utils.encode_dss_signature(r, s) == der, f"not canonical DER: {der.hex()}"
    utils.decode_dss_signature(der)  # raises when not a DER ECDSA-Sig-Value
    return der


def payload_for(body: dict, key, product_id: str, token: str | None) -> bytes:
    return apple_legacy_payload(key.pem, key.key_id, BUNDLE_ID, product_id, OFFER_OPEN, token, body["nonce"],
                                body["timestamp"])


@pytest.mark.parametrize(
    "token", [TOKEN_UPPER, TOKEN_LOWER, None], ids=["token-upper", "token-lower", "no-token"])
def test_http_legacy_verifies_over_apple_payload(server, signing_key, token):
    response = server.promo(format="legacy", appAccountToken=token)
    assert response.status == 200, response.body
    body = response.json()
    der = check_legacy_body(body, signing_key, token)
    payload = payload_for(body, signing_key, PRODUCT_MONTHLY, token)

    expected_text = LEGACY_SEPARATOR.join(
        [BUNDLE_ID, signing_key.key_id, PRODUCT_MONTHLY, OFFER_OPEN, (token or "").lower(), body["nonce"],
         str(body["timestamp"])])
    assert payload == expected_text.encode("utf-8")
    if token is None:
        assert (LEGACY_SEPARATOR * 2).encode() in payload

    assert der_signature_verifies(der, payload, signing_key.public_key)
    # One changed byte in the payload and it must fail.
    tampered = bytearray(payload)
    tampered[-1] ^= 0x01
    assert not der_signature_verifies(der, bytes(tampered), signing_key.public_key)


def test_http_legacy_upper_token_is_signed_lowercase(server, signing_key):
    """The signature must not verify over the payload with the token left in upper case."""
    response = server.promo(format="legacy", appAccountToken=TOKEN_UPPER)
    assert response.status == 200, response.body
    body = response.json()
    der = check_legacy_body(body, signing_key, TOKEN_UPPER)
    lower_payload = payload_for(body, signing_key, PRODUCT_MONTHLY, TOKEN_UPPER)
    upper_payload = lower_payload.replace(TOKEN_LOWER.encode(), TOKEN_UPPER.encode())
    assert upper_payload != lower_payload
    assert der_signature_verifies(der, lower_payload, signing_key.public_key)
    assert not der_signature_verifies(der, upper_payload, signing_key.public_key)


def test_http_legacy_token_not_omitted(server, signing_key):
    """A token given must be in the payload: the signature must not verify over the empty-token payload."""
    response = server.promo(format="legacy", appAccountToken=TOKEN_LOWER)
    body = response.json()
    der = check_legacy_body(body, signing_key, TOKEN_LOWER)
    empty = payload_for(body, signing_key, PRODUCT_MONTHLY, None)
    assert not der_signature_verifies(der, empty, signing_key.public_key)


def test_http_legacy_second_product(server, signing_key):
    response = server.promo(format="legacy", productId=PRODUCT_YEARLY)
    assert response.status == 200, response.body
    body = response.json()
    der = check_legacy_body(body, signing_key, None)
    assert der_signature_verifies(der, payload_for(body, signing_key, PRODUCT_YEARLY, None), signing_key.public_key)
    assert not der_signature_verifies(
        der, payload_for(body, signing_key, PRODUCT_MONTHLY, None), signing_key.public_key)


def test_http_legacy_nonces_unique(server):
    nonces = {server.promo(format="legacy").json()["nonce"] for _ in range(20)}
    assert len(nonces) == 20


def test_checker_accepts_apple_creator_output(signing_key):
    """Sanity: Apple's own signature verifies with the same method, and the same checker rejects a
    signature over different bytes."""
    nonce = "0f0e4d3c-2b1a-4987-a654-3210fedcba98"
    timestamp = int(time.time() * 1000)
    apple = PromotionalOfferSignatureCreator(signing_key.pem, signing_key.key_id, BUNDLE_ID)
    signature = apple.create_signature(PRODUCT_MONTHLY, OFFER_OPEN, TOKEN_UPPER, uuid.UUID(nonce), timestamp)
    der = decode_standard_b64(signature)
    body = {"nonce": nonce, "timestamp": timestamp}
    payload = payload_for(body, signing_key, PRODUCT_MONTHLY, TOKEN_UPPER)
    assert der_signature_verifies(der, payload, signing_key.public_key)
    assert not der_signature_verifies(der, payload_for(body, signing_key, PRODUCT_MONTHLY, None),
                                      signing_key.public_key)


def test_checker_accepts_apple_md_vector():
    """Sanity: Apple's payload builder reproduces the APPLE.md section 6 payload, and its signature verifies."""
    pem = (FIXTURES / "apple-library-test-key.p8").read_bytes()
    public = serialization.load_pem_private_key(pem, None).public_key()
    payload = apple_legacy_payload(pem, "keyId", "bundleId", "productId", "offerId", "appAccountToken",
                                   "20fba8a0-2b80-4a7d-a17f-85c1854727f8", 1698148900000)
    assert payload.hex() == (
        "62756e646c654964e281a36b65794964e281a370726f647563744964e281a36f666665724964e281a36170706163636f756e74746f6b"
        "656ee281a332306662613861302d326238302d346137642d613137662d383563313835343732376638e281a331363938313438393030"
        "303030")
    der = base64.b64decode(
        "MEYCIQDCCMNIz6Xc1o8/49wr3dl4V+clyqWjSlReGlk57l84VgIhAJHS56coi1jCG/Li93vbkaBsqD3RIXBsGJAgMkaijMIx")
    assert der_signature_verifies(der, payload, public)
    assert not der_signature_verifies(der, payload[:-1] + b"1", public)


def cli_legacy(key, *extra):
    result = run_cli("sign", "legacy", "--key", str(key.path), "--key-id", key.key_id, "--bundle-id", BUNDLE_ID,
                     "--product-id", PRODUCT_MONTHLY, "--offer-id", OFFER_OPEN, *extra)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize(
    "token", [TOKEN_UPPER, TOKEN_LOWER, None], ids=["token-upper", "token-lower", "no-token"])
def test_cli_legacy_verifies_over_apple_payload(signing_key, token):
    body = cli_legacy(signing_key, *(["--app-account-token", token] if token else []))
    der = check_legacy_body(body, signing_key, token)
    payload = payload_for(body, signing_key, PRODUCT_MONTHLY, token)
    assert der_signature_verifies(der, payload, signing_key.public_key)
    if token is not None:
        upper = payload.replace(TOKEN_LOWER.encode(), TOKEN_UPPER.encode())
        assert not der_signature_verifies(der, upper, signing_key.public_key)


def test_cli_legacy_rejects_non_uuid_token(signing_key):
    result = run_cli("sign", "legacy", "--key", str(signing_key.path), "--key-id", signing_key.key_id,
                     "--bundle-id", BUNDLE_ID, "--product-id", PRODUCT_MONTHLY, "--offer-id", OFFER_OPEN,
                     "--app-account-token", "not-a-uuid")
    assert result.returncode == 2
    assert "app-account-token" in result.stderr
    assert "signature" not in result.stdout
