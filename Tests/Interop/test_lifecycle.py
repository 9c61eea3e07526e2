"""Process lifecycle (signals), configuration checks on key files, key rotation and StoreKit key import."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import os
import signal
import socket
import stat
import time

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from support import (
    BUNDLE_ID,
    ISSUER_ID,
    KEY_ID,
    OFFER_OPEN,
    PRODUCT_MONTHLY,
    KeyMaterial,
    Server,
    apple_legacy_payload,
    decode_standard_b64,
    der_signature_verifies,
    generate_key,
    jws_parts,
    jws_verifies,
    run_cli,
    verify_jws_es256,
    write_config,
)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_stops_gracefully(tmp_path, config_path, signing_key, sig):
    server = Server.start(config_path, tmp_path)
    try:
        response = server.promo()
        assert response.status == 200, response.body
        verify_jws_es256(response.json()["compactJWS"], signing_key.public_key)
    finally:
        status = server.stop(sig, timeout=5)
    assert status == 0, server.stderr_path.read_text(errors="replace")
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=2).close()


def test_signal_with_idle_keep_alive_connection(tmp_path, config_path):
    """An idle keep-alive client must not hold up shutdown."""
    server = Server.start(config_path, tmp_path)
    idle = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        assert server.promo().status == 200
        status = server.stop(signal.SIGTERM, timeout=5)
        assert status == 0
    finally:
        idle.close()
        if server.process.poll() is None:
            server.process.kill()


def test_request_in_flight_finishes_after_sigterm(tmp_path, config_path, signing_key):
    """SIGTERM while a request is half sent: new connections are refused, the started request gets its answer."""
    server = Server.start(config_path, tmp_path)
    body = json.dumps({"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY, "offerId": OFFER_OPEN}).encode()
    client = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    try:
        client.sendall(
            b"POST /v1/signatures/promotional-offer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body[:10])
        time.sleep(0.3)  # the server has the headers and part of the body: the request is in flight
        server.process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        assert server.process.poll() is None, "the server quit with a request in flight"
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", server.port), timeout=2).close()
        client.sendall(body[10:])
        reply = b""
        while chunk := client.recv(65536):
            reply += chunk
    finally:
        client.close()
        status = server.stop(signal.SIGTERM, timeout=15)
    head, _, payload = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), reply[:300]
    verify_jws_es256(json.loads(payload)["compactJWS"], signing_key.public_key)
    assert status == 0


# MARK: - config check


def config_check(config) -> tuple[int, str]:
    result = run_cli("config", "check", "--config", str(config))
    return result.returncode, result.stdout + result.stderr


def test_config_check_ok(config_path):
    status, output = config_check(config_path)
    assert status == 0, output
    assert "configuration OK" in output
    assert f"key {KEY_ID}: signing" in output


def test_key_file_mode_0644_rejected(tmp_path):
    key = KeyMaterial.load("OPENKEY001", generate_key(tmp_path, "OPENKEY001"))
    os.chmod(key.path, 0o644)
    config = write_config(tmp_path / "config.json", [key])
    status, output = config_check(config)
    assert status == 1, output
    assert str(key.path) in output
    assert "0644" in output and "chmod 600" in output, output
    assert "$.apps[0].keys[0].privateKeyFile" in output
    assert "PRIVATE KEY" not in output
    for line in key.pem_body_lines():
        assert line not in output
    # serve refuses it as well, before listening
    result = run_cli("serve", "--config", str(config), "--port", "0", timeout=10)
    assert result.returncode == 1
    assert "listening" not in result.stdout
    assert "PRIVATE KEY" not in result.stdout + result.stderr


@pytest.mark.parametrize("mode", [0o640, 0o440, 0o660, 0o604, 0o700, 0o400])
def test_key_file_other_modes(tmp_path, mode):
    """Others never; the group at most read, and only the process's own group (a Kubernetes Secret with
    fsGroup): the file made here has the test's own group."""
    key = KeyMaterial.load("MODEKEY001", generate_key(tmp_path, "MODEKEY001"))
    os.chmod(key.path, mode)
    assert os.stat(key.path).st_gid == os.getegid()
    status, output = config_check(write_config(tmp_path / "config.json", [key]))
    allowed = mode & 0o007 == 0 and mode & 0o070 in (0, 0o040)
    assert (status == 0) == allowed, (oct(mode), output)


def test_missing_key_file(tmp_path, signing_key):
    missing = tmp_path / "SubscriptionKey_GONE000001.p8"
    gone = KeyMaterial("GONE000001", missing, b"", signing_key.private_key, signing_key.public_key)
    status, output = config_check(write_config(tmp_path / "config.json", [gone]))
    assert status == 1, output
    assert str(missing) in output
    assert "not found" in output


def write_private(path, key) -> None:
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)


@pytest.mark.parametrize("curve", [ec.SECP384R1(), ec.SECP256K1()], ids=["P-384", "secp256k1"])
def test_non_p256_key_rejected(tmp_path, signing_key, curve):
    path = tmp_path / "SubscriptionKey_WRONGCURVE.p8"
    write_private(path, ec.generate_private_key(curve))
    wrong = KeyMaterial("WRONGCURVE", path, path.read_bytes(), signing_key.private_key, signing_key.public_key)
    status, output = config_check(write_config(tmp_path / "config.json", [wrong]))
    assert status == 1, output
    assert "P-256" in output
    assert str(path) in output
    assert "PRIVATE KEY" not in output


def test_unknown_config_key_reported_with_path(tmp_path, signing_key):
    config = write_config(tmp_path / "config.json", [signing_key])
    document = json.loads(config.read_text())
    document["apps"][0]["offers"][0]["colour"] = "blue"
    config.write_text(json.dumps(document))
    status, output = config_check(config)
    assert status == 1, output
    assert "$.apps[0].offers[0].colour: unknown key" in output


def test_several_mistakes_all_reported(tmp_path, signing_key):
    config = write_config(tmp_path / "config.json", [signing_key])
    document = json.loads(config.read_text())
    document["apps"][0]["colour"] = "blue"
    document["apps"][0]["issuerId"] = "not-a-uuid"
    document["apps"][0]["offers"][1]["productIds"] = "com.example.one"
    config.write_text(json.dumps(document))
    status, output = config_check(config)
    assert status == 1, output
    assert "$.apps[0].colour: unknown key" in output
    assert "$.apps[0].issuerId" in output
    assert "$.apps[0].offers[1].productIds" in output


# MARK: - Rotation


def test_rotation_active_key_signs(tmp_path, signing_key, rotated_key):
    config = write_config(tmp_path / "config.json", [signing_key, rotated_key], active_key_id=rotated_key.key_id)
    status, output = config_check(config)
    assert status == 0, output
    assert f"key {rotated_key.key_id}: signing" in output
    assert f"key {signing_key.key_id}: verify-only" in output

    server = Server.start(config, tmp_path)
    try:
        response = server.promo()
        assert response.status == 200, response.body
        document = response.json()
        assert document["keyId"] == rotated_key.key_id
        token = document["compactJWS"]
        header, _, _ = jws_parts(token)
        assert header == {"alg": "ES256", "kid": rotated_key.key_id, "typ": "JWT"}
        jwt.decode(token, rotated_key.public_key, algorithms=["ES256"], audience="promotional-offer")
        assert not jws_verifies(token, signing_key.public_key)

        legacy = server.promo(format="legacy")
        assert legacy.status == 200, legacy.body
        body = legacy.json()
        assert body["keyId"] == rotated_key.key_id
        payload = apple_legacy_payload(rotated_key.pem, rotated_key.key_id, BUNDLE_ID, PRODUCT_MONTHLY, OFFER_OPEN,
                                       None, body["nonce"], body["timestamp"])
        der = decode_standard_b64(body["signature"])
        assert der_signature_verifies(der, payload, rotated_key.public_key)
        assert not der_signature_verifies(der, payload, signing_key.public_key)

        ready = server.request("GET", "/readyz")
        assert {k: v for k, v in ready.json().items() if k != "configuration"} == {
            "status": "ready", "apps": 1, "keys": 2, "catalog": {"source": "file", "versions": {}}}
        assert ready.json()["configuration"] == hashlib.sha256(config.read_bytes()).hexdigest()[:12]
    finally:
        assert server.stop(signal.SIGTERM, timeout=5) == 0


def test_sighup_reloads_keys_and_keeps_last_good_config(tmp_path, signing_key, rotated_key):
    """Rotation without a restart: SIGHUP picks up a new active key; a broken file changes nothing."""
    config = write_config(tmp_path / "config.json", [signing_key])
    server = Server.start(config, tmp_path)
    try:
        assert server.promo().json()["keyId"] == signing_key.key_id
        write_config(config, [signing_key, rotated_key], active_key_id=rotated_key.key_id)
        server.process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 5
        while server.promo().json()["keyId"] != rotated_key.key_id:
            assert time.monotonic() < deadline, "the new key was not picked up after SIGHUP"
            time.sleep(0.05)
        token = server.promo().json()["compactJWS"]
        jwt.decode(token, rotated_key.public_key, algorithms=["ES256"], audience="promotional-offer")
        assert server.request("GET", "/readyz").json()["keys"] == 2

        broken = json.loads(config.read_text())
        broken["colour"] = "red"
        config.write_text(json.dumps(broken))
        server.process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 5
        while "reload failed" not in server.stderr_path.read_text(errors="replace"):
            assert time.monotonic() < deadline, "no reload failure was logged"
            time.sleep(0.05)
        assert server.process.poll() is None
        after = server.promo()
        assert after.status == 200 and after.json()["keyId"] == rotated_key.key_id
    finally:
        status = server.stop(signal.SIGTERM, timeout=5)
    log = server.stderr_path.read_text(errors="replace")
    assert status == 0
    assert "$.colour: unknown key" in log
    assert "PRIVATE KEY" not in log
    assert all(re.match(r"time=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z level=", line) for line in log.splitlines() if line), log


@pytest.mark.parametrize("proxied", [False, True], ids=["peer-address", "x-forwarded-for"])
def test_rate_limit_answers_429_with_retry_after(tmp_path, signing_key, proxied):
    config = write_config(tmp_path / "config.json", [signing_key])
    document = json.loads(config.read_text())
    document["rateLimit"] = {"requestsPerMinute": 6, "burst": 3}
    if proxied:
        document["rateLimit"]["clientAddressHeader"] = "X-Forwarded-For"
    config.write_text(json.dumps(document))
    server = Server.start(config, tmp_path)
    body = {"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY, "offerId": OFFER_OPEN}

    def promo(client: str):
        headers = {"X-Forwarded-For": f"203.0.113.7, {client}"} if proxied else {}
        return server.post("/v1/signatures/promotional-offer", body, headers=headers)

    try:
        assert [promo("198.51.100.1").status for _ in range(3)] == [200, 200, 200]
        limited = promo("198.51.100.1")
        assert limited.status == 429, limited.body
        assert limited.json()["error"]["code"] == "rate_limited"
        assert limited.header("Retry-After") == "10"
        # Health and metrics are never limited.
        assert server.request("GET", "/livez").status == 200
        if proxied:
            # Each client behind the proxy has its own bucket, and the spoofable first entry does not count.
            assert promo("198.51.100.2").status == 200
            spoofed = server.post("/v1/signatures/promotional-offer", body,
                                  headers={"X-Forwarded-For": "198.51.100.99, 198.51.100.1"})
            assert spoofed.status == 429
        metrics = server.request("GET", "/metrics").body.decode()
        assert 'status="429"' in metrics
    finally:
        assert server.stop(signal.SIGTERM, timeout=5) == 0


def test_active_key_must_exist(tmp_path, signing_key):
    config = write_config(tmp_path / "config.json", [signing_key], active_key_id="NOSUCHKEY1")
    status, output = config_check(config)
    assert status == 1, output
    assert "$.apps[0].activeKeyId" in output


# MARK: - keys generate / import-storekit


def test_keys_generate_refuses_overwrite(tmp_path):
    path = generate_key(tmp_path, "ONCE000001")
    before = path.read_bytes()
    result = run_cli("keys", "generate", "--key-id", "ONCE000001", "--out", str(path))
    assert result.returncode != 0
    assert path.read_bytes() == before


def test_keys_generate_prints_matching_public_key(tmp_path):
    path = tmp_path / "SubscriptionKey_PUBKEY0001.p8"
    result = run_cli("keys", "generate", "--key-id", "PUBKEY0001", "--out", str(path))
    assert result.returncode == 0, result.stderr
    assert "PRIVATE KEY" not in result.stdout
    start = result.stdout.index("-----BEGIN PUBLIC KEY-----")
    printed = serialization.load_pem_public_key(result.stdout[start:].encode())
    private = serialization.load_pem_private_key(path.read_bytes(), None)
    assert isinstance(private.curve, ec.SECP256R1)
    assert printed.public_numbers() == private.public_key().public_numbers()


def test_import_storekit(tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    der = key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    storekit = tmp_path / "Offers.storekit"
    storekit.write_text(json.dumps({
        "identifier": "0A1B2C3D",
        "products": [],
        "subscriptionGroups": [],
        "subscriptionOffersKeyPair": {"id": "ABCD1234", "privateKey": base64.b64encode(der).decode()},
        "version": {"major": 4, "minor": 0},
    }))
    out = tmp_path / "keys"
    out.mkdir()
    result = run_cli("keys", "import-storekit", str(storekit), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "ABCD1234" in result.stdout
    assert "PRIVATE KEY" not in result.stdout + result.stderr
    written = out / "SubscriptionKey_ABCD1234.p8"
    assert written.is_file()
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    loaded = serialization.load_pem_private_key(written.read_bytes(), None)
    assert isinstance(loaded, ec.EllipticCurvePrivateKey) and isinstance(loaded.curve, ec.SECP256R1)
    assert loaded.private_numbers() == key.private_numbers()
    assert loaded.public_key().public_numbers() == key.public_key().public_numbers()

    # The imported key signs, and the original public key verifies.
    signed = run_cli("sign", "promotional-offer", "--key", str(written), "--key-id", "ABCD1234",
                     "--issuer-id", ISSUER_ID, "--bundle-id", BUNDLE_ID, "--product-id", PRODUCT_MONTHLY,
                     "--offer-id", OFFER_OPEN)
    assert signed.returncode == 0, signed.stderr
    token = json.loads(signed.stdout)["compactJWS"]
    assert jws_parts(token)[0]["kid"] == "ABCD1234"
    verify_jws_es256(token, key.public_key())

    # A second import never overwrites the key.
    again = run_cli("keys", "import-storekit", str(storekit), "--out", str(out))
    assert again.returncode != 0


def test_import_storekit_without_key_pair(tmp_path):
    storekit = tmp_path / "Plain.storekit"
    storekit.write_text(json.dumps({"products": [], "version": {"major": 4, "minor": 0}}))
    result = run_cli("keys", "import-storekit", str(storekit), "--out", str(tmp_path))
    assert result.returncode == 1
    assert "subscriptionOffersKeyPair" in result.stderr
    assert not list(tmp_path.glob("*.p8"))


def test_import_storekit_wrong_curve(tmp_path):
    key = ec.generate_private_key(ec.SECP384R1())
    der = key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    storekit = tmp_path / "Bad.storekit"
    storekit.write_text(json.dumps(
        {"subscriptionOffersKeyPair": {"id": "BADC0001", "privateKey": base64.b64encode(der).decode()}}))
    result = run_cli("keys", "import-storekit", str(storekit), "--out", str(tmp_path))
    assert result.returncode == 1
    assert "P-256" in result.stderr
    assert not (tmp_path / "SubscriptionKey_BADC0001.p8").exists()
