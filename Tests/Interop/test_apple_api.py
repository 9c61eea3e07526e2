"""The App Store Server API side, judged from outside: `offer-signer-testkit apple-api`'s fake and `apple status`.

1. The authentication JWT `apple status` sends (captured by the fake's --token-file) verifies with PyJWT under the
   app's public key, with exactly the header and claims Apple documents (APPLE-S2S.md section 3.2); a changed byte
   fails.
2. Apple's own Python client (`AppStoreServerAPIClient`, pointed at the fake) gets the fake's statuses and history
   pages parsed by its own models, and Apple's `SignedDataVerifier` accepts every JWS in them under the test root:
   the fake answers in Apple's shapes, signed as `offer-signer-testkit sign` signs. Its errors carry Apple's errorCode, and its
   429 a Retry-After in Unix milliseconds.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path

import jwt
import pytest
from appstoreserverlibrary.api_client import APIException, AppStoreServerAPIClient
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.NotificationHistoryRequest import NotificationHistoryRequest
from appstoreserverlibrary.models.Status import Status
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, VerificationException

from support import BUNDLE_ID, ISSUER_ID, KEY_ID, KeyMaterial, KitFake, generate_key, run_cli, run_testkit

APP_APPLE_ID = 1234567890


def state(fault: dict | None = None) -> dict:
    subscription = {
        "subscriptionGroupIdentifier": "21000001",
        "transaction": {"transactionId": "2000000000000009", "originalTransactionId": "2000000000000001",
                        "productId": "com.example.interop.pro.monthly", "subscriptionGroupIdentifier": "21000001",
                        "purchaseDate": "-10d", "expiresDate": "+20d", "type": "Auto-Renewable Subscription",
                        "offerType": 2, "offerIdentifier": "interop_open_offer"},
        "renewalInfo": {"originalTransactionId": "2000000000000001", "autoRenewStatus": 1,
                        "productId": "com.example.interop.pro.monthly",
                        "autoRenewProductId": "com.example.interop.pro.monthly", "renewalDate": "+20d"},
    }
    notifications = [
        {"payload": {"notificationType": "DID_RENEW", "signedDate": f"-{25 - index}m",
                     "data": {"status": 1, "signedTransactionInfo": dict(subscription["transaction"],
                                                                          transactionId=str(2000000000000100 + index))}},
         "sendAttempts": [{"attemptDate": f"-{25 - index}m", "sendAttemptResult": "SUCCESS"}]}
        for index in range(25)
    ]
    production = {"subscriptions": [subscription], "notifications": notifications}
    if fault:
        production["fault"] = fault
    return {"bundleId": BUNDLE_ID, "issuerId": ISSUER_ID, "keyId": KEY_ID, "appAppleId": APP_APPLE_ID,
            "environments": {"Production": production}}


class Fake(KitFake):
    """`offer-signer-testkit apple-api` on a free port, with its state file and the last token it saw."""

    def __init__(self, directory: Path, key: KeyMaterial):
        self.directory = directory
        self.ca = directory / "ca"
        assert run_testkit("ca", "--out", str(self.ca)).returncode == 0
        self.token_path = directory / "token.txt"
        super().__init__("apple-api", directory / "state.json", directory / "fake.stderr",
                         ["--ca", str(self.ca), "--public-key", str(key.path), "--token-file", str(self.token_path)],
                         state())


@pytest.fixture()
def app_key(tmp_path) -> KeyMaterial:
    return KeyMaterial.load(KEY_ID, generate_key(tmp_path, KEY_ID))


@pytest.fixture()
def fake(tmp_path, app_key):
    running = Fake(tmp_path, app_key)
    yield running
    running.stop()


def write_config(directory: Path, key: KeyMaterial, fake: Fake) -> Path:
    config = {
        "storage": "memory",
        "trust": {"rootCertificates": [str(fake.ca / "root.cer")], "environments": ["Production", "Sandbox"]},
        "apps": [{"bundleId": BUNDLE_ID, "issuerId": ISSUER_ID, "appAppleId": APP_APPLE_ID,
                  "keys": [{"keyId": key.key_id, "privateKeyFile": str(key.path)}],
                  "appStoreServerAPI": {"keyId": key.key_id, "baseURL": fake.base_url}, "offers": []}],
    }
    path = directory / "offer-signer.json"
    path.write_text(json.dumps(config))
    return path


def apple_client(key: KeyMaterial, fake: Fake) -> AppStoreServerAPIClient:
    client = AppStoreServerAPIClient(key.pem, key.key_id, ISSUER_ID, BUNDLE_ID, Environment.PRODUCTION)
    client._base_url = fake.base_url  # Apple's client has no public way to name another host.
    return client


def apple_verifier(fake: Fake) -> SignedDataVerifier:
    return SignedDataVerifier([(fake.ca / "root.cer").read_bytes()], False, Environment.PRODUCTION, BUNDLE_ID,
                              APP_APPLE_ID)


def test_our_request_jwt_is_exactly_apples_and_verifies_with_pyjwt(tmp_path, app_key, fake):
    config = write_config(tmp_path, app_key, fake)
    before = int(time.time())
    result = run_cli("apple", "status", "--config", str(config), "--transaction", "2000000000000009")
    after = int(time.time())
    assert result.returncode == 0, result.stderr
    assert "originalTransactionId 2000000000000001: ACTIVE" in result.stdout
    token = fake.token_path.read_text()
    assert token not in result.stdout + result.stderr
    assert fake.token_path.stat().st_mode & 0o777 == 0o600

    assert jwt.get_unverified_header(token) == {"alg": "ES256", "kid": KEY_ID, "typ": "JWT"}
    claims = jwt.decode(token, app_key.public_key, algorithms=["ES256"], audience="appstoreconnect-v1",
                        issuer=ISSUER_ID, options={"require": ["iss", "iat", "exp", "aud", "bid"]})
    assert set(claims) == {"iss", "iat", "exp", "aud", "bid"}
    assert claims["bid"] == BUNDLE_ID
    assert before - 1 <= claims["iat"] <= after + 1
    assert claims["exp"] - claims["iat"] == 300

    header, payload, signature = token.split(".")
    tampered = f"{header}.{payload[:-2]}{'A' if payload[-2] != 'A' else 'B'}{payload[-1]}.{signature}"
    with pytest.raises(jwt.InvalidTokenError):
        jwt.decode(tampered, app_key.public_key, algorithms=["ES256"], audience="appstoreconnect-v1")


def test_each_call_gets_a_new_token(tmp_path, app_key, fake):
    config = write_config(tmp_path, app_key, fake)
    tokens = []
    for _ in range(2):
        assert run_cli("apple", "status", "--config", str(config), "--transaction", "2000000000000009").returncode == 0
        tokens.append(fake.token_path.read_text())
        time.sleep(1.1)
    first, second = (jwt.decode(t, app_key.public_key, algorithms=["ES256"], audience="appstoreconnect-v1")
                     for t in tokens)
    assert second["iat"] > first["iat"]


def test_apples_client_parses_the_fakes_statuses_and_apples_verifier_accepts_them(app_key, fake):
    response = apple_client(app_key, fake).get_all_subscription_statuses("2000000000000009")
    assert response.environment == Environment.PRODUCTION
    assert response.bundleId == BUNDLE_ID
    assert response.appAppleId == APP_APPLE_ID
    [group] = response.data
    assert group.subscriptionGroupIdentifier == "21000001"
    [item] = group.lastTransactions
    assert item.status == Status.ACTIVE
    assert item.originalTransactionId == "2000000000000001"
    verifier = apple_verifier(fake)
    transaction = verifier.verify_and_decode_signed_transaction(item.signedTransactionInfo)
    assert transaction.transactionId == "2000000000000009"
    assert transaction.offerIdentifier == "interop_open_offer"
    assert transaction.environment == Environment.PRODUCTION
    renewal = verifier.verify_and_decode_renewal_info(item.signedRenewalInfo)
    assert renewal.originalTransactionId == "2000000000000001"
    header, payload, signature = item.signedTransactionInfo.split(".")
    tampered = f"{header}.{payload[:-2]}{'A' if payload[-2] != 'A' else 'B'}{payload[-1]}.{signature}"
    with pytest.raises(VerificationException):
        verifier.verify_and_decode_signed_transaction(tampered)


def test_apples_client_walks_the_fakes_history_pages_and_apples_verifier_accepts_the_notifications(app_key, fake):
    client = apple_client(app_key, fake)
    now = int(time.time() * 1000)
    request = NotificationHistoryRequest(startDate=now - 3_600_000, endDate=now + 60_000)
    pages, token = [], None
    while True:
        page = client.get_notification_history(token, request)
        pages.append(page)
        if not page.hasMore:
            break
        token = page.paginationToken
    assert [len(page.notificationHistory) for page in pages] == [20, 5]
    verifier = apple_verifier(fake)
    dates = []
    for item in (entry for page in pages for entry in page.notificationHistory):
        decoded = verifier.verify_and_decode_notification(item.signedPayload)
        assert decoded.rawNotificationType == "DID_RENEW"
        assert decoded.data.appAppleId == APP_APPLE_ID
        transaction = verifier.verify_and_decode_signed_transaction(decoded.data.signedTransactionInfo)
        assert transaction.originalTransactionId == "2000000000000001"
        assert [attempt.rawSendAttemptResult for attempt in item.sendAttempts] == ["SUCCESS"]
        dates.append(decoded.signedDate)
    assert dates == sorted(dates) and len(set(dates)) == 25


@pytest.mark.parametrize("fault, status, code", [
    ({"status": 404}, 404, 4040010),
    ({"status": 500}, 500, 5000000),
    ({"status": 429, "retryAfter": "+90s"}, 429, 4290000),
    ({"status": 401}, 401, None),
])
def test_the_fakes_faults_reach_apples_client_as_apple_sends_them(app_key, fake, fault, status, code):
    fake.set_state(state(fault))
    with pytest.raises(APIException) as raised:
        apple_client(app_key, fake).get_all_subscription_statuses("2000000000000009")
    assert raised.value.http_status_code == status
    assert raised.value.raw_api_error == code


def test_a_429_carries_retry_after_in_unix_milliseconds(app_key, fake):
    retry_after = int(time.time() * 1000) + 90_000
    fake.set_state(state({"status": 429, "retryAfter": retry_after}))
    token = jwt.encode({"iss": ISSUER_ID, "iat": int(time.time()), "exp": int(time.time()) + 300,
                        "aud": "appstoreconnect-v1", "bid": BUNDLE_ID}, app_key.pem, algorithm="ES256",
                       headers={"kid": KEY_ID})
    request = urllib.request.Request(f"{fake.base_url}/inApps/v1/subscriptions/2000000000000009",
                                     headers={"Authorization": f"Bearer {token}"})
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=10)
    assert raised.value.code == 429
    assert raised.value.headers["Retry-After"] == str(retry_after)
    assert json.loads(raised.value.read()) == {"errorCode": 4290000, "errorMessage": "Rate limit exceeded."}


def test_a_token_signed_by_another_key_is_refused_and_the_reason_logged(tmp_path, fake):
    other = tmp_path / "other"
    other.mkdir()
    stranger = KeyMaterial.load(KEY_ID, generate_key(other, KEY_ID))
    with pytest.raises(APIException) as raised:
        apple_client(stranger, fake).get_all_subscription_statuses("2000000000000009")
    assert raised.value.http_status_code == 401
    fake.stop()
    assert "401: the signature does not verify with the public key" in fake.stderr_path.read_text()
