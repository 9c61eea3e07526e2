"""Issue 9, item 8: a retention request for a subscription the service has heard nothing about is decided on what
the App Store Server API tells it (the test kit's fake, through the real binaries), and an outage of that API (500s,
or answers that never come in time) still gets an answer from the entries that need no facts, well before the
hanging API would have answered."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from support import BUNDLE_ID, ISSUER_ID, KEY_ID, KeyMaterial, Server, generate_key, run_cli
from test_apple_api import APP_APPLE_ID, Fake, state
from test_retention import RETENTION_PATH, apple_model, offer_claims, sign_retention_request

PRODUCT = "com.example.interop.pro.monthly"  # the fake's subscription
CUSTOMER = "2000000000000001"
OFFER = "interop_stay"
OFFER_MESSAGE = "6e87b843-9962-4624-a273-9064fb1c1453"
MESSAGE = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
HANG_MS = 8000


@pytest.fixture()
def app_key(tmp_path) -> KeyMaterial:
    return KeyMaterial.load(KEY_ID, generate_key(tmp_path, KEY_ID))


@pytest.fixture()
def fake(tmp_path, app_key):
    running = Fake(tmp_path, app_key)
    yield running
    running.stop()


@pytest.fixture()
def server(tmp_path, app_key, fake):
    """The service trusting the fake's test root, looking subscriptions up at the fake, with a retention list: the
    offer for active subscribers (needs facts), else a message (needs none)."""
    config = {
        "listen": {"host": "127.0.0.1", "port": 0},
        "storage": f"sqlite:{tmp_path / 'ledger.sqlite'}",
        "trust": {"rootCertificates": [str(fake.ca / "root.cer")], "environments": ["Production"]},
        "apps": [{
            "bundleId": BUNDLE_ID, "issuerId": ISSUER_ID, "appAppleId": APP_APPLE_ID,
            "keys": [{"keyId": app_key.key_id, "privateKeyFile": str(app_key.path)}],
            "appStoreServerAPI": {"keyId": app_key.key_id, "baseURL": fake.base_url},
            "offers": [{"id": OFFER, "type": "promotional", "productIds": [PRODUCT], "limits": {"perCustomer": 1}}],
            "retention": [
                {"productIds": [PRODUCT], "when": {"subscriptionStatus": ["active"]},
                 "promotionalOffer": {"offerId": OFFER, "productId": PRODUCT, "messages": {"*": OFFER_MESSAGE}}},
                {"productIds": [PRODUCT], "message": {"messages": {"*": MESSAGE}}},
            ],
        }],
    }
    path = tmp_path / "offer-signer.json"
    path.write_text(json.dumps(config, indent=2))
    check = run_cli("config", "check", "--config", str(path))
    assert check.returncode == 0, check.stdout + check.stderr
    running = Server.start(path, tmp_path)
    yield running
    assert running.stop(signal.SIGTERM, timeout=5) == 0, running.stderr_path.read_text(errors="replace")


def ask(server: Server, fake: Fake) -> object:
    token = sign_retention_request(fake.ca, CUSTOMER, product_id=PRODUCT, environment="Production",
                                   app_apple_id=APP_APPLE_ID)
    return server.post(RETENTION_PATH, {"signedPayload": token})


def lookups(server: Server) -> dict[str, float]:
    """offer_signer_subscription_lookups_total by result."""
    counts: dict[str, float] = {}
    for line in server.request("GET", "/metrics").body.decode().splitlines():
        if line.startswith("offer_signer_subscription_lookups_total{"):
            labels, value = line.rsplit(" ", 1)
            result = labels.split('result="', 1)[1].split('"', 1)[0]
            counts[result] = counts.get(result, 0) + float(value)
    return counts


def test_a_subscription_never_notified_is_looked_up_and_gets_the_offer(server, fake, app_key):
    reply = ask(server, fake)
    assert reply.status == 200, reply.body
    body = apple_model(reply.json())
    assert str(body.promotionalOffer.messageIdentifier) == OFFER_MESSAGE
    assert offer_claims(body.promotionalOffer.promotionalOfferSignatureV2, app_key)["transactionId"] == CUSTOMER
    assert lookups(server).get("found") == 1
    # The state it learnt is kept: the next request needs no lookup, and the offer's one place is taken.
    again = ask(server, fake)
    assert again.status == 200 and apple_model(again.json()).message is not None, again.body
    assert lookups(server).get("found") == 1


@pytest.mark.parametrize("fault", [{"fault": {"status": 500}}, {"delayMilliseconds": HANG_MS}],
                         ids=["server-error", "hangs"])
def test_an_outage_of_apples_api_still_gets_an_answer_that_needs_no_facts(server, fake, fault):
    document = state()
    document["environments"]["Production"].update(fault)
    fake.set_state(document)
    reply = ask(server, fake)
    # Not a wait for the hanging API: the answer is the one that needs no facts, and it is a 200, which the service
    # gives only within its 300 ms (past them it answers 503 deadline_exceeded); the lookup has 200 ms of them.
    assert reply.status == 200, reply.body
    assert str(apple_model(reply.json()).message.messageIdentifier) == MESSAGE
    # The lookup's outcome is counted when it ends (its own 200 ms timeout for the hang), which on a loaded machine
    # may be just after the answer: wait a little for it, never past the hang.
    deadline = time.monotonic() + HANG_MS / 2000
    while sum(lookups(server).values()) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "found" not in lookups(server)
    assert sum(lookups(server).values()) == 1
