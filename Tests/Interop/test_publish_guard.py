"""Issue 21, item 3, through the real binary on both storage backends: with `appStoreConnect`, the service reads
App Store Connect (the test kit's fake) at start into a kept copy, and publishing a catalog version (admin API,
`catalog import --publish`) is checked against it: errors refuse with 422 `catalog_check_failed` and the findings,
`force` with a reason publishes and the audit chain keeps the reason; when Apple cannot be read, the kept copy
serves and the refusal says how old it is."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from support import BUNDLE_ID, ISSUER_ID, KeyMaterial, Server, generate_key, run_cli
from test_app_store_connect import ASC_ISSUER, ASC_KEY_ID, BAD_OFFERS, GOOD_OFFERS, Fake

CONNECT = f"/admin/v1/apps/{BUNDLE_ID}/app-store-connect"
CATALOG = f"/admin/v1/apps/{BUNDLE_ID}/catalog"


@pytest.fixture(params=["sqlite", "postgresql"])
def storage(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'store.sqlite'}"
    return request.getfixturevalue("postgres_dsn")


@pytest.fixture()
def world(tmp_path, storage, signing_key):
    team_key = KeyMaterial.load(ASC_KEY_ID, generate_key(tmp_path, ASC_KEY_ID))
    fake = Fake(tmp_path, team_key.path)
    config = {
        "listen": {"host": "127.0.0.1", "port": 0},
        "storage": storage,
        "catalog": "storage",
        "admin": {"listen": {"host": "127.0.0.1", "port": 0}},
        "appStoreConnect": {"keyId": ASC_KEY_ID, "issuerId": ASC_ISSUER, "privateKeyFile": str(team_key.path),
                            "baseURL": fake.base_url},
        "apps": [{"bundleId": BUNDLE_ID, "issuerId": ISSUER_ID,
                  "keys": [{"keyId": signing_key.key_id, "privateKeyFile": str(signing_key.path)}],
                  "offers": GOOD_OFFERS}],
    }
    path = tmp_path / "offer-signer.json"
    path.write_text(json.dumps(config))
    server = Server.start(path, tmp_path, admin=True)
    made = run_cli("admin", "token", "create", "--config", str(path), "--name", "pat", "--role", "publisher")
    assert made.returncode == 0, made.stderr
    try:
        yield path, server.admin(), {"Authorization": f"Bearer {made.stdout.strip()}"}, fake
    finally:
        server.stop()
        fake.stop()


def kept_copy(admin: Server, bearer: dict, hang_guard: float = 60.0) -> dict:
    """The report once the copy read at start is kept (the read is the server's own, at start)."""
    deadline = time.monotonic() + hang_guard
    while True:
        report = admin.request("GET", CONNECT, headers=bearer)
        assert report.status == 200, report.body
        if report.json()["readAt"] is not None:
            return report.json()
        assert time.monotonic() < deadline, "the copy read at start never came"
        time.sleep(0.1)


def save_draft(admin: Server, bearer: dict, offers: list[dict], revision: int) -> int:
    saved = admin.request("PUT", CATALOG + "/draft", {"document": {"offers": offers, "retention": []}},
                          headers={**bearer, "If-Match": f'"{revision}"'})
    assert saved.status == 200, saved.body
    return saved.json()["revision"]


def test_publish_is_refused_on_errors_forced_with_a_reason_and_audited(world):
    config, admin, bearer, fake = world
    report = kept_copy(admin, bearer)
    assert report["subscriptions"] == 2
    assert report["live"]["findings"] == [] and report["live"]["version"] == 1
    revision = save_draft(admin, bearer, BAD_OFFERS, 0)
    report = admin.request("GET", CONNECT, headers=bearer).json()
    assert [f["code"] for f in report["draft"]["findings"]] == [
        "offer_other_product", "offer_missing", "rule_never_passes", "offer_missing", "product_unknown",
        "apple_offer_unused"]

    refused = admin.request("POST", CATALOG + "/publish", {"message": "typo", "draftRevision": revision},
                            headers=bearer)
    assert refused.status == 422, refused.body
    error = refused.json()["error"]
    assert error["code"] == "catalog_check_failed"
    assert error["appleReadAt"] == report["readAt"]
    assert [(f["code"], f["path"]) for f in error["findings"] if f["severity"] == "error"] == [
        ("offer_other_product", "$.offers[0].productIds[1]"), ("offer_missing", "$.offers[1].id"),
        ("rule_never_passes", "$.offers[2].eligibility"), ("offer_missing", "$.offers[3].id"),
        ("product_unknown", "$.offers[3].productIds[0]")]

    forced = admin.request("POST", CATALOG + "/publish",
                           {"message": "typo", "draftRevision": revision, "force": "Apple's side is fixed at noon"},
                           headers=bearer)
    assert forced.status == 201, forced.body
    entries = admin.request("GET", "/admin/v1/audit", headers=bearer).json()["entries"]
    published = next(entry for entry in entries if entry["action"] == "catalog.publish")
    assert published["after"]["appStoreConnect"]["force"] == "Apple's side is fixed at noon"
    assert len(published["after"]["appStoreConnect"]["findings"]) == 5
    verified = run_cli("audit", "verify", "--config", str(config))
    assert verified.returncode == 0, verified.stderr


def test_import_publish_checks_apple_first_and_takes_force(world, tmp_path):
    config, admin, bearer, fake = world
    kept_copy(admin, bearer)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"apps": [{"bundleId": BUNDLE_ID, "offers": BAD_OFFERS, "retention": []}]}))
    refused = run_cli("catalog", "import", "--config", str(config), "--file", str(bad), "--publish", timeout=60)
    assert refused.returncode == 1
    assert "  error offer_missing at $.offers[1].id (Apple: sprnig): " in refused.stderr, refused.stderr
    forced = run_cli("catalog", "import", "--config", str(config), "--file", str(bad), "--publish",
                     "--force", "imported before Apple's review", timeout=60)
    assert forced.returncode == 0, forced.stderr
    assert f"{BUNDLE_ID}: published version 2" in forced.stdout


def test_with_apple_down_the_kept_copy_serves_and_says_its_age(world):
    config, admin, bearer, fake = world
    read_at = kept_copy(admin, bearer)["readAt"]
    fake.stop()
    down = admin.request("POST", CONNECT + "/refresh", headers=bearer)
    assert down.status == 503, down.body
    assert down.json()["error"]["code"] == "app_store_connect_unavailable"
    assert "the copy kept was read " in down.json()["error"]["message"]
    revision = save_draft(admin, bearer, GOOD_OFFERS[:2], 0)
    published = admin.request("POST", CATALOG + "/publish", {"message": "smaller", "draftRevision": revision},
                              headers=bearer)
    assert published.status == 201, published.body
    # The publish took the draft away: the next one starts again from revision 0.
    revision = save_draft(admin, bearer, BAD_OFFERS, 0)
    refused = admin.request("POST", CATALOG + "/publish", {"message": "typo", "draftRevision": revision},
                            headers=bearer)
    assert refused.status == 422
    assert refused.json()["error"]["appleReadAt"] == read_at
    assert refused.json()["error"]["message"].startswith("App Store Connect (as read ")


def test_apples_promotional_offers_import_into_the_draft_after_a_preview(world):
    config, admin, bearer, fake = world
    kept_copy(admin, bearer)
    template = {"subscriptionStatus": ["expired"]}
    # The configuration's offers are spring, autumn and comeback: Apple has nothing more, so nothing is added.
    preview = admin.request("POST", CONNECT + "/import", {"eligibility": template}, headers=bearer)
    assert preview.status == 200, preview.body
    assert preview.json()["added"] == []
    assert [s["offerCode"] for s in preview.json()["skipped"]] == ["spring", "autumn"]
    # A draft without autumn: autumn comes back from Apple, for the monthly product, with the template.
    revision = save_draft(admin, bearer, [GOOD_OFFERS[0], GOOD_OFFERS[2]], 0)
    preview = admin.request("POST", CONNECT + "/import", {"eligibility": template}, headers=bearer)
    autumn = {"id": "autumn", "type": "promotional", "productIds": [GOOD_OFFERS[1]["productIds"][0]],
              "eligibility": template}
    assert preview.json()["added"] == [autumn]
    assert [(o["id"], o["change"]) for o in preview.json()["diff"]["offers"]] == [
        ("spring", "unchanged"), ("comeback", "unchanged"), ("autumn", "added")]
    saved = admin.request("POST", CONNECT + "/import", {"eligibility": template, "save": True},
                          headers={**bearer, "If-Match": f'"{revision}"'})
    assert saved.status == 200, saved.body
    assert saved.headers.get("ETag") == f'"{revision + 1}"'
    assert saved.json()["draft"]["document"]["offers"][-1] == autumn
