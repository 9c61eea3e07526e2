"""Promotional offer JWS (APPLE.md section 2) from the running service and the offline CLI, judged by
PyJWT, `cryptography` and Apple's PromotionalOfferV2SignatureCreator."""

from __future__ import annotations

import json
import time

import jwt
import pytest
from appstoreserverlibrary.jws_signature_creator import PromotionalOfferV2SignatureCreator
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization

from support import (
    BUNDLE_ID,
    FIXTURES,
    ISSUER_ID,
    KEY_ID,
    OFFER_OPEN,
    PRODUCT_MONTHLY,
    PRODUCT_YEARLY,
    flip_payload_byte,
    is_uuid_v7_lower,
    jws_parts,
    jws_verifies,
    run_cli,
    verify_jws_es256,
)

AUDIENCE = "promotional-offer"
VOLATILE = {"nonce", "iat"}


def apple_reference(key, product_id, offer_id, transaction_id=None, bundle_id=BUNDLE_ID) -> str:
    creator = PromotionalOfferV2SignatureCreator(
        signing_key=key.pem, key_id=key.key_id, issuer_id=ISSUER_ID, bundle_id=bundle_id)
    return creator.create_signature(product_id, offer_id, transaction_id=transaction_id)


def assert_matches_apple(ours: str, reference: str, key) -> None:
    """Same header, same claim names, same values except nonce and iat; both verify with the key."""
    assert jws_verifies(reference, key.public_key), "checker rejects Apple's own token"
    our_header, our_claims, _ = jws_parts(ours)
    apple_header, apple_claims, _ = jws_parts(reference)
    assert our_header == apple_header
    assert set(our_claims) == set(apple_claims)
    assert {k: v for k, v in our_claims.items() if k not in VOLATILE} == {
        k: v for k, v in apple_claims.items() if k not in VOLATILE}
    assert type(our_claims["iat"]) is int and type(apple_claims["iat"]) is int
    assert abs(our_claims["iat"] - apple_claims["iat"]) <= 5


def assert_fresh_iat(iat) -> None:
    assert type(iat) is int, f"iat must be integer seconds, got {iat!r}"
    assert abs(iat - time.time()) <= 10, f"iat {iat} is not now ({int(time.time())}); seconds vs milliseconds?"


@pytest.fixture(scope="module")
def signed(server):
    response = server.promo()
    assert response.status == 200, response.body
    return response


def test_response_shape(signed, signing_key):
    assert signed.header("Content-Type").startswith("application/json")
    body = json.loads(signed.body)
    assert set(body) == {"format", "keyId", "compactJWS", "nonce", "issuedAt"}
    assert body["format"] == "jws"
    assert body["keyId"] == signing_key.key_id
    assert is_uuid_v7_lower(body["nonce"]), body["nonce"]
    assert_fresh_iat(body["issuedAt"])


def test_pyjwt_verifies(signed, signing_key):
    body = signed.json()
    claims = jwt.decode(body["compactJWS"], signing_key.public_key, algorithms=["ES256"], audience=AUDIENCE)
    assert claims["aud"] == AUDIENCE
    assert claims["iss"] == ISSUER_ID
    assert claims["bid"] == BUNDLE_ID
    assert claims["productId"] == PRODUCT_MONTHLY
    assert claims["offerIdentifier"] == OFFER_OPEN


def test_pyjwt_rejects_wrong_audience(signed, signing_key):
    with pytest.raises(jwt.InvalidAudienceError):
        jwt.decode(signed.json()["compactJWS"], signing_key.public_key, algorithms=["ES256"],
                   audience="introductory-offer-eligibility")


def test_exact_header(signed, signing_key):
    header, _, _ = jws_parts(signed.json()["compactJWS"])
    assert header == {"alg": "ES256", "kid": signing_key.key_id, "typ": "JWT"}


def test_claims_match_apple_creator(signed, signing_key):
    ours = signed.json()["compactJWS"]
    assert_matches_apple(ours, apple_reference(signing_key, PRODUCT_MONTHLY, OFFER_OPEN), signing_key)


def test_claims_details(signed):
    body = signed.json()
    _, claims, _ = jws_parts(body["compactJWS"])
    assert "exp" not in claims
    assert "transactionId" not in claims, "transactionId must be omitted when unknown, never null"
    assert claims["aud"] == AUDIENCE and isinstance(claims["aud"], str)
    assert_fresh_iat(claims["iat"])
    assert claims["iat"] == body["issuedAt"]
    assert is_uuid_v7_lower(claims["nonce"])
    assert claims["nonce"] == body["nonce"]


def test_second_product_of_offer(server, signing_key):
    response = server.promo(productId=PRODUCT_YEARLY)
    assert response.status == 200, response.body
    token = response.json()["compactJWS"]
    verify_jws_es256(token, signing_key.public_key)
    assert_matches_apple(token, apple_reference(signing_key, PRODUCT_YEARLY, OFFER_OPEN), signing_key)


def test_signature_verifies_with_cryptography_and_tamper_fails(signed, signing_key):
    token = signed.json()["compactJWS"]
    verify_jws_es256(token, signing_key.public_key)
    tampered = flip_payload_byte(token)
    with pytest.raises(InvalidSignature):
        verify_jws_es256(tampered, signing_key.public_key)
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(tampered, signing_key.public_key, algorithms=["ES256"], audience=AUDIENCE,
                   options={"verify_aud": False})


def test_signature_fails_with_another_key(signed, rotated_key):
    assert not jws_verifies(signed.json()["compactJWS"], rotated_key.public_key)


def test_nonces_unique(server, signing_key):
    nonces = []
    for _ in range(50):
        response = server.promo()
        assert response.status == 200, response.body
        body = response.json()
        _, claims, _ = jws_parts(body["compactJWS"])
        assert claims["nonce"] == body["nonce"]
        assert is_uuid_v7_lower(body["nonce"]), body["nonce"]
        nonces.append(body["nonce"])
    assert len(set(nonces)) == 50


def test_checker_accepts_apple_vector():
    """Sanity of the checker: the APPLE.md section 6 vector made with Apple's test key verifies, and
    its header has the shape demanded of ours."""
    key = serialization.load_pem_private_key((FIXTURES / "apple-library-test-key.p8").read_bytes(), None)
    vector = (
        "eyJhbGciOiJFUzI1NiIsImtpZCI6ImtleUlkIiwidHlwIjoiSldUIn0.eyJpc3MiOiJpc3N1ZXJJZCIsImlhdCI6MTc0MTA0MzY2MywiYXVk"
        "IjoicHJvbW90aW9uYWwtb2ZmZXIiLCJiaWQiOiJidW5kbGVJZCIsIm5vbmNlIjoiMzY4ZjMwODgtZGNkNS0xMWVmLWIzYzgtMzI1MDk2YjM5"
        "ZjQ2IiwicHJvZHVjdElkIjoicHJvZHVjdElkIiwib2ZmZXJJZGVudGlmaWVyIjoib2ZmZXJJZGVudGlmaWVyIiwidHJhbnNhY3Rpb25JZCI6"
        "InRyYW5zYWN0aW9uSWQifQ.oGXAjKzr1Sd4MEbRmYoXHdw6AQk5ZNk4UC1YO_Ef8j82Nw6y7F4zk7g_OgulOdgOc4z8z7Ei_IcJVcbmQYlGdg"
    )
    verify_jws_es256(vector, key.public_key())
    with pytest.raises(InvalidSignature):
        verify_jws_es256(flip_payload_byte(vector), key.public_key())
    header, claims, _ = jws_parts(vector)
    assert header == {"alg": "ES256", "kid": "keyId", "typ": "JWT"}
    assert claims["iat"] == 1741043663


def cli_sign(key, *extra):
    result = run_cli(
        "sign", "promotional-offer", "--key", str(key.path), "--key-id", key.key_id, "--issuer-id", ISSUER_ID,
        "--bundle-id", BUNDLE_ID, "--product-id", PRODUCT_MONTHLY, "--offer-id", OFFER_OPEN, *extra)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_cli_with_transaction_id_matches_apple(signing_key):
    body = cli_sign(signing_key, "--transaction-id", "123")
    assert set(body) == {"format", "keyId", "compactJWS", "nonce", "issuedAt"}
    assert body["format"] == "jws" and body["keyId"] == KEY_ID
    token = body["compactJWS"]
    claims = jwt.decode(token, signing_key.public_key, algorithms=["ES256"], audience=AUDIENCE)
    assert claims["transactionId"] == "123" and isinstance(claims["transactionId"], str)
    assert claims["nonce"] == body["nonce"] and is_uuid_v7_lower(body["nonce"])
    assert claims["iat"] == body["issuedAt"]
    assert_fresh_iat(claims["iat"])
    assert "exp" not in claims
    assert_matches_apple(token, apple_reference(signing_key, PRODUCT_MONTHLY, OFFER_OPEN, "123"), signing_key)
    with pytest.raises(InvalidSignature):
        verify_jws_es256(flip_payload_byte(token), signing_key.public_key)


def test_cli_without_transaction_id_matches_apple(signing_key):
    token = cli_sign(signing_key)["compactJWS"]
    verify_jws_es256(token, signing_key.public_key)
    _, claims, _ = jws_parts(token)
    assert "transactionId" not in claims
    assert_matches_apple(token, apple_reference(signing_key, PRODUCT_MONTHLY, OFFER_OPEN), signing_key)
