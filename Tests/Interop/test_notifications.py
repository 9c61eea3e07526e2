"""Issue 9: App Store Server Notifications V2.

Apple's own Python library (`appstoreserverlibrary`'s `SignedDataVerifier`) judges the test kit's notifications
(`offer-signer-testkit sign notification`) under the test root: it accepts them in both environments (Production
with the app's `appAppleId`) with their nested transaction and renewal info, and refuses them tampered.

Then the real binary, on a SQLite ledger, receives them at `POST /v1/apple/notifications/{bundleId}`: a customer who
subscribes and redeems a promotional offer (a notification whose transaction carries `offerType` 2) is refused the
same offer by `perCustomer`; a customer who sends an older transaction is judged by the newer state Apple notified
(EXPIRED), and an old lapsed transaction cannot hide a DID_RENEW; a duplicate changes nothing; a tampered
notification is refused and nothing is stored. The ledger is read with Python's `sqlite3`, not the service's code.
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

import pytest
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.NotificationTypeV2 import NotificationTypeV2
from appstoreserverlibrary.models.Subtype import Subtype
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, VerificationException, VerificationStatus
from nginx_proxy import TestTLS, nginx_in_front_of

from support import (
    BUNDLE_ID,
    ISSUER_ID,
    PRODUCT_MONTHLY,
    PROMO_PATH,
    Server,
    b64url_decode,
    renewal_payload,
    run_cli,
    run_testkit,
    sign_with_testkit,
    signed_nonce,
    transaction_payload,
)

APP_APPLE_ID = 1234567890
NOTIFICATIONS_PATH = f"/v1/apple/notifications/{BUNDLE_ID}"
ONCE = "notified_once"  # one place per customer
WELCOME_BACK = "notified_welcome_back"  # customers lapsed 30 days or more


def sign_notification(directory: Path, ca: Path, notification_type: str, *, subtype: str | None = None,
                      environment: str | None = None, app_apple_id: int | None = None,
                      notification_uuid: str | None = None, transaction: dict | None = None,
                      renewal: dict | None = None, bundle_id: str | None = BUNDLE_ID) -> str:
    """`offer-signer-testkit sign notification` with these options; the payloads are written to `directory`."""
    args = ["sign", "notification", "--ca", str(ca), "--type", notification_type]
    for option, value in (("--subtype", subtype), ("--environment", environment), ("--bundle-id", bundle_id),
                          ("--uuid", notification_uuid),
                          ("--app-apple-id", None if app_apple_id is None else str(app_apple_id))):
        if value is not None:
            args += [option, value]
    for option, payload in (("--transaction", transaction), ("--renewal-info", renewal)):
        if payload is not None:
            path = directory / f"payload-{uuid.uuid4()}.json"
            path.write_text(json.dumps(payload))
            args += [option, str(path)]
    result = run_testkit(*args)
    assert result.returncode == 0, result.stderr
    token = result.stdout.strip()
    assert token.count(".") == 2, token
    return token


def tampered(token: str) -> str:
    """The same header and signature over a payload one byte different."""
    header, payload, signature = token.split(".")
    raw = bytearray(b64url_decode(payload))
    index = raw.index(b'"notificationType":"') + len(b'"notificationType":"')
    raw[index] = ord("X")
    forged = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
    return f"{header}.{forged}.{signature}"


def apple_verifier(testkit_dir: Path, environment: Environment, app_apple_id: int | None = None,
                   bundle_id: str = BUNDLE_ID) -> SignedDataVerifier:
    root = (testkit_dir / "ca" / "root.cer").read_bytes()
    return SignedDataVerifier([root], False, environment, bundle_id, app_apple_id)


# MARK: - Apple's library judges the test kit's notifications


@pytest.mark.parametrize("environment,app_apple_id", [(Environment.SANDBOX, None), (Environment.PRODUCTION, APP_APPLE_ID)])
def test_apple_library_accepts_testkit_notifications(testkit_dir, environment, app_apple_id):
    now = int(time.time() * 1000)
    transaction = transaction_payload(now, -20, environment=environment.value, offerType=2, offerIdentifier=ONCE)
    renewal = renewal_payload(now, environment=environment.value)
    token = sign_notification(testkit_dir, testkit_dir / "ca", "OFFER_REDEEMED", subtype="UPGRADE",
                              environment=environment.value, app_apple_id=app_apple_id,
                              notification_uuid="0d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6", transaction=transaction,
                              renewal=renewal)
    verifier = apple_verifier(testkit_dir, environment, APP_APPLE_ID if app_apple_id else None)
    decoded = verifier.verify_and_decode_notification(token)
    assert decoded.notificationType == NotificationTypeV2.OFFER_REDEEMED
    assert decoded.subtype == Subtype.UPGRADE
    assert decoded.notificationUUID == "0d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"
    assert decoded.version == "2.0"
    assert decoded.data.environment == environment
    assert decoded.data.appAppleId == app_apple_id
    assert decoded.data.bundleId == BUNDLE_ID
    # The nested data verifies with the same library, as the app's.
    decoded_transaction = verifier.verify_and_decode_signed_transaction(decoded.data.signedTransactionInfo)
    assert decoded_transaction.offerIdentifier == ONCE
    assert decoded_transaction.rawOfferType == 2
    decoded_renewal = verifier.verify_and_decode_renewal_info(decoded.data.signedRenewalInfo)
    assert decoded_renewal.originalTransactionId == "2000000000000001"
    # One byte changed: refused.
    with pytest.raises(VerificationException) as refused:
        verifier.verify_and_decode_notification(tampered(token))
    assert refused.value.status == VerificationStatus.VERIFICATION_FAILURE


def test_apple_library_checks_what_the_service_checks(testkit_dir):
    production = sign_notification(testkit_dir, testkit_dir / "ca", "TEST", environment="Production",
                                   app_apple_id=APP_APPLE_ID)
    with pytest.raises(VerificationException) as wrong_app:
        apple_verifier(testkit_dir, Environment.PRODUCTION, 42).verify_and_decode_notification(production)
    assert wrong_app.value.status == VerificationStatus.INVALID_APP_IDENTIFIER
    with pytest.raises(VerificationException) as wrong_environment:
        apple_verifier(testkit_dir, Environment.SANDBOX).verify_and_decode_notification(production)
    assert wrong_environment.value.status == VerificationStatus.INVALID_ENVIRONMENT
    stranger = sign_notification(testkit_dir, testkit_dir / "stranger", "TEST", environment="Sandbox")
    with pytest.raises(VerificationException) as untrusted:
        apple_verifier(testkit_dir, Environment.SANDBOX).verify_and_decode_notification(stranger)
    assert untrusted.value.status == VerificationStatus.VERIFICATION_FAILURE
    # An unknown type is kept raw by Apple's library, as by the service.
    future = sign_notification(testkit_dir, testkit_dir / "ca", "FUTURE_TYPE", environment="Sandbox")
    decoded = apple_verifier(testkit_dir, Environment.SANDBOX).verify_and_decode_notification(future)
    assert decoded.notificationType is None and decoded.rawNotificationType == "FUTURE_TYPE"


def test_a_whole_payload_is_signed_as_written(testkit_dir):
    now = int(time.time() * 1000)
    path = testkit_dir / f"notification-{uuid.uuid4()}.json"
    path.write_text(json.dumps({
        "notificationType": "RENEWAL_EXTENSION", "subtype": "SUMMARY", "notificationUUID": str(uuid.uuid4()),
        "version": "2.0", "signedDate": "now",
        "summary": {"bundleId": BUNDLE_ID, "environment": "Sandbox", "productId": PRODUCT_MONTHLY,
                    "requestIdentifier": str(uuid.uuid4()), "succeededCount": 3, "failedCount": 0},
    }))
    result = run_testkit("sign", "notification", "--ca", str(testkit_dir / "ca"), "--payload", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    decoded = apple_verifier(testkit_dir, Environment.SANDBOX).verify_and_decode_notification(result.stdout.strip())
    assert decoded.summary.succeededCount == 3
    assert abs(decoded.signedDate - now) < 60_000
    mixed = run_testkit("sign", "notification", "--ca", str(testkit_dir / "ca"), "--payload", str(path),
                        "--type", "TEST")
    assert mixed.returncode == 2
    assert "--type cannot be combined with --payload" in mixed.stderr


# MARK: - End to end through the real binary


@pytest.fixture(scope="module")
def notified(tmp_path_factory, testkit_dir, signing_key):
    """A server trusting the test root for Production and Sandbox, on a SQLite ledger, with the app's appAppleId."""
    directory = tmp_path_factory.mktemp("notifications")
    ledger = directory / "ledger.sqlite"
    config = {
        "listen": {"host": "127.0.0.1", "port": 0},
        "storage": f"sqlite:{ledger}",
        "trust": {"rootCertificates": [str(testkit_dir / "ca" / "root.cer")],
                  "environments": ["Production", "Sandbox"]},
        "apps": [{
            "bundleId": BUNDLE_ID, "issuerId": ISSUER_ID, "appAppleId": APP_APPLE_ID,
            "keys": [{"keyId": signing_key.key_id, "privateKeyFile": str(signing_key.path)}],
            "offers": [
                {"id": ONCE, "type": "promotional", "productIds": [PRODUCT_MONTHLY], "limits": {"perCustomer": 1}},
                {"id": WELCOME_BACK, "type": "promotional", "productIds": [PRODUCT_MONTHLY],
                 "eligibility": {"all": [{"subscriptionStatus": ["expired"]}, {"daysSinceExpiry": {"min": 30}}]}},
            ],
        }],
    }
    path = directory / "offer-signer.json"
    path.write_text(json.dumps(config, indent=2))
    check = run_cli("config", "check", "--config", str(path))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "appAppleId" not in check.stdout, check.stdout
    server = Server.start(path, directory)
    yield server, ledger, path, directory
    status = server.stop(signal.SIGTERM, timeout=5)
    assert status == 0, server.stderr_path.read_text(errors="replace")


def rows(ledger: Path, sql: str, *parameters) -> list[tuple]:
    with closing(sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)) as connection:
        return connection.execute(sql, parameters).fetchall()


def notify(server: Server, token: str):
    return server.post(NOTIFICATIONS_PATH, {"signedPayload": token})


def ask(server: Server, offer: str, transaction: str, renewal: str | None = None):
    body = {"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY, "offerId": offer, "signedTransaction": transaction}
    if renewal:
        body["signedRenewalInfo"] = renewal
    return server.post(PROMO_PATH, body)


def test_a_notified_redemption_is_refused_by_per_customer(notified, testkit_dir, signing_key):
    server, ledger, _, directory = notified
    ca = testkit_dir / "ca"
    now = int(time.time() * 1000)
    customer = "3000000000000001"
    subscribed = transaction_payload(now, -25, original_transaction_id=customer, environment="Production")
    reply = notify(server, sign_notification(directory, ca, "SUBSCRIBED", subtype="INITIAL_BUY",
                                             environment="Production", app_apple_id=APP_APPLE_ID,
                                             transaction=subscribed))
    assert (reply.status, reply.json()) == (200, {"result": "recorded"}), reply.body
    signed = sign_with_testkit(directory, ca, "transaction", subscribed)
    first = ask(server, ONCE, signed)
    assert first.status == 200, first.body
    nonce = signed_nonce(first, signing_key, ONCE)

    redeemed = transaction_payload(now, -30, original_transaction_id=customer, environment="Production",
                                   transactionId="3000000000000002", offerType=2, offerIdentifier=ONCE)
    redeemed["purchaseDate"] = now
    reply = notify(server, sign_notification(directory, ca, "OFFER_REDEEMED", subtype="UPGRADE",
                                             environment="Production", app_apple_id=APP_APPLE_ID,
                                             transaction=redeemed))
    assert (reply.status, reply.json()) == (200, {"result": "recorded"}), reply.body
    assert rows(ledger, "SELECT transaction_id, nonce, offer_id, revoked_at_ms FROM redemptions WHERE customer_key = ?",
                customer) == [("3000000000000002", nonce, ONCE, None)]

    again = ask(server, ONCE, signed)
    assert again.status == 403, again.body
    assert again.json()["error"]["reasons"] == [{"rule": "limits", "code": "per_customer_limit_reached"}]

    # Refunded: recorded on the redemption, which still counts (the customer used the offer once).
    refunded = dict(redeemed, revocationDate=now, revocationReason=0, signedDate=now + 1000)
    reply = notify(server, sign_notification(directory, ca, "REFUND", environment="Production",
                                             app_apple_id=APP_APPLE_ID, transaction=refunded))
    assert reply.status == 200, reply.body
    assert rows(ledger, "SELECT revoked_at_ms FROM redemptions WHERE customer_key = ?", customer) == [(now,)]
    assert ask(server, ONCE, signed).status == 403


def test_the_newer_state_apple_notified_judges_an_older_transaction(notified, testkit_dir):
    server, ledger, config, directory = notified
    ca = testkit_dir / "ca"
    now = int(time.time() * 1000)

    # Lapsed 70 days by its first period's transaction: alone, welcome back.
    lapsed = "3000000000000101"
    old = sign_with_testkit(directory, ca, "transaction", transaction_payload(now, 70, original_transaction_id=lapsed))
    assert ask(server, WELCOME_BACK, old).status == 200
    # Apple told of a later period, expired 10 days ago: the customer is judged lapsed 10 days.
    later = transaction_payload(now, 10, original_transaction_id=lapsed, transactionId="3000000000000102")
    reply = notify(server, sign_notification(directory, ca, "EXPIRED", subtype="VOLUNTARY", environment="Sandbox",
                                             transaction=later, renewal=renewal_payload(now, lapsed,
                                                                                        expirationIntent=1)))
    assert reply.status == 200, reply.body
    judged = ask(server, WELCOME_BACK, old)
    assert judged.status == 403, judged.body
    assert judged.json()["error"]["reasons"] == [{"rule": "daysSinceExpiry", "code": "days_since_expiry_out_of_range"}]
    request = directory / "request-lapsed.json"
    request.write_text(json.dumps({"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY, "offerId": WELCOME_BACK,
                                   "signedTransaction": old}))
    explained = run_cli("explain", "--config", str(config), "--request", str(request))
    assert explained.returncode == 3, explained.stdout + explained.stderr
    assert ("sources: transaction from Apple (server-known state, newer than the request's); renewal info "
            "from Apple") in explained.stdout, explained.stdout

    # The reverse: an old lapsed transaction cannot hide a renewal Apple notified.
    renewed = "3000000000000201"
    stale = sign_with_testkit(directory, ca, "transaction", transaction_payload(now, 70, original_transaction_id=renewed))
    assert ask(server, WELCOME_BACK, stale).status == 200
    current = transaction_payload(now, -28, original_transaction_id=renewed, transactionId="3000000000000202")
    reply = notify(server, sign_notification(directory, ca, "DID_RENEW", environment="Sandbox", transaction=current))
    assert reply.status == 200, reply.body
    hidden = ask(server, WELCOME_BACK, stale)
    assert hidden.status == 403, hidden.body
    assert {"rule": "subscriptionStatus", "code": "subscription_status_not_allowed"} in hidden.json()["error"]["reasons"]
    assert rows(ledger, "SELECT transaction_id FROM subscription_states WHERE original_transaction_id = ?",
                renewed) == [("3000000000000202",)]


def test_duplicates_change_nothing_and_tampered_notifications_store_nothing(notified, testkit_dir):
    server, ledger, _, directory = notified
    ca = testkit_dir / "ca"
    now = int(time.time() * 1000)
    customer = "3000000000000301"
    notification_uuid = str(uuid.uuid4())
    token = sign_notification(directory, ca, "DID_RENEW", environment="Sandbox", notification_uuid=notification_uuid,
                              transaction=transaction_payload(now, -29, original_transaction_id=customer,
                                                              offerType=2, offerIdentifier=ONCE))

    def snapshot():
        return (rows(ledger, "SELECT * FROM notifications ORDER BY notification_uuid"),
                rows(ledger, "SELECT * FROM redemptions ORDER BY id"),
                rows(ledger, "SELECT * FROM subscription_states ORDER BY bundle_id, original_transaction_id"),
                rows(ledger, "SELECT * FROM subscription_runs ORDER BY bundle_id, original_transaction_id"))

    first = notify(server, token)
    assert (first.status, first.json()) == (200, {"result": "recorded"}), first.body
    before = snapshot()
    assert rows(ledger, "SELECT notification_type, original_transaction_id FROM notifications "
                        "WHERE notification_uuid = ?", notification_uuid) == [("DID_RENEW", customer)]
    assert rows(ledger, "SELECT count(*) FROM redemptions WHERE customer_key = ?", customer) == [(1,)]
    for _ in range(3):
        again = notify(server, token)
        assert (again.status, again.json()) == (200, {"result": "duplicate"}), again.body
    assert snapshot() == before

    forged_uuid = str(uuid.uuid4())
    forged = sign_notification(directory, ca, "DID_RENEW", environment="Sandbox", notification_uuid=forged_uuid,
                               transaction=transaction_payload(now, -29, original_transaction_id="3000000000000302"))
    refused = notify(server, tampered(forged))
    assert refused.status == 400, refused.body
    error = refused.json()["error"]
    assert (error["code"], error["reason"], error["field"]) == ("untrusted_signed_data", "bad_signature",
                                                                "signedPayload")
    stranger = notify(server, sign_notification(directory, testkit_dir / "stranger", "TEST", environment="Sandbox"))
    assert stranger.status == 400 and stranger.json()["error"]["reason"] == "untrusted_chain", stranger.body
    other_app = server.post("/v1/apple/notifications/com.example.other", {"signedPayload": forged})
    assert other_app.status == 404 and other_app.json()["error"]["code"] == "unknown_app", other_app.body
    unknown_member = server.post(NOTIFICATIONS_PATH, {"signedPayload": forged, "notificationType": "TEST"})
    assert unknown_member.status == 400 and unknown_member.json()["error"]["code"] == "invalid_request"
    assert snapshot() == before
    assert rows(ledger, "SELECT count(*) FROM notifications WHERE notification_uuid = ?", forged_uuid) == [(0,)]

    metrics = server.request("GET", "/metrics").body.decode()
    assert (f'offer_signer_notifications_total{{app="{BUNDLE_ID}",type="DID_RENEW",result="duplicate"}} 3'
            in metrics), metrics
    assert (f'offer_signer_notifications_total{{app="{BUNDLE_ID}",type="none",result="bad_signature"}} 1'
            in metrics), metrics


def test_apple_reaches_the_notification_route_through_nginx(notified, testkit_dir):
    """Apple posts only to HTTPS: the shipped nginx configuration in front, a notification recorded once through it,
    its retry a duplicate, and a tampered one refused with the service's own JSON answer."""
    server, ledger, _, directory = notified
    ca = testkit_dir / "ca"
    customer = "3000000000000401"
    notification_uuid = str(uuid.uuid4())
    token = sign_notification(directory, ca, "DID_RENEW", environment="Sandbox", notification_uuid=notification_uuid,
                              transaction=transaction_payload(int(time.time() * 1000), -29,
                                                              original_transaction_id=customer))
    tls = TestTLS.create(directory / "nginx-tls")
    with nginx_in_front_of(server.port, directory / "nginx", tls) as proxy:
        first = proxy.post(NOTIFICATIONS_PATH, {"signedPayload": token})
        assert (first.status, first.json()) == (200, {"result": "recorded"}), first.body
        again = proxy.post(NOTIFICATIONS_PATH, {"signedPayload": token})
        assert (again.status, again.json()) == (200, {"result": "duplicate"}), again.body
        refused = proxy.post(NOTIFICATIONS_PATH, {"signedPayload": tampered(token)})
        assert refused.status == 400 and refused.json()["error"]["reason"] == "bad_signature", refused.body
    assert rows(ledger, "SELECT count(*) FROM notifications WHERE notification_uuid = ?", notification_uuid) == [(1,)]
