"""Issue 21, items 2 to 4, in the console in a real browser (Debian's Chromium through Selenium, as
test_console.py): the App Store Connect page shows the kept copy's age and what the live version and the draft
disagree with, imports Apple's promotional offers into the draft after a preview, and the publish page, refused by
the check, shows the findings and publishes anyway with a reason the audit log keeps. Pages are photographed at a
laptop's and a phone's width under .build/test-output/console/, and the browser's log holds no error but the
refusal the test causes on purpose."""

from __future__ import annotations

import json
import time

import pytest
from selenium.webdriver.common.by import By

from support import BUNDLE_ID, ISSUER_ID, KeyMaterial, Server, generate_key, run_cli
from test_app_store_connect import ASC_ISSUER, ASC_KEY_ID, MONTHLY, YEARLY, Fake
from test_console import Console, Deployment, admin_call, bearer, driver, screenshots, unexpected_errors  # noqa: F401

CONNECT = f"/admin/v1/apps/{BUNDLE_ID}/app-store-connect"


@pytest.fixture
def apple_deployment(tmp_path, signing_key):
    team_key = KeyMaterial.load(ASC_KEY_ID, generate_key(tmp_path, ASC_KEY_ID))
    fake = Fake(tmp_path, team_key.path)
    database = tmp_path / "console.sqlite"
    config = {
        "listen": {"host": "127.0.0.1", "port": 0},
        "storage": f"sqlite:{database}",
        "catalog": "storage",
        "admin": {"listen": {"host": "127.0.0.1", "port": 0}, "sessionMinutes": 60},
        "appStoreConnect": {"keyId": ASC_KEY_ID, "issuerId": ASC_ISSUER, "privateKeyFile": str(team_key.path),
                            "baseURL": fake.base_url},
        "apps": [{"bundleId": BUNDLE_ID, "issuerId": ISSUER_ID,
                  "keys": [{"keyId": signing_key.key_id, "privateKeyFile": str(signing_key.path)}],
                  "offers": [{"id": "spring", "type": "promotional", "productIds": [MONTHLY]},
                             {"id": "comeback", "type": "winBack", "productIds": [MONTHLY]}]}],
    }
    path = tmp_path / "console.json"
    path.write_text(json.dumps(config, indent=2))
    created = run_cli("admin", "token", "create", "--config", str(path), "--name", "ops-test", "--role", "publisher")
    assert created.returncode == 0, created.stderr
    server = Server.start(path, tmp_path, admin=True)
    deployment = Deployment(server, created.stdout.strip(), database)
    # The copy the service reads at start (its own read: polled for, with a guard against a hang).
    deadline = time.monotonic() + 60
    while admin_call(deployment, "GET", CONNECT, headers=bearer(deployment))[2]["readAt"] is None:
        assert time.monotonic() < deadline, "the copy read at start never came"
        time.sleep(0.1)
    yield deployment
    server.stop()
    fake.stop()


def test_the_app_store_connect_page_checks_imports_and_publishing_is_forced_with_a_reason(
        driver, apple_deployment, screenshots):
    deployment = apple_deployment
    console = Console(driver, deployment, screenshots)
    console.open()
    console.sign_in(deployment.token)
    console.go("apple")
    console.text_in("#apple-status", "2 subscription(s)")
    # The live version (the file's) agrees but for Apple's autumn offer, which it does not use.
    rows = console.all("#apple-live-findings .finding-row")
    assert [(row.get_attribute("data-severity"), row.get_attribute("data-code")) for row in rows] == [
        ("notice", "apple_offer_unused")]
    assert "autumn" in rows[0].text
    console.screenshot("app-store-connect")

    # Import: a preview of autumn as a new offer for the monthly product, then into the draft.
    console.find("#import-preview").click()
    console.shown("#import-save")
    added = console.all("#import-result .diff-added")
    assert [card.get_attribute("data-offer-id") for card in added] == ["autumn"]
    assert MONTHLY in added[0].text and "expired" in added[0].text
    console.screenshot("app-store-connect-import")
    console.find("#import-save").click()
    console.text_in(".banner-success", "Added to the draft, now revision 1")
    status, _, draft = admin_call(deployment, "GET", f"/admin/v1/apps/{BUNDLE_ID}/catalog/draft",
                                  headers=bearer(deployment))
    assert status == 200
    assert [offer["id"] for offer in draft["document"]["offers"]] == ["spring", "comeback", "autumn"]

    # A draft App Store Connect disagrees with: the publish page shows the findings and publishes anyway.
    document = draft["document"]
    document["offers"].append({"id": "sprnig", "type": "promotional", "productIds": [MONTHLY, YEARLY]})
    status, _, saved = admin_call(deployment, "PUT", f"/admin/v1/apps/{BUNDLE_ID}/catalog/draft",
                                  {"document": document}, headers={**bearer(deployment), "If-Match": '"1"'})
    assert status == 200, saved
    console.go("publish")
    console.type_into(console.find("#publish-message"), "autumn, and a typo")
    console.find("#publish-button").click()
    console.shown("#force-form")
    console.text_in(".banner-error", "disagrees with this catalog")
    codes = [row.get_attribute("data-code") for row in console.all("#force-findings .finding-row")]
    assert codes == ["offer_missing"]
    console.screenshot("publish-refused")
    console.type_into(console.find("#force-reason"), "the offer code is fixed at Apple this afternoon")
    console.find("#force-button").click()
    console.text_in(".banner-success", "despite App Store Connect")
    _, _, audit = admin_call(deployment, "GET", "/admin/v1/audit", headers=bearer(deployment))
    published = next(entry for entry in audit["entries"] if entry["action"] == "catalog.publish")
    assert published["after"]["appStoreConnect"]["force"] == "the offer code is fixed at Apple this afternoon"
    # The session check before signing in, and the refusal caused on purpose.
    problems = unexpected_errors(console.read_log(), {(401, "/admin/v1/session"),
                                                      (422, f"/admin/v1/apps/{BUNDLE_ID}/catalog/publish")})
    assert not problems, problems
