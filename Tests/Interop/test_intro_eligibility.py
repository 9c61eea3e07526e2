"""Introductory offer eligibility JWS (APPLE.md section 3) from the offline CLI, judged by PyJWT,
`cryptography` and Apple's IntroductoryOfferEligibilitySignatureCreator.

The HTTP endpoint needs Apple-signed data (signedTransaction or signedAppTransaction), which this
suite does not make yet; the CLI runs the same signing code."""

from __future__ import annotations

import json
import time

import jwt
import pytest
from appstoreserverlibrary.jws_signature_creator import IntroductoryOfferEligibilitySignatureCreator
from cryptography.exceptions import InvalidSignature

from support import (
    BUNDLE_ID,
    ISSUER_ID,
    PRODUCT_MONTHLY,
    flip_payload_byte,
    is_uuid_v7_lower,
    jws_parts,
    jws_verifies,
    run_cli,
    verify_jws_es256,
)

AUDIENCE = "introductory-offer-eligibility"
TRANSACTION_ID = "2000000847061981"


def cli_sign(key, allow: str, transaction_id: str = TRANSACTION_ID):
    result = run_cli(
        "sign", "introductory-offer-eligibility", "--key", str(key.path), "--key-id", key.key_id,
        "--issuer-id", ISSUER_ID, "--bundle-id", BUNDLE_ID, "--product-id", PRODUCT_MONTHLY,
        "--transaction-id", transaction_id, "--allow", allow)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("allow", [True, False], ids=["allow-true", "allow-false"])
def test_matches_apple_creator(signing_key, allow):
    body = cli_sign(signing_key, "true" if allow else "false")
    assert body["format"] == "jws"
    assert body["keyId"] == signing_key.key_id
    assert body["allowIntroductoryOffer"] is allow
    token = body["compactJWS"]

    claims = jwt.decode(token, signing_key.public_key, algorithms=["ES256"], audience=AUDIENCE)
    verify_jws_es256(token, signing_key.public_key)
    with pytest.raises(InvalidSignature):
        verify_jws_es256(flip_payload_byte(token), signing_key.public_key)

    header, raw_claims, _ = jws_parts(token)
    assert header == {"alg": "ES256", "kid": signing_key.key_id, "typ": "JWT"}
    assert raw_claims == claims
    assert raw_claims["allowIntroductoryOffer"] is allow, "allowIntroductoryOffer must be a JSON boolean"
    assert raw_claims["transactionId"] == TRANSACTION_ID
    assert raw_claims["aud"] == AUDIENCE
    assert "exp" not in raw_claims
    assert type(raw_claims["iat"]) is int and abs(raw_claims["iat"] - time.time()) <= 10
    assert raw_claims["iat"] == body["issuedAt"]
    assert is_uuid_v7_lower(raw_claims["nonce"]) and raw_claims["nonce"] == body["nonce"]

    reference = IntroductoryOfferEligibilitySignatureCreator(
        signing_key=signing_key.pem, key_id=signing_key.key_id, issuer_id=ISSUER_ID, bundle_id=BUNDLE_ID,
    ).create_signature(PRODUCT_MONTHLY, allow, TRANSACTION_ID)
    assert jws_verifies(reference, signing_key.public_key), "checker rejects Apple's own token"
    apple_header, apple_claims, _ = jws_parts(reference)
    assert header == apple_header
    assert set(raw_claims) == set(apple_claims)
    volatile = {"nonce", "iat"}
    assert {k: v for k, v in raw_claims.items() if k not in volatile} == {
        k: v for k, v in apple_claims.items() if k not in volatile}


def test_true_and_false_differ_in_claim(signing_key):
    _, granted, _ = jws_parts(cli_sign(signing_key, "true")["compactJWS"])
    _, denied, _ = jws_parts(cli_sign(signing_key, "false")["compactJWS"])
    assert granted["allowIntroductoryOffer"] is True
    assert denied["allowIntroductoryOffer"] is False


def test_nonce_fresh_per_run(signing_key):
    first = cli_sign(signing_key, "true")["nonce"]
    second = cli_sign(signing_key, "true")["nonce"]
    assert first != second


@pytest.mark.parametrize("allow", ["yes", "1", "TRUE"])
def test_allow_must_be_true_or_false(signing_key, allow):
    result = run_cli(
        "sign", "introductory-offer-eligibility", "--key", str(signing_key.path), "--key-id", signing_key.key_id,
        "--issuer-id", ISSUER_ID, "--bundle-id", BUNDLE_ID, "--product-id", PRODUCT_MONTHLY,
        "--transaction-id", TRANSACTION_ID, "--allow", allow)
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "--allow" in result.stderr
    assert "compactJWS" not in result.stdout


def test_transaction_id_required(signing_key):
    result = run_cli(
        "sign", "introductory-offer-eligibility", "--key", str(signing_key.path), "--key-id", signing_key.key_id,
        "--issuer-id", ISSUER_ID, "--bundle-id", BUNDLE_ID, "--product-id", PRODUCT_MONTHLY, "--allow", "true")
    assert result.returncode != 0
    assert "transaction-id" in result.stderr
    assert "compactJWS" not in result.stdout
