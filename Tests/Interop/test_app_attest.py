"""App Attest against the real binary, on SQLite and PostgreSQL: keys attested and requests asserted by an
independent device maker (appattest_device.py: cbor2 and cryptography, from Apple's documented layout, checked
against Apple's own sample), and by the test kit's `app-attest` commands as app teams use them. Every check failed on
purpose is refused with its own reason in enforce mode and records no key; report mode answers and counts; two
PostgreSQL replicas taking the same assertion let exactly one through."""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path

import pytest
import yaml

from appattest_device import APPLE_STYLE_EXTENSIONS, AAGUID_DEVELOPMENT, AppAttestCA, Device, attest_headers, \
    attestation_client_data_hash
from support import (
    BUNDLE_ID,
    REPO_ROOT,
    OFFER_OPEN,
    PRODUCT_MONTHLY,
    PROMO_PATH,
    Server,
    ask_together,
    jws_verifies,
    run_cli,
    run_testkit,
    start_servers,
    stop_servers,
    write_config,
)
from test_console import driver, screenshots  # noqa: F401 - fixtures
from test_openapi import OpenAPI

CONTRACT = OpenAPI(yaml.safe_load((REPO_ROOT / "openapi.yaml").read_text()))


def conforms(answer, method: str, path: str) -> None:
    """`answer` is what openapi.yaml declares for its status on `path`."""
    CONTRACT.check(answer, CONTRACT.operation_response(method, path, answer.status), method)

TEAM_ID = "ABCDE12345"
APP_ID = f"{TEAM_ID}.{BUNDLE_ID}"
PROMO_BODY = json.dumps({"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY, "offerId": OFFER_OPEN}).encode()


def configure(workdir: Path, signing_key, ca: AppAttestCA, storage: str, mode: str = "enforce") -> Path:
    config = write_config(workdir / f"app-attest-{mode}.json", [signing_key],
                          appAttest={"mode": mode, "teamId": TEAM_ID})
    document = json.loads(config.read_text())
    document["storage"] = storage
    document["trust"] = {
        "rootCertificates": [str(ca.write_receipt_root_pem(workdir / "receipt-root.pem"))],
        "appAttestRootCertificates": [str(ca.write_root_pem(workdir / "app-attest-root.pem"))],
    }
    config.write_text(json.dumps(document, indent=2))
    return config


@pytest.fixture(params=["sqlite", "postgresql"])
def storage(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'ledger.sqlite'}"
    return request.getfixturevalue("postgres_dsn")


@pytest.fixture
def ca() -> AppAttestCA:
    return AppAttestCA()


@pytest.fixture
def enforced(tmp_path, signing_key, ca, storage):
    config = configure(tmp_path, signing_key, ca, storage)
    server = Server.start(config, tmp_path)
    yield server, config
    stop_servers([server])


def challenge(server: Server) -> str:
    answer = server.post("/v1/app-attest/challenge", {"bundleId": BUNDLE_ID})
    assert answer.status == 200, answer.body
    conforms(answer, "POST", "/v1/app-attest/challenge")
    body = answer.json()
    assert body["expiresInSeconds"] == 120
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", body["challenge"]), body
    return body["challenge"]


def attest(server: Server, device: Device, **knobs) -> dict:
    """Posts `device`'s attestation over a fresh challenge; the answer's status and body."""
    given = challenge(server)
    attestation = device.attestation(attestation_client_data_hash(given), **knobs)
    answer = server.post("/v1/app-attest/keys", {
        "bundleId": BUNDLE_ID, "keyId": device.key_id_b64, "attestation": base64.b64encode(attestation).decode(),
        "challenge": given})
    conforms(answer, "POST", "/v1/app-attest/keys")
    return {"status": answer.status, **answer.json()}


def sign(server: Server, device: Device | None, body: bytes = PROMO_BODY, **knobs):
    headers = attest_headers(device, challenge(server), body, **knobs) if device else {}
    return server.request("POST", PROMO_PATH, PROMO_BODY, headers=headers)


def reason(answer) -> str:
    body = answer.json() if hasattr(answer, "json") else answer
    status = answer.status if hasattr(answer, "status") else answer["status"]
    error = body.get("error", {})
    return f"{status} {error.get('code')} {error.get('reason')}"


def keys(config: Path) -> str:
    result = run_cli("ledger", "app-attest-keys", "--config", str(config))
    assert result.returncode == 0, result.stderr
    return result.stdout


def metric(server: Server, outcome: str, mode: str = "enforce") -> int:
    text = server.request("GET", "/metrics").body.decode()
    pattern = (r'^offer_signer_app_attest_requests_total\{app="%s",mode="%s",outcome="%s"\} (\d+)$'
               % (re.escape(BUNDLE_ID), mode, outcome))
    found = re.search(pattern, text, re.MULTILINE)
    return int(found.group(1)) if found else 0


def test_an_attested_device_gets_signatures(enforced, ca, signing_key):
    server, config = enforced
    device = Device(ca, TEAM_ID, BUNDLE_ID)
    assert attest(server, device) == {"status": 201, "keyId": device.key_id_b64, "environment": "production"}
    answer = sign(server, device)
    assert answer.status == 200, answer.body
    assert jws_verifies(answer.json()["compactJWS"], signing_key.public_key)
    assert sign(server, device).status == 200
    # Newer systems' additions are ignored, not refused: an extensions map after the COSE key, an unknown extension.
    newer = Device(ca, TEAM_ID, BUNDLE_ID)
    assert attest(server, newer, extensions=APPLE_STYLE_EXTENSIONS, extra_leaf_extension=True)["status"] == 201
    assert sign(server, newer, extensions=APPLE_STYLE_EXTENSIONS).status == 200
    listed = keys(config)
    assert device.key_id_b64 in listed and newer.key_id_b64 in listed and "counter 2" in listed, listed
    assert metric(server, "valid") == 3


def test_every_attestation_flaw_is_refused_and_records_no_key(enforced, ca):
    server, config = enforced
    stranger = AppAttestCA()
    flaws = [
        ("nonce_mismatch", dict(wrong_nonce=True)),
        ("wrong_app", dict(rp_id=f"{TEAM_ID}.com.example.other")),
        ("wrong_environment", dict(aaguid=AAGUID_DEVELOPMENT)),
        ("counter_not_zero", dict(counter=1)),
        ("untrusted_chain", dict(other_root=True)),
        ("wrong_format", dict(fmt="packed")),
        ("bad_receipt", dict(receipt_type=b"RECEIPT")),
        ("bad_receipt", dict(receipt_app_id=f"{TEAM_ID}.com.example.other")),
        ("bad_receipt", dict(receipt=b"\x30\x03\x02\x01\x01")),
        ("key_id_mismatch", dict(credential_id=bytes(32))),
    ]
    for expected, knobs in flaws:
        answer = attest(server, Device(ca, TEAM_ID, BUNDLE_ID), **knobs)
        assert reason(answer) == f"401 attestation_invalid {expected}", (knobs, answer)
    answer = attest(server, Device(stranger, TEAM_ID, BUNDLE_ID))
    assert reason(answer) == "401 attestation_invalid untrusted_chain", answer
    # CBOR cut short, nested beyond the bound: refused as malformed, never a crash.
    device = Device(ca, TEAM_ID, BUNDLE_ID)
    for broken in (device.attestation(attestation_client_data_hash(challenge(server)))[:-7], b"\x81" * 5000 + b"\x00"):
        answer = server.post("/v1/app-attest/keys", {
            "bundleId": BUNDLE_ID, "keyId": device.key_id_b64, "attestation": base64.b64encode(broken).decode(),
            "challenge": challenge(server)})
        assert reason(answer) == "401 attestation_invalid malformed", answer.body
    # A challenge used once, or never handed out.
    used = challenge(server)
    good = Device(ca, TEAM_ID, BUNDLE_ID)
    body = {"bundleId": BUNDLE_ID, "keyId": good.key_id_b64, "challenge": used,
            "attestation": base64.b64encode(good.attestation(attestation_client_data_hash(used))).decode()}
    assert server.post("/v1/app-attest/keys", body).status == 201
    again = Device(ca, TEAM_ID, BUNDLE_ID)
    body.update(keyId=again.key_id_b64,
                attestation=base64.b64encode(again.attestation(attestation_client_data_hash(used))).decode())
    assert reason(server.post("/v1/app-attest/keys", body)) == "401 attestation_invalid challenge_unknown"
    assert server.process.poll() is None
    listed = keys(config)
    assert listed.count(BUNDLE_ID) == 1 and good.key_id_b64 in listed, listed


def test_every_assertion_flaw_is_refused_with_its_reason(enforced, ca):
    server, config = enforced
    device = Device(ca, TEAM_ID, BUNDLE_ID)
    assert attest(server, device)["status"] == 201
    assert sign(server, device, counter=5).status == 200
    replay = challenge(server)
    replayed = attest_headers(device, replay, PROMO_BODY, counter=6)
    assert server.request("POST", PROMO_PATH, PROMO_BODY, headers=replayed).status == 200
    other_body = json.dumps({"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY, "offerId": "other"}).encode()
    stranger_key = Device(ca, TEAM_ID, BUNDLE_ID)
    cases = [
        ("401 attestation_required None", lambda: sign(server, None)),
        ("401 attestation_invalid counter_not_increasing", lambda: sign(server, device, counter=6)),
        ("401 attestation_invalid counter_not_increasing", lambda: sign(server, device, counter=3)),
        ("401 attestation_invalid challenge_unknown",
         lambda: server.request("POST", PROMO_PATH, PROMO_BODY,
                                headers=attest_headers(device, replay, PROMO_BODY, counter=9))),
        ("401 attestation_invalid bad_signature", lambda: sign(server, device, body=other_body, counter=10)),
        ("401 attestation_invalid bad_signature",
         lambda: sign(server, device, counter=11, sign_with=stranger_key.private_key)),
        ("401 attestation_invalid wrong_app", lambda: sign(server, device, counter=12, rp_id="X.com.example.other")),
        ("401 attestation_invalid unknown_key", lambda: sign(server, stranger_key)),
        ("401 attestation_invalid malformed",
         lambda: server.request("POST", PROMO_PATH, PROMO_BODY,
                                headers={"X-App-Attest-Key-Id": device.key_id_b64, "X-App-Attest-Assertion": "AAAA"})),
    ]
    for expected, attempt in cases:
        answer = attempt()
        assert reason(answer) == expected, (expected, answer.body)
        conforms(answer, "POST", PROMO_PATH)
    assert "counter 6" in keys(config)
    revoked = run_cli("ledger", "app-attest-revoke", "--key-id", device.key_id_b64, "--config", str(config))
    assert revoked.returncode == 0, revoked.stderr
    assert reason(sign(server, device, counter=20)) == "401 attestation_invalid revoked_key"
    assert "revoked" in keys(config)
    assert metric(server, "counter_not_increasing") == 2 and metric(server, "missing") == 1


def test_report_mode_answers_and_counts(tmp_path, signing_key, ca, storage):
    config = configure(tmp_path, signing_key, ca, storage, mode="report")
    server = Server.start(config, tmp_path)
    try:
        device = Device(ca, TEAM_ID, BUNDLE_ID)
        assert attest(server, device)["status"] == 201
        assert sign(server, None).status == 200
        assert sign(server, device, counter=1).status == 200
        assert sign(server, device, counter=1).status == 200
        assert sign(server, Device(ca, TEAM_ID, BUNDLE_ID)).status == 200
        assert [metric(server, outcome, "report") for outcome in ("valid", "missing", "counter_not_increasing",
                                                                  "unknown_key")] == [1, 1, 1, 1]
        log = server.stderr_path.read_text()
        assert "app_attest=unknown_key" in log and "app_attest=missing" in log and "app_attest=valid" in log
    finally:
        stop_servers([server])


def test_the_test_kit_attests_and_asserts_as_a_device(tmp_path, signing_key):
    """The app teams' path: `offer-signer-testkit app-attest ca|attest|assert` against the real binary."""
    kit = tmp_path / "kit-ca"
    made = run_testkit("app-attest", "ca", "--out", str(kit))
    assert made.returncode == 0, made.stderr
    config = write_config(tmp_path / "kit.json", [signing_key], appAttest={"mode": "enforce", "teamId": TEAM_ID})
    document = json.loads(config.read_text())
    document["trust"] = {"rootCertificates": [str(kit / "receipt-root.cer")],
                         "appAttestRootCertificates": [str(kit / "root.cer")]}
    document["storage"] = f"sqlite:{tmp_path / 'kit.sqlite'}"
    config.write_text(json.dumps(document))
    server = Server.start(config, tmp_path)
    try:
        device_key = tmp_path / "device.p8"
        made = run_testkit("app-attest", "attest", "--ca", str(kit), "--key", str(device_key), "--team-id", TEAM_ID,
                           "--bundle-id", BUNDLE_ID, "--challenge", challenge(server))
        assert made.returncode == 0, made.stderr
        answer = server.post("/v1/app-attest/keys", json.loads(made.stdout))
        assert answer.status == 201, answer.body
        body_file = tmp_path / "body.json"
        body_file.write_bytes(PROMO_BODY)
        for expected in (200, 200):
            made = run_testkit("app-attest", "assert", "--key", str(device_key), "--team-id", TEAM_ID, "--bundle-id",
                               BUNDLE_ID, "--challenge", challenge(server), "--body", str(body_file))
            assert made.returncode == 0, made.stderr
            assert server.request("POST", PROMO_PATH, PROMO_BODY, headers=json.loads(made.stdout)).status == expected
        flawed = run_testkit("app-attest", "attest", "--ca", str(kit), "--key", str(tmp_path / "other.p8"),
                             "--team-id", TEAM_ID, "--bundle-id", BUNDLE_ID, "--challenge", challenge(server),
                             "--flaw", "nonce")
        assert reason(server.post("/v1/app-attest/keys", json.loads(flawed.stdout))) == \
            "401 attestation_invalid nonce_mismatch"
    finally:
        stop_servers([server])


def test_two_postgresql_replicas_take_one_assertion_once(tmp_path, signing_key, ca, postgres_dsn):
    config = configure(tmp_path, signing_key, ca, postgres_dsn)
    servers = start_servers(config, tmp_path, 2)
    try:
        device = Device(ca, TEAM_ID, BUNDLE_ID)
        assert attest(servers[0], device)["status"] == 201
        for counter in range(1, 6):
            headers = attest_headers(device, challenge(servers[counter % 2]), PROMO_BODY, counter=counter)
            answers = ask_together(servers, [json.loads(PROMO_BODY)] * 2, headers=headers)
            statuses = sorted(answer.status for answer in answers)
            assert statuses == [200, 401], [answer.body for answer in answers]
    finally:
        stop_servers(servers)


def test_ops_read_the_attested_share_in_the_console(tmp_path, signing_key, ca, driver, screenshots):
    """Report mode with the admin listener: the admin API and the console's Charts page show the share of attested
    requests, why the rest were not, and the keys; what ops read before switching to enforce."""
    from test_console import Console, Deployment, unexpected_errors

    config = configure(tmp_path, signing_key, ca, f"sqlite:{tmp_path / 'ledger.sqlite'}", mode="report")
    document = json.loads(config.read_text())
    document["admin"] = {"listen": {"host": "127.0.0.1", "port": 0}, "sessionMinutes": 60}
    config.write_text(json.dumps(document))
    made = run_cli("admin", "token", "create", "--config", str(config), "--name", "ops", "--role", "viewer")
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    server = Server.start(config, tmp_path, admin=True)
    try:
        device = Device(ca, TEAM_ID, BUNDLE_ID)
        assert attest(server, device)["status"] == 201
        for _ in range(6):
            assert sign(server, device).status == 200
        assert sign(server, None).status == 200
        assert sign(server, Device(ca, TEAM_ID, BUNDLE_ID)).status == 200
        view = server.admin().request("GET", f"/admin/v1/apps/{BUNDLE_ID}/app-attest",
                                      headers={"Authorization": f"Bearer {token}"})
        assert view.status == 200, view.body
        admin_contract = OpenAPI(yaml.safe_load((REPO_ROOT / "admin-openapi.yaml").read_text()))
        route = "/admin/v1/apps/{bundleId}/app-attest"
        admin_contract.check(view, admin_contract.operation_response("GET", route, 200), "GET")
        found = view.json()
        assert found["mode"] == "report" and found["teamId"] == TEAM_ID
        assert found["requests"] == {"total": 8, "valid": 6, "missing": 1, "refused": {"unknown_key": 1}}
        assert found["attestedShare"] == pytest.approx(0.75)
        assert found["keys"] == {"inForce": 1, "revoked": 0}
        console = Console(driver, Deployment(server, token, tmp_path / "ledger.sqlite"), screenshots)
        console.open()
        console.sign_in(token)
        console.go("charts")
        card = console.find("#app-attest-card")
        assert card.get_attribute("data-mode") == "report"
        assert console.find("#app-attest-share").text == "75.0% attested"
        assert "unknown_key 1" in console.find("#app-attest-refused").text
        assert console.find("#app-attest-keys").text == "1 in force · 0 revoked"
        console.screenshot("charts-app-attest")
        problems = unexpected_errors(console.read_log(), {(401, "/admin/v1/session")})
        assert not problems, problems
    finally:
        stop_servers([server])


def test_offerkit_attests_and_asserts_against_the_real_binary(tmp_path, signing_key):
    """OfferKit's AppAttest end to end: the example package (Examples/OfferKitDemo, as an app builds it) with a device
    the test kit plays through `--client-data-hash` (OfferKit makes every hash itself), against a service that
    enforces App Attest: the key is attested once, each request asserted over a fresh challenge, and the service
    counts them valid. Then the key is revoked: OfferKit attests a new one and its request still succeeds."""
    from test_offerkit_example import run_demo, steps

    demo = Path(os.environ.get("OFFERKIT_DEMO_BIN", REPO_ROOT / "Examples" / "OfferKitDemo" / ".build" / "debug"
                               / "offerkit-demo"))
    assert demo.exists(), f"{demo} is missing: `make test` builds it"
    kit = tmp_path / "kit-ca"
    assert run_testkit("app-attest", "ca", "--out", str(kit)).returncode == 0
    config = write_config(tmp_path / "demo.json", [signing_key], appAttest={"mode": "enforce", "teamId": TEAM_ID})
    document = json.loads(config.read_text())
    document["trust"] = {"rootCertificates": [str(kit / "receipt-root.cer")],
                         "appAttestRootCertificates": [str(kit / "root.cer")]}
    document["storage"] = f"sqlite:{tmp_path / 'demo.sqlite'}"
    config.write_text(json.dumps(document))
    server = Server.start(config, tmp_path)
    testkit = os.environ.get("OFFER_SIGNER_TESTKIT_BIN") or str(Path(os.environ["OFFER_SIGNER_BIN"]).parent
                                                                / "offer-signer-testkit")
    device = ["--app-attest-testkit", testkit, "--app-attest-ca", str(kit), "--team-id", TEAM_ID]
    try:
        key = tmp_path / "device.p8"
        result = run_demo(demo, "--url", server.base_url, "--bundle-id", BUNDLE_ID, "--product", PRODUCT_MONTHLY,
                          "--offer", OFFER_OPEN, "--json", "--app-attest-key", str(key), *device)
        out = steps(result)
        assert jws_verifies(out["jws"]["compactJWS"], signing_key.public_key)
        # The listing, the JWS and the legacy signature: three requests, each asserted once, all valid.
        assert metric(server, "valid") == 3 and metric(server, "missing") == 0
        listed = keys(config)
        assert listed.count(BUNDLE_ID) == 1 and "counter 3" in listed, listed
        # A revoked key: a new install attests a new key and is served.
        key_id = run_testkit("app-attest", "key", "--key", str(key)).stdout.strip()
        assert run_cli("ledger", "app-attest-revoke", "--key-id", key_id, "--config", str(config)).returncode == 0
        again = run_demo(demo, "--url", server.base_url, "--bundle-id", BUNDLE_ID, "--product", PRODUCT_MONTHLY,
                         "--offer", OFFER_OPEN, "--json", "--app-attest-key", str(tmp_path / "device-2.p8"), *device)
        assert steps(again)["jws"]["offerId"] == OFFER_OPEN
        assert keys(config).count("in force") == 1
    finally:
        stop_servers([server])
