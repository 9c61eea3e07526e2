"""Issue 10, items 2 and 3: two replicas of the real binary share one PostgreSQL database with `catalog: "storage"`
and an admin listener each. A version published through one replica's admin API is served by the other
(PostgreSQL's NOTIFY wakes its watcher), and so is a roll back made on the other; both replicas write one
audit chain, which `offer-signer audit verify` checks; an entry deleted with psql is caught against the head a
replica published.

Each test has a database of its own (the `postgres_dsn` fixture)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from support import (
    BUNDLE_ID,
    ISSUER_ID,
    OFFER_OPEN,
    PRODUCT_MONTHLY,
    PROMO_PATH,
    Server,
    psql,
    run_cli,
    signed_nonce,
    stop_servers,
)

CATALOG = f"/admin/v1/apps/{BUNDLE_ID}/catalog"
NEW_OFFER = "replica_spring"


def write_config(path: Path, signing_key, dsn: str) -> Path:
    config = {
        "listen": {"host": "127.0.0.1", "port": 0},
        "storage": dsn,
        "catalog": "storage",
        "admin": {"listen": {"host": "127.0.0.1", "port": 0}},
        "apps": [{
            "bundleId": BUNDLE_ID,
            "issuerId": ISSUER_ID,
            "keys": [{"keyId": signing_key.key_id, "privateKeyFile": str(signing_key.path)}],
            "offers": [{"id": OFFER_OPEN, "type": "promotional", "productIds": [PRODUCT_MONTHLY],
                        "requiresVerifiedCustomer": False}],
        }],
    }
    path.write_text(json.dumps(config, indent=2))
    return path


@pytest.fixture
def replicas(tmp_path, signing_key, postgres_dsn):
    config = write_config(tmp_path / "replicas.json", signing_key, postgres_dsn)
    servers: list[Server] = []
    try:
        for _ in range(2):
            servers.append(Server.start(config, tmp_path, admin=True))
        yield config, servers
    finally:
        stop_servers(servers)


def token(config: Path, role: str) -> str:
    made = run_cli("admin", "token", "create", "--config", str(config), "--name", f"ops-{role}", "--role", role)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def served_version(server: Server) -> int | None:
    ready = server.request("GET", "/readyz")
    assert ready.status == 200, ready.body
    catalog = ready.json()["catalog"]
    assert catalog["source"] == "storage"
    return catalog["versions"].get(BUNDLE_ID)


def wait_for_version(server: Server, version: int, hang_guard: float = 60.0) -> None:
    """Returns once `server` serves `version`. The wait is real (another process's watcher, woken by PostgreSQL, or
    its poll every 2 s): `hang_guard` only fails a replica that never serves it, not a slow one."""
    deadline = time.monotonic() + hang_guard
    while served_version(server) != version:
        assert time.monotonic() < deadline, f"version {version} never served (serves {served_version(server)})"
        time.sleep(0.02)


def test_a_version_published_on_one_replica_is_served_by_the_other(replicas, signing_key, postgres_dsn):
    config, (first, second) = replicas
    # Both imported the file's offers at start, racing: one version 1, one audit entry for it.
    assert served_version(first) == 1 and served_version(second) == 1
    assert psql(postgres_dsn, "SELECT count(*) FROM catalog_versions") == [["1"]]
    bearer = {"Authorization": f"Bearer {token(config, 'publisher')}"}
    admin_first, admin_second = first.admin(), second.admin()

    draft = admin_first.request("GET", f"{CATALOG}/draft", headers=bearer)
    assert draft.status == 200, draft.body
    document = draft.json()["document"]
    document["offers"].append({"id": NEW_OFFER, "type": "promotional", "productIds": [PRODUCT_MONTHLY],
                               "requiresVerifiedCustomer": False})
    saved = admin_first.request("PUT", f"{CATALOG}/draft", {"document": document},
                                headers={**bearer, "If-Match": draft.header("ETag")})
    assert saved.status == 200, saved.body
    assert second.post(PROMO_PATH, {"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY,
                                    "offerId": NEW_OFFER}).status == 404
    published = admin_first.request("POST", f"{CATALOG}/publish",
                                    {"message": "spring", "draftRevision": saved.json()["revision"]}, headers=bearer)
    assert published.status == 201, published.body
    assert published.json()["version"] == 2
    wait_for_version(second, 2)
    signed = second.post(PROMO_PATH, {"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY, "offerId": NEW_OFFER})
    signed_nonce(signed, signing_key, NEW_OFFER)
    metrics = second.request("GET", "/metrics").body.decode()
    assert f'offer_signer_catalog_version{{app="{BUNDLE_ID}"}} 2' in metrics

    # A roll back on the other replica: version 3 holds version 1's offers, served by the first.
    rolled = admin_second.request("POST", f"{CATALOG}/rollback", {"version": 1, "message": "undo", "live": 2},
                                  headers=bearer)
    assert rolled.status == 201, rolled.body
    wait_for_version(first, 3)
    assert first.post(PROMO_PATH, {"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY,
                                   "offerId": NEW_OFFER}).status == 404

    # One chain, written by both replicas and the command line, checked by the command line.
    actions = [row[0] for row in psql(postgres_dsn, "SELECT action FROM audit_log ORDER BY sequence")]
    assert actions == ["catalog.import", "token.create", "draft.save", "catalog.publish", "catalog.rollback"]
    verified = run_cli("audit", "verify", "--config", str(config))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_deleting_the_newest_audit_entry_is_caught_against_the_published_head(replicas, postgres_dsn):
    config, (first, _) = replicas
    bearer = {"Authorization": f"Bearer {token(config, 'editor')}"}
    admin = first.admin()
    draft = admin.request("GET", f"{CATALOG}/draft", headers=bearer)
    saved = admin.request("PUT", f"{CATALOG}/draft", {"document": draft.json()["document"]},
                          headers={**bearer, "If-Match": draft.header("ETag")})
    assert saved.status == 200, saved.body
    head = admin.request("GET", "/admin/v1/audit/verify", headers=bearer).json()
    assert head["valid"] is True, head
    anchor = f"{head['head']['count']}:{head['head']['hash']}"
    metrics = first.request("GET", "/metrics").body.decode()
    assert f"offer_signer_audit_entries {head['head']['count']}" in metrics

    psql(postgres_dsn, "DELETE FROM audit_log WHERE sequence = (SELECT max(sequence) FROM audit_log)")

    # The chain that is left still links: only the published head shows what is missing.
    plain = run_cli("audit", "verify", "--config", str(config))
    assert plain.returncode == 0, plain.stdout + plain.stderr
    anchored = run_cli("audit", "verify", "--config", str(config), "--anchor", anchor)
    assert anchored.returncode == 1, anchored.stdout + anchored.stderr
    assert "the newest were deleted" in anchored.stdout + anchored.stderr
    seen = admin.request("GET", "/admin/v1/audit/verify", headers=bearer).json()
    assert seen["valid"] is False
    assert any("the newest were deleted" in problem for problem in seen["problems"]), seen
