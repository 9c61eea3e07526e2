"""Issue 9: Retention Messaging (`POST /v1/apple/retention/{bundleId}`).

Apple's own Python library (`appstoreserverlibrary`'s `SignedDataVerifier.verify_and_decode_realtime_request`) judges
the test kit's retention requests (`offer-signer-testkit sign retention-request`) under the test root: it accepts them
in Sandbox and, with the app's `appAppleId`, in Production, and refuses them tampered, for another app, in another
environment, from another chain, or with a field missing, as the service does. Its `RealtimeResponseBody` model (with
the library's own cattrs converter) reads every answer of ours, and writes it back byte for byte as we wrote it; PyJWT
verifies every `promotionalOfferSignatureV2` with the app's key, and its `transactionId` is the request's
`originalTransactionId`.

Then the real binary, on a SQLite ledger, fed Apple's notifications: an eligible subscriber gets the offer signed, an
ineligible one a switch or a message; Apple's retry of a request gets the same answer and records nothing more; the
offer's `perCustomer` limit moves a second request on to the next entry. The same through nginx, as Apple calls it.
The ledger is read with Python's `sqlite3`, not the service's code.
"""

from __future__ import annotations

import base64
import json
import signal
import sqlite3
import time
import uuid
from contextlib import closing
from pathlib import Path

import jwt
import pytest
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.LibraryUtility import _get_cattrs_converter
from appstoreserverlibrary.models.RealtimeResponseBody import RealtimeResponseBody
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, VerificationException, VerificationStatus
from cattrs.errors import ClassValidationError

from nginx_proxy import nginx_in_front_of
from support import (
    BUNDLE_ID,
    ISSUER_ID,
    PRODUCT_MONTHLY,
    PRODUCT_YEARLY,
    Server,
    b64url_decode,
    renewal_payload,
    run_cli,
    run_testkit,
    transaction_payload,
)
from test_notifications import sign_notification

APP_APPLE_ID = 1234567890
RETENTION_PATH = f"/v1/apple/retention/{BUNDLE_ID}"
NOTIFICATIONS_PATH = f"/v1/apple/notifications/{BUNDLE_ID}"
STAY = "retention_stay"  # one per customer, subscribers of 30 days or more
OFFER_MESSAGE = "6E87B843-9962-4624-A273-9064FB1C1453"  # written uppercase: answered lowercase
OFFER_FALLBACK = "eec08e5d-b59a-4672-b799-8cf40e919a4f"
SWITCH_MESSAGE = "30741aff-1c2d-4e3f-8a9b-0c1d2e3f4a5b"
MESSAGE = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
DAY_MS = 86_400_000


def sign_retention_request(ca: Path, original_transaction_id: str, *, product_id: str = PRODUCT_MONTHLY,
                           environment: str | None = None, app_apple_id: int | None = None,
                           locale: str | None = None, request_id: str | None = None) -> str:
    """`offer-signer-testkit sign retention-request` with these options."""
    args = ["sign", "retention-request", "--ca", str(ca), "--original-transaction-id",
            original_transaction_id, "--product-id", product_id]
    for option, value in (("--environment", environment), ("--locale", locale), ("--request-id", request_id),
                          ("--app-apple-id", None if app_apple_id is None else str(app_apple_id))):
        if value is not None:
            args += [option, value]
    result = run_testkit(*args)
    assert result.returncode == 0, result.stderr
    token = result.stdout.strip()
    assert token.count(".") == 2, token
    return token


def sign_retention_payload(directory: Path, ca: Path, payload: dict) -> str:
    """A whole decoded request signed as written (`--payload`)."""
    path = directory / f"retention-{uuid.uuid4()}.json"
    path.write_text(json.dumps(payload))
    result = run_testkit("sign", "retention-request", "--ca", str(ca), "--payload", str(path))
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def tampered(token: str) -> str:
    """The same header and signature over a payload one byte different (the product)."""
    header, payload, signature = token.split(".")
    raw = bytearray(b64url_decode(payload))
    index = raw.index(b'"productId":"') + len(b'"productId":"')
    raw[index] = ord("X")
    forged = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
    return f"{header}.{forged}.{signature}"


def apple_verifier(testkit_dir: Path, environment: Environment, app_apple_id: int | None = None) -> SignedDataVerifier:
    root = (testkit_dir / "ca" / "root.cer").read_bytes()
    return SignedDataVerifier([root], False, environment, BUNDLE_ID, app_apple_id)


def apple_model(document: dict) -> RealtimeResponseBody:
    """Our answer read by Apple's model, as the library reads it; it must hold exactly one answer, and the library
    writes it back exactly as we wrote it (lowercase UUIDs, no other member)."""
    converter = _get_cattrs_converter(RealtimeResponseBody)
    body = converter.structure(document, RealtimeResponseBody)
    present = [name for name in ("message", "alternateProduct", "promotionalOffer", "advancedCommerceInfo")
               if getattr(body, name) is not None]
    assert len(present) == 1 and set(document) == set(present), (present, document)
    assert converter.unstructure(body) == document
    return body


def offer_claims(token: str, signing_key) -> dict:
    """A promotionalOfferSignatureV2 verified by PyJWT with the app's key: ES256, kid, typ, audience."""
    header = jwt.get_unverified_header(token)
    assert header == {"alg": "ES256", "kid": signing_key.key_id, "typ": "JWT"}, header
    return jwt.decode(token, signing_key.public_key, algorithms=["ES256"], audience="promotional-offer",
                      options={"require": ["iss", "iat", "aud", "nonce"]})


# MARK: - Apple's library judges the test kit's retention requests


@pytest.mark.parametrize("environment,app_apple_id", [(Environment.SANDBOX, None), (Environment.PRODUCTION, APP_APPLE_ID)])
def test_apple_library_accepts_testkit_retention_requests(testkit_dir, environment, app_apple_id):
    request_id = str(uuid.uuid4())
    token = sign_retention_request(testkit_dir / "ca", "2000000000000001", environment=environment.value,
                                   app_apple_id=app_apple_id, locale="fr-CA", request_id=request_id)
    decoded = apple_verifier(testkit_dir, environment, app_apple_id).verify_and_decode_realtime_request(token)
    assert decoded.originalTransactionId == "2000000000000001"
    assert decoded.productId == PRODUCT_MONTHLY
    assert decoded.userLocale == "fr-CA"
    assert str(decoded.requestIdentifier) == request_id
    assert decoded.environment == environment
    assert decoded.appAppleId == (app_apple_id or APP_APPLE_ID)
    assert abs(decoded.signedDate - time.time() * 1000) < 60_000
    with pytest.raises(VerificationException) as refused:
        apple_verifier(testkit_dir, environment, app_apple_id).verify_and_decode_realtime_request(tampered(token))
    assert refused.value.status == VerificationStatus.VERIFICATION_FAILURE


def test_apple_library_refuses_what_the_service_refuses(testkit_dir):
    production = sign_retention_request(testkit_dir / "ca", "1", environment="Production", app_apple_id=APP_APPLE_ID)
    with pytest.raises(VerificationException) as wrong_app:
        apple_verifier(testkit_dir, Environment.PRODUCTION, 42).verify_and_decode_realtime_request(production)
    assert wrong_app.value.status == VerificationStatus.INVALID_APP_IDENTIFIER
    with pytest.raises(VerificationException) as wrong_environment:
        apple_verifier(testkit_dir, Environment.SANDBOX).verify_and_decode_realtime_request(production)
    assert wrong_environment.value.status == VerificationStatus.INVALID_ENVIRONMENT
    stranger = sign_retention_request(testkit_dir / "stranger", "1")
    with pytest.raises(VerificationException) as untrusted:
        apple_verifier(testkit_dir, Environment.SANDBOX).verify_and_decode_realtime_request(stranger)
    assert untrusted.value.status == VerificationStatus.VERIFICATION_FAILURE
    # Every field is required: Apple's model refuses a request without userLocale (not with a VerificationException).
    incomplete = sign_retention_payload(testkit_dir, testkit_dir / "ca", {
        "originalTransactionId": "1", "appAppleId": APP_APPLE_ID, "productId": PRODUCT_MONTHLY,
        "requestIdentifier": str(uuid.uuid4()), "environment": "Sandbox", "signedDate": "now"})
    with pytest.raises(ClassValidationError) as missing:
        apple_verifier(testkit_dir, Environment.SANDBOX).verify_and_decode_realtime_request(incomplete)
    assert [repr(error) for error in missing.value.exceptions] == ["KeyError('userLocale')"]


# MARK: - End to end through the real binary


@pytest.fixture(scope="module")
def retaining(tmp_path_factory, testkit_dir, signing_key):
    """A server trusting the test root for Production and Sandbox, on a SQLite ledger, with the app's appAppleId and
    a retention list: the offer for active subscribers, a switch for those who renew automatically, a message."""
    directory = tmp_path_factory.mktemp("retention")
    ledger = directory / "ledger.sqlite"
    config = {
        "listen": {"host": "127.0.0.1", "port": 0},
        "storage": f"sqlite:{ledger}",
        "trust": {"rootCertificates": [str(testkit_dir / "ca" / "root.cer")],
                  "environments": ["Production", "Sandbox"]},
        "apps": [{
            "bundleId": BUNDLE_ID, "issuerId": ISSUER_ID, "appAppleId": APP_APPLE_ID,
            "keys": [{"keyId": signing_key.key_id, "privateKeyFile": str(signing_key.path)}],
            "offers": [{"id": STAY, "type": "promotional", "productIds": [PRODUCT_MONTHLY],
                        "eligibility": {"daysSubscribed": {"min": 30}}, "limits": {"perCustomer": 1}}],
            "retention": [
                {"productIds": [PRODUCT_MONTHLY], "when": {"subscriptionStatus": ["active"]},
                 "promotionalOffer": {"offerId": STAY, "productId": PRODUCT_MONTHLY,
                                      "messages": {"en-US": OFFER_MESSAGE, "*": OFFER_FALLBACK}}},
                {"productIds": [PRODUCT_MONTHLY], "when": {"autoRenew": True},
                 "alternateProduct": {"productId": PRODUCT_YEARLY, "messages": {"*": SWITCH_MESSAGE}}},
                {"productIds": [PRODUCT_MONTHLY, PRODUCT_YEARLY], "message": {"messages": {"*": MESSAGE}}},
            ],
        }],
    }
    path = directory / "offer-signer.json"
    path.write_text(json.dumps(config, indent=2))
    check = run_cli("config", "check", "--config", str(path))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "retention[0]: promotionalOffer retention_stay" in check.stdout, check.stdout
    server = Server.start(path, directory)
    yield server, ledger, path, directory
    status = server.stop(signal.SIGTERM, timeout=5)
    assert status == 0, server.stderr_path.read_text(errors="replace")


def rows(ledger: Path, sql: str, *parameters) -> list[tuple]:
    with closing(sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)) as connection:
        return connection.execute(sql, parameters).fetchall()


def subscribe(server, directory: Path, ca: Path, customer: str, *, subscribed_days: int = 60, auto_renew: bool = True,
              environment: str = "Sandbox") -> None:
    """Apple's DID_RENEW for `customer`: renewed 10 days ago for 30 days, the run begun `subscribed_days` ago."""
    now = int(time.time() * 1000)
    transaction = transaction_payload(now, -20, original_transaction_id=customer, environment=environment,
                                      transactionId=customer + "9")
    renewal = renewal_payload(now, customer, environment=environment, autoRenewStatus=1 if auto_renew else 0,
                              recentSubscriptionStartDate=now - subscribed_days * DAY_MS)
    token = sign_notification(directory, ca, "DID_RENEW", environment=environment,
                              app_apple_id=APP_APPLE_ID if environment == "Production" else None,
                              transaction=transaction, renewal=renewal)
    reply = server.post(NOTIFICATIONS_PATH, {"signedPayload": token})
    assert (reply.status, reply.json()) == (200, {"result": "recorded"}), reply.body


def ask(target, token: str):
    return target.post(RETENTION_PATH, {"signedPayload": token})


def test_an_eligible_subscriber_gets_the_offer_and_a_retry_the_same(retaining, testkit_dir, signing_key):
    server, ledger, _, directory = retaining
    ca = testkit_dir / "ca"
    customer = "7000000000000001"
    subscribe(server, directory, ca, customer)
    request_id = str(uuid.uuid4())
    reply = ask(server, sign_retention_request(ca, customer, request_id=request_id))
    assert reply.status == 200, reply.body
    assert reply.header("Content-Type") == "application/json"
    body = apple_model(reply.json())
    assert str(body.promotionalOffer.messageIdentifier) == OFFER_MESSAGE.lower()
    claims = offer_claims(body.promotionalOffer.promotionalOfferSignatureV2, signing_key)
    assert claims["transactionId"] == customer
    assert (claims["offerIdentifier"], claims["productId"], claims["bid"], claims["iss"]) == (
        STAY, PRODUCT_MONTHLY, BUNDLE_ID, ISSUER_ID)
    assert abs(claims["iat"] - time.time()) < 60
    recorded = rows(ledger, "SELECT offer_id, nonce, idempotency_key, bundle_id FROM issued_signatures "
                            "WHERE customer_key = ?", customer)
    assert recorded == [(STAY, claims["nonce"], f"retention:{request_id}", f"sandbox:{BUNDLE_ID}")]

    # Apple's retry, signed again a moment later: the same answer, nothing more recorded.
    time.sleep(0.01)
    again = ask(server, sign_retention_request(ca, customer, request_id=request_id))
    assert (again.status, again.body) == (200, reply.body)
    # A new request: the offer's one place is taken, so the next entry, the switch, answers.
    switched = ask(server, sign_retention_request(ca, customer))
    assert switched.status == 200, switched.body
    assert apple_model(switched.json()).alternateProduct.productId == PRODUCT_YEARLY
    assert len(rows(ledger, "SELECT nonce FROM issued_signatures WHERE customer_key = ?", customer)) == 1
    # The same identifier for another request is refused.
    reused = ask(server, sign_retention_request(ca, customer, request_id=request_id, locale="fr-FR"))
    assert reused.status == 422, reused.body


def test_an_ineligible_subscriber_gets_a_switch_or_a_message(retaining, testkit_dir):
    server, ledger, _, directory = retaining
    ca = testkit_dir / "ca"
    # Five days in: the offer's own rule refuses; renewing automatically: the switch.
    recent = "7000000000000101"
    subscribe(server, directory, ca, recent, subscribed_days=5)
    switched = ask(server, sign_retention_request(ca, recent))
    assert switched.status == 200, switched.body
    assert apple_model(switched.json()).alternateProduct.productId == PRODUCT_YEARLY
    assert switched.json() == {"alternateProduct": {"messageIdentifier": SWITCH_MESSAGE, "productId": PRODUCT_YEARLY}}
    # Auto-renew off: the message.
    leaving = "7000000000000102"
    subscribe(server, directory, ca, leaving, subscribed_days=5, auto_renew=False)
    message = ask(server, sign_retention_request(ca, leaving, locale="de-DE"))
    assert message.status == 200, message.body
    assert str(apple_model(message.json()).message.messageIdentifier) == MESSAGE
    # Nothing known of the customer: only the entry without a rule answers.
    unknown = ask(server, sign_retention_request(ca, "7000000000000199", product_id=PRODUCT_YEARLY))
    assert unknown.json() == {"message": {"messageIdentifier": MESSAGE}}
    # A product no entry serves: 404, so Apple shows its default message.
    other = ask(server, sign_retention_request(ca, recent, product_id="com.example.interop.lifetime"))
    assert (other.status, other.json()["error"]["code"]) == (404, "no_retention_answer")
    assert rows(ledger, "SELECT count(*) FROM issued_signatures WHERE customer_key IN (?, ?)", recent, leaving) == [(0,)]


def test_production_requests_need_the_apps_apple_id(retaining, testkit_dir, signing_key):
    server, ledger, _, directory = retaining
    ca = testkit_dir / "ca"
    customer = "7000000000000201"
    subscribe(server, directory, ca, customer, environment="Production")
    reply = ask(server, sign_retention_request(ca, customer, environment="Production", app_apple_id=APP_APPLE_ID))
    assert reply.status == 200, reply.body
    claims = offer_claims(apple_model(reply.json()).promotionalOffer.promotionalOfferSignatureV2, signing_key)
    assert claims["transactionId"] == customer
    assert rows(ledger, "SELECT bundle_id FROM issued_signatures WHERE customer_key = ?", customer) == [(BUNDLE_ID,)]
    wrong = ask(server, sign_retention_request(ca, customer, environment="Production", app_apple_id=42))
    assert (wrong.status, wrong.json()["error"].get("reason")) == (400, "wrong_app"), wrong.body
    tampered_reply = ask(server, tampered(sign_retention_request(ca, customer)))
    assert (tampered_reply.status, tampered_reply.json()["error"].get("reason")) == (400, "bad_signature")
    incomplete = sign_retention_payload(directory, ca, {
        "originalTransactionId": customer, "appAppleId": APP_APPLE_ID, "productId": PRODUCT_MONTHLY,
        "requestIdentifier": str(uuid.uuid4()), "environment": "Sandbox", "signedDate": "now"})
    missing = ask(server, incomplete)
    assert missing.status == 400
    assert missing.json()["error"]["message"] == 'signedPayload: field "userLocale" is required'


def test_retention_through_nginx(retaining, testkit_dir, signing_key, tmp_path):
    server, ledger, _, directory = retaining
    ca = testkit_dir / "ca"
    customer = "7000000000000301"
    subscribe(server, directory, ca, customer)
    request_id = str(uuid.uuid4())
    with nginx_in_front_of(server.port, tmp_path / "nginx") as proxy:
        reply = ask(proxy, sign_retention_request(ca, customer, request_id=request_id))
        # A 200 is in time by the service's own clock: past its 300 ms it answers 503 deadline_exceeded (and nginx
        # gives up at Apple's 700 ms with a 504).
        assert reply.status == 200, reply.body
        claims = offer_claims(apple_model(reply.json()).promotionalOffer.promotionalOfferSignatureV2, signing_key)
        assert claims["transactionId"] == customer
        again = ask(proxy, sign_retention_request(ca, customer, request_id=request_id))
        assert (again.status, again.body) == (200, reply.body)
        message = ask(proxy, sign_retention_request(ca, "7000000000000399"))
        assert message.json() == {"message": {"messageIdentifier": MESSAGE}}
        refused = ask(proxy, "a.b.c")
        assert (refused.status, refused.json()["error"]["code"]) == (400, "untrusted_signed_data")
    assert len(rows(ledger, "SELECT nonce FROM issued_signatures WHERE customer_key = ?", customer)) == 1
