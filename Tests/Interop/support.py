"""Helpers shared by the interop suite: running the binary, HTTP over urllib, JWS and ECDSA checks.

Everything here judges the binary from the outside. Signatures are always verified, never compared
byte for byte (ECDSA is randomized).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import select
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "Tests" / "Fixtures" / "apple"

BUNDLE_ID = "com.example.interop"
ISSUER_ID = "6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e5f"
KEY_ID = "TESTKEY001"
ROTATED_KEY_ID = "TESTKEY002"
PRODUCT_MONTHLY = "com.example.interop.pro.monthly"
PRODUCT_YEARLY = "com.example.interop.pro.yearly"
PRODUCT_UNCOVERED = "com.example.interop.lifetime"
OFFER_OPEN = "interop_open_offer"
OFFER_VERIFIED = "interop_verified_only"
OFFER_WINBACK = "interop_winback"

PROMO_PATH = "/v1/signatures/promotional-offer"
LEGACY_SEPARATOR = "\u2063"

# Canonical lowercase UUID v7 (the service's nonces: time-ordered): version nibble 7, variant 8/9/a/b.
UUID_V7_LOWER = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")

LISTENING = re.compile(r"^offer-signer listening on http://127\.0\.0\.1:(\d+)$")
ADMIN_LISTENING = re.compile(r"^offer-signer admin listening on http://127\.0\.0\.1:(\d+)$")


def binary() -> str:
    path = os.environ.get("OFFER_SIGNER_BIN") or str(REPO_ROOT / ".build" / "debug" / "offer-signer")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"offer-signer binary not found at {path}; run `swift build` or set OFFER_SIGNER_BIN")
    return path


def kit_binary() -> str:
    """The test kit's executable: OFFER_SIGNER_TESTKIT_BIN, else `offer-signer-testkit` beside the binary."""
    path = os.environ.get("OFFER_SIGNER_TESTKIT_BIN") or str(Path(binary()).parent / "offer-signer-testkit")
    if not os.access(path, os.X_OK):
        raise RuntimeError(
            f"offer-signer-testkit not found at {path}; run `swift build` or set OFFER_SIGNER_TESTKIT_BIN")
    return path


def run_cli(*args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run([binary(), *args], capture_output=True, text=True, timeout=timeout)


def run_testkit(*args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    """`offer-signer-testkit ARGS`, as `run_cli` runs `offer-signer`."""
    return subprocess.run([kit_binary(), *args], capture_output=True, text=True, timeout=timeout)


def generate_key(directory: Path, key_id: str) -> Path:
    out = directory / f"SubscriptionKey_{key_id}.p8"
    result = run_cli("keys", "generate", "--key-id", key_id, "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


@dataclass
class KeyMaterial:
    key_id: str
    path: Path
    pem: bytes
    private_key: ec.EllipticCurvePrivateKey
    public_key: ec.EllipticCurvePublicKey

    @classmethod
    def load(cls, key_id: str, path: Path) -> "KeyMaterial":
        pem = path.read_bytes()
        private_key = serialization.load_pem_private_key(pem, password=None)
        assert isinstance(private_key, ec.EllipticCurvePrivateKey)
        return cls(key_id, path, pem, private_key, private_key.public_key())

    def pem_body_lines(self) -> list[str]:
        return [line for line in self.pem.decode().splitlines() if line and not line.startswith("-----")]


def write_config(path: Path, keys: list[KeyMaterial], active_key_id: str | None = None, **app_extra) -> Path:
    app = {
        "bundleId": BUNDLE_ID,
        "issuerId": ISSUER_ID,
        "keys": [{"keyId": k.key_id, "privateKeyFile": str(k.path)} for k in keys],
        "offers": [
            {
                "id": OFFER_OPEN,
                "type": "promotional",
                "productIds": [PRODUCT_MONTHLY, PRODUCT_YEARLY],
                "requiresVerifiedCustomer": False,
            },
            {
                "id": OFFER_VERIFIED,
                "type": "promotional",
                "productIds": [PRODUCT_MONTHLY],
                "requiresVerifiedCustomer": True,
            },
            {
                "id": OFFER_WINBACK,
                "type": "winBack",
                "productIds": [PRODUCT_MONTHLY],
            },
        ],
    }
    if active_key_id is not None:
        app["activeKeyId"] = active_key_id
    app.update(app_extra)
    config = {"listen": {"host": "127.0.0.1", "port": 0}, "apps": [app]}
    path.write_text(json.dumps(config, indent=2))
    return path


# MARK: - Server process


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self):
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        for key, value in self.headers.items():
            if key.lower() == name.lower():
                return value
        return None


@dataclass
class Server:
    process: subprocess.Popen
    port: int
    stderr_path: Path
    bodies: list[bytes] = field(default_factory=list)
    admin_port: int | None = None

    def admin(self) -> "Server":
        """The same process, addressed at its admin listener (`start(..., admin=True)`)."""
        assert self.admin_port is not None, "the server was not started with admin=True"
        return Server(self.process, self.admin_port, self.stderr_path)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @classmethod
    def start(cls, config: Path, workdir: Path, timeout: float = 10, env: dict[str, str] | None = None,
              admin: bool = False) -> "Server":
        """`env` adds to (or overrides) this process's environment for the server. With `admin`, the configuration
        has an admin listener, whose announced port is kept in `admin_port`."""
        stderr_path = workdir / f"server-{time.monotonic_ns()}.stderr"
        stderr = open(stderr_path, "wb")
        process = subprocess.Popen(
            [binary(), "serve", "--config", str(config), "--port", "0", "--host", "127.0.0.1"],
            stdout=subprocess.PIPE,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **env} if env else None,
        )
        stderr.close()
        line = b""
        deadline = time.monotonic() + timeout
        fd = process.stdout.fileno()
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or process.poll() is not None:
                process.kill()
                process.wait()
                raise RuntimeError(
                    f"server did not announce its port within {timeout}s (got {line!r}); "
                    f"stderr: {stderr_path.read_text(errors='replace')}"
                )
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 1)
                if not chunk:
                    continue
                line += chunk
        match = LISTENING.match(line.decode().rstrip("\n"))
        if not match:
            process.kill()
            process.wait()
            raise AssertionError(f"unexpected first stdout line: {line!r}")
        admin_port = None
        if admin:
            second = b""
            while not second.endswith(b"\n"):
                ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
                chunk = os.read(fd, 1) if ready else b""
                if not chunk:
                    process.kill()
                    process.wait()
                    raise AssertionError(f"no admin listener line after {line!r}: {second!r}")
                second += chunk
            admin_match = ADMIN_LISTENING.match(second.decode().rstrip("\n"))
            assert admin_match, f"unexpected second stdout line: {second!r}"
            admin_port = int(admin_match.group(1))
        # Keep draining stdout so the server can never block on a full pipe.
        threading.Thread(target=lambda: process.stdout.read(), daemon=True).start()
        return cls(process, int(match.group(1)), stderr_path, admin_port=admin_port)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"server did not exit within {timeout}s of signal {sig}")

    def request(self, method: str, path: str, body: bytes | dict | list | None = None,
                headers: dict[str, str] | None = None, timeout: float = 10) -> Response:
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        all_headers = {"Content-Type": "application/json"} if data is not None else {}
        all_headers.update(headers or {})
        request = urllib.request.Request(self.base_url + path, data=data, method=method, headers=all_headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as reply:
                response = Response(reply.status, dict(reply.headers.items()), reply.read())
        except urllib.error.HTTPError as error:
            response = Response(error.code, dict(error.headers.items()), error.read())
        self.bodies.append(response.body)
        return response

    def post(self, path: str, body, **kwargs) -> Response:
        return self.request("POST", path, body, **kwargs)

    def promo(self, **fields) -> Response:
        body = {"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY, "offerId": OFFER_OPEN}
        body.update(fields)
        body = {k: v for k, v in body.items() if v is not None}
        return self.post(PROMO_PATH, body)


def start_servers(config: Path, workdir: Path, count: int, timeout: float = 30) -> list[Server]:
    """`count` servers of one configuration, started at once (their migrations race, as replicas' do). When one
    does not start, the others are stopped and the failure is raised."""
    with ThreadPoolExecutor(count) as pool:
        starts = [pool.submit(Server.start, config, workdir, timeout) for _ in range(count)]
    servers, failures = [], []
    for start in starts:
        try:
            servers.append(start.result())
        except Exception as error:  # noqa: BLE001 - reported below, once the others are stopped
            failures.append(error)
    if failures:
        stop_servers(servers)
        raise AssertionError(f"a server did not start: {failures}")
    assert len({server.port for server in servers}) == count
    return servers


def stop_servers(servers: list[Server]) -> None:
    """Stops every server still running with SIGTERM; each must exit 0."""
    for server in servers:
        if server.process.poll() is None:
            status = server.stop(signal.SIGTERM, timeout=10)
            assert status == 0, f"server exited with {status}: {server.stderr_path.read_text(errors='replace')}"


def ask_together(servers: list[Server], bodies: list[dict], headers: dict[str, str] | None = None,
                 path: str = PROMO_PATH) -> list[Response]:
    """POSTs `bodies[i]` to `servers[i % len(servers)]`, every request from its own thread, all released at once by
    a barrier; the answers in the order of `bodies`."""
    barrier = threading.Barrier(len(bodies))
    answers: list[Response | BaseException | None] = [None] * len(bodies)

    def ask(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            answers[index] = servers[index % len(servers)].post(path, bodies[index], headers=headers, timeout=30)
        except BaseException as error:  # noqa: BLE001 - checked by the caller
            answers[index] = error

    threads = [threading.Thread(target=ask, args=(index,)) for index in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    failed = [answer for answer in answers if not isinstance(answer, Response)]
    assert not failed, f"{len(failed)} requests got no answer: {failed[:3]}"
    return answers


def signed_nonce(response: Response, signing_key: KeyMaterial, offer: str) -> str:
    """The nonce of a 200 JWS answer, after checking the JWS verifies and carries that nonce and offer."""
    assert response.status == 200, response.body
    body = response.json()
    verify_jws_es256(body["compactJWS"], signing_key.public_key)
    _, claims, _ = jws_parts(body["compactJWS"])
    assert claims["nonce"] == body["nonce"]
    assert claims["offerIdentifier"] == offer
    return body["nonce"]


def assert_refused_for(response: Response, code: str) -> None:
    """A 403 `not_eligible` whose only failed rule is `limits` with `code`."""
    assert response.status == 403, response.body
    error = response.json()["error"]
    assert error["code"] == "not_eligible", error
    assert [(reason["rule"], reason["code"]) for reason in error["reasons"]] == [("limits", code)], error


class Hammer(threading.Thread):
    """A client that asks `server` for `offer`'s signature over one keep-alive connection, again and again, until
    `stop` is set or the connection ends (the server was killed). Keeps the nonce of every 200 answer; `failure`
    says what ended it otherwise: a non-200 answer (its status first) or the connection's error."""

    def __init__(self, server: Server, offer: str, stop: threading.Event):
        super().__init__(daemon=True)
        self.server, self.offer, self.stop = server, offer, stop
        self.nonces: list[str] = []
        self.failure: str | None = None

    def run(self) -> None:
        body = json.dumps({"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY, "offerId": self.offer})
        connection = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
        try:
            while not self.stop.is_set():
                connection.request("POST", PROMO_PATH, body=body, headers={"Content-Type": "application/json"})
                response = connection.getresponse()
                data = response.read()
                if response.status != 200:
                    self.failure = f"{response.status}: {data[:300]!r}"
                    return
                self.nonces.append(json.loads(data)["nonce"])
        except (OSError, http.client.HTTPException) as error:
            self.failure = f"connection ended: {error!r}"
        finally:
            connection.close()

    @property
    def refused(self) -> bool:
        """Whether an answer other than 200 ended it (not the connection)."""
        return self.failure is not None and not self.failure.startswith("connection ended")


# MARK: - JWS


def b64url_decode(segment: str) -> bytes:
    assert "=" not in segment, f"base64url segment carries padding: {segment!r}"
    assert re.fullmatch(r"[A-Za-z0-9_-]*", segment), f"not base64url: {segment!r}"
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), f"duplicate JSON member names: {keys}"
    return dict(pairs)


def jws_parts(token: str) -> tuple[dict, dict, bytes]:
    """The header and claims as raw JSON (duplicates rejected) and the raw signature bytes."""
    segments = token.split(".")
    assert len(segments) == 3, f"not a compact JWS: {token!r}"
    header = json.loads(b64url_decode(segments[0]), object_pairs_hook=_no_duplicates)
    claims = json.loads(b64url_decode(segments[1]), object_pairs_hook=_no_duplicates)
    return header, claims, b64url_decode(segments[2])


def verify_jws_es256(token: str, public_key: ec.EllipticCurvePublicKey) -> None:
    """Verifies an ES256 compact JWS with `cryptography` alone: r||s (64 bytes) turned into DER.
    Raises InvalidSignature when it does not verify."""
    header_b64, payload_b64, signature_b64 = token.split(".")
    raw = b64url_decode(signature_b64)
    assert len(raw) == 64, f"ES256 signature must be raw r||s of 64 bytes, got {len(raw)}"
    der = utils.encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    public_key.verify(der, f"{header_b64}.{payload_b64}".encode("ascii"), ec.ECDSA(hashes.SHA256()))


def jws_verifies(token: str, public_key: ec.EllipticCurvePublicKey) -> bool:
    try:
        verify_jws_es256(token, public_key)
        return True
    except InvalidSignature:
        return False


def flip_payload_byte(token: str) -> str:
    """The same token with one byte of the decoded payload changed (re-encoded, signature kept)."""
    header_b64, payload_b64, signature_b64 = token.split(".")
    payload = bytearray(b64url_decode(payload_b64))
    payload[len(payload) // 2] ^= 0x01
    encoded = base64.urlsafe_b64encode(bytes(payload)).rstrip(b"=").decode()
    assert encoded != payload_b64
    return f"{header_b64}.{encoded}.{signature_b64}"


# MARK: - Legacy


def der_signature_verifies(signature_der: bytes, payload: bytes, public_key: ec.EllipticCurvePublicKey) -> bool:
    try:
        public_key.verify(signature_der, payload, ec.ECDSA(hashes.SHA256()))
        return True
    except InvalidSignature:
        return False


class _PayloadRecorder:
    """Stands in for the private key inside Apple's PromotionalOfferSignatureCreator to capture the
    exact bytes Apple's code would sign."""

    def __init__(self):
        self.payload: bytes | None = None

    def sign(self, data, algorithm):
        self.payload = bytes(data)
        return b""


def apple_legacy_payload(signing_pem: bytes, key_id: str, bundle_id: str, product_id: str, offer_id: str,
                         app_account_token: str | None, nonce: str, timestamp: int) -> bytes:
    """The legacy payload exactly as Apple's PromotionalOfferSignatureCreator builds it (its own code runs)."""
    from appstoreserverlibrary.promotional_offer import PromotionalOfferSignatureCreator

    creator = PromotionalOfferSignatureCreator(signing_pem, key_id, bundle_id)
    recorder = _PayloadRecorder()
    creator._signing_key = recorder
    creator.create_signature(product_id, offer_id, app_account_token or "", uuid.UUID(nonce), timestamp)
    assert recorder.payload is not None
    return recorder.payload


def decode_standard_b64(text: str) -> bytes:
    assert re.fullmatch(r"[A-Za-z0-9+/]*={0,2}", text), f"not standard Base64: {text!r}"
    assert len(text) % 4 == 0, f"standard Base64 must be padded: {text!r}"
    raw = base64.b64decode(text, validate=True)
    assert base64.b64encode(raw).decode() == text, "Base64 is not canonical"
    return raw


def is_uuid_v7_lower(text) -> bool:
    return isinstance(text, str) and UUID_V7_LOWER.match(text) is not None


# MARK: - Raw sockets


def read_raw(port: int, parts: list[bytes], delay: float = 0.0, timeout: float = 10) -> bytes:
    """Sends `parts` one by one (Nagle off, optional pause between) and returns all bytes read until the server
    closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for part in parts:
            sock.sendall(part)
            if delay:
                time.sleep(delay)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data


# Offers of the verified server (the `verified_server` fixture), besides OFFER_OPEN.
OFFER_LAPSED = "lapsed_30"
OFFER_ONCE = "once_per_customer"
OFFER_FIRST_COME = "first_come"
OFFER_INTRO = "intro_trial"
OFFER_WB_ANY = "wb_any"
OFFER_WB_GBR = "wb_gbr"
DAY_MS = 86_400_000


# MARK: - Test-signed Apple data and a server that trusts it


def transaction_payload(now: int, expired_days_ago: int, bundle_id: str = BUNDLE_ID, environment: str = "Sandbox",
                        original_transaction_id: str = "2000000000000001", **overrides) -> dict:
    """A transaction like SignedDataFactory.subscriptionTransaction (Apple's field names)."""
    payload = {
        "transactionId": original_transaction_id,
        "originalTransactionId": original_transaction_id,
        "bundleId": bundle_id,
        "productId": PRODUCT_MONTHLY,
        "subscriptionGroupIdentifier": "21000001",
        "purchaseDate": now - (expired_days_ago + 30) * DAY_MS,
        "originalPurchaseDate": now - (expired_days_ago + 30) * DAY_MS,
        "expiresDate": now - expired_days_ago * DAY_MS,
        "quantity": 1,
        "type": "Auto-Renewable Subscription",
        "inAppOwnershipType": "PURCHASED",
        "signedDate": now,
        "environment": environment,
        "transactionReason": "PURCHASE",
        "storefront": "USA",
        "storefrontId": "143441",
        "price": 9990,
        "currency": "USD",
        "appTransactionId": "704289572311" + original_transaction_id[-4:],
    }
    payload.update(overrides)
    return payload


def renewal_payload(now: int, original_transaction_id: str = "2000000000000001", **overrides) -> dict:
    payload = {
        "originalTransactionId": original_transaction_id,
        "productId": PRODUCT_MONTHLY,
        "autoRenewProductId": PRODUCT_MONTHLY,
        "autoRenewStatus": 0,
        "isInBillingRetryPeriod": False,
        "signedDate": now,
        "environment": "Sandbox",
        "recentSubscriptionStartDate": now - 30 * DAY_MS,
    }
    payload.update(overrides)
    return payload


def retention_payload(now: int, product_id: str, original_transaction_id: str = "2000000000000001",
                      **overrides) -> dict:
    """A Retention Messaging request (`DecodedRealtimeRequestBody`), Sandbox, a new requestIdentifier."""
    payload = {
        "originalTransactionId": original_transaction_id,
        "appAppleId": 1234567890,
        "productId": product_id,
        "userLocale": "en-US",
        "requestIdentifier": str(uuid.uuid4()),
        "environment": "Sandbox",
        "signedDate": now,
    }
    payload.update(overrides)
    return payload


def app_transaction_payload(now: int) -> dict:
    return {
        "appTransactionId": "7042895723110001",  # the same customer as transaction_payload's
        "bundleId": BUNDLE_ID,
        "appAppleId": 1234567890,
        "applicationVersion": "1",
        "originalApplicationVersion": "1",
        "receiptType": "Sandbox",
        "receiptCreationDate": now,
        "originalPurchaseDate": now - 90 * DAY_MS,
        "signedDate": now,
        "originalPlatform": "iOS",
    }


class SignedData:
    """Apple-like signed data from `offer-signer-testkit sign`, good and bad."""

    def __init__(self, directory: Path):
        self.directory = directory
        ca, stranger = directory / "ca", directory / "stranger"
        now = int(time.time() * 1000)
        # Lapsed past Apple's longest billing retry (60 days): expired even without renewal info.
        self.lapsed = self.sign(ca, "transaction", transaction_payload(now, 70))
        self.recent = self.sign(ca, "transaction", transaction_payload(now, 10))
        self.app_transaction = self.sign(ca, "app-transaction", app_transaction_payload(now))
        self.renewal = self.sign(ca, "renewal-info", renewal_payload(
            now, eligibleWinBackOfferIds=[OFFER_WB_GBR, "not_configured", OFFER_WB_ANY]))
        # The same customer in Production (App Store purchases), where legacy signatures are allowed.
        self.lapsed_production = self.sign(ca, "transaction", transaction_payload(now, 70, environment="Production"))
        self.renewal_production = self.sign(ca, "renewal-info", renewal_payload(
            now, eligibleWinBackOfferIds=[OFFER_WB_GBR, "not_configured", OFFER_WB_ANY], environment="Production"))
        self.foreign_renewal = self.sign(ca, "renewal-info", renewal_payload(now, "2000000000000999"))
        self.wrong_app = self.sign(ca, "transaction", transaction_payload(now, 40, bundle_id="com.example.other"))
        self.production = self.sign(ca, "transaction", transaction_payload(now, 40, environment="Production"))
        self.stranger = self.sign(stranger, "transaction", transaction_payload(now, 40))
        self.wrong_type = self.sign(ca, "transaction", transaction_payload(now, 40, expiresDate="soon"))
        # The same header and signature over a payload that says something else.
        header, payload, signature = self.lapsed.split(".")
        claims = json.loads(b64url_decode(payload))
        claims["expiresDate"] -= 400 * DAY_MS
        forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
        self.bad_signature = f"{header}.{forged}.{signature}"
        # Retention Messaging requests of that customer, as Apple posts them.
        self.retention = self.sign(ca, "retention-request", retention_payload(now, PRODUCT_MONTHLY))
        self.retention_yearly = self.sign(ca, "retention-request", retention_payload(now, PRODUCT_YEARLY))
        self.retention_uncovered = self.sign(ca, "retention-request", retention_payload(now, PRODUCT_UNCOVERED))

    def sign(self, ca: Path, kind: str, payload: dict) -> str:
        return sign_with_testkit(self.directory, ca, kind, payload)


def sign_with_testkit(directory: Path, ca: Path, kind: str, payload: dict) -> str:
    """`payload` signed by `offer-signer-testkit sign KIND` with the test chain in `ca` (the payload file is written
    to `directory`)."""
    path = directory / f"payload-{uuid.uuid4()}.json"
    path.write_text(json.dumps(payload))
    result = run_testkit("sign", kind, "--ca", str(ca), "--payload", str(path))
    assert result.returncode == 0, result.stderr
    token = result.stdout.strip()
    assert token.count(".") == 2, token
    return token


# MARK: - PostgreSQL

POSTGRES_CLUSTER_SCRIPT = REPO_ROOT / "Scripts" / "postgres-test-cluster.sh"


def psql(dsn: str, sql: str) -> list[list[str]]:
    """The rows `sql` returns on `dsn`, each a list of text fields, read by `psql` (a reader independent of the
    service's own libpq code)."""
    result = subprocess.run(
        ["psql", "--no-psqlrc", "--quiet", "--no-align", "--tuples-only", "--field-separator=\t",
         "--set=ON_ERROR_STOP=1", "--dbname", dsn, "--command", sql],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"psql failed on {sql!r}: {result.stderr}"
    return [line.split("\t") for line in result.stdout.splitlines()]


def create_postgres_database(server_dsn: str, name: str) -> str:
    """Creates the empty database `name` with the superuser of `server_dsn`, and returns the same DSN naming it."""
    assert re.fullmatch(r"[a-z_][a-z0-9_]*", name), name
    psql(server_dsn, f"CREATE DATABASE {name}")
    return urllib.parse.urlunsplit(urllib.parse.urlsplit(server_dsn)._replace(path=f"/{name}"))


def drop_postgres_database(server_dsn: str, name: str) -> None:
    """Drops `name`, closing the connections left to it (a killed server's are closed by PostgreSQL itself)."""
    assert re.fullmatch(r"[a-z_][a-z0-9_]*", name), name
    psql(server_dsn, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


class KitFake:
    """A fake of the test kit (`offer-signer-testkit apple-api` or `app-store-connect`) on a free port: its state
    file, rewritten whole (a new file renamed over the old), and its standard error kept in a file."""

    def __init__(self, command: str, state_path: Path, stderr_path: Path, arguments: list[str], state: dict):
        self.state_path = state_path
        self.stderr_path = stderr_path
        self.set_state(state)
        with open(stderr_path, "wb") as stderr:
            self.process = subprocess.Popen(
                [kit_binary(), command, "--state", str(state_path), "--port", "0", *arguments],
                stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL)
        prefix = f"offer-signer-testkit {command} listening on http://127.0.0.1:"
        line = b""
        deadline = time.monotonic() + 10
        while not line.endswith(b"\n"):
            assert time.monotonic() < deadline and self.process.poll() is None, stderr_path.read_text()
            ready, _, _ = select.select([self.process.stdout], [], [], 0.5)
            if ready:
                line += os.read(self.process.stdout.fileno(), 1)
        text = line.decode().rstrip("\n")
        assert text.startswith(prefix), text
        self.port = int(text[len(prefix):])
        threading.Thread(target=lambda: self.process.stdout.read(), daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def set_state(self, document: dict) -> None:
        staged = self.state_path.with_suffix(".new")
        staged.write_text(json.dumps(document))
        staged.replace(self.state_path)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)

