"""Bad input to the running service: each gets its documented 4xx JSON error, the server survives it,
and nothing secret leaks. Also chunked bodies, keep-alive and the size limit at its boundary."""

from __future__ import annotations

import hashlib
import http.client
import json
import pathlib
import socket

import pytest

from support import (
    read_raw,
    BUNDLE_ID,
    OFFER_OPEN,
    OFFER_VERIFIED,
    OFFER_WINBACK,
    PRODUCT_MONTHLY,
    PRODUCT_UNCOVERED,
    PROMO_PATH,
)

GOOD = {"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY, "offerId": OFFER_OPEN}
MAX_BODY = 64 * 1024


def body(**changes) -> bytes:
    fields = dict(GOOD)
    for name, value in changes.items():
        if value is ...:
            fields.pop(name)
        else:
            fields[name] = value
    return json.dumps(fields).encode()


# (id, method, path, raw body, status, code, words the message must contain)
CASES = [
    ("invalid-json", "POST", PROMO_PATH, b'{"bundleId": ', 400, "invalid_request", ["JSON"]),
    ("trailing-garbage", "POST", PROMO_PATH, body() + b"x", 400, "invalid_request", ["JSON"]),
    ("empty-body", "POST", PROMO_PATH, b"", 400, "invalid_request", ["empty"]),
    ("json-array", "POST", PROMO_PATH, b"[1,2]", 400, "invalid_request", ["object"]),
    ("json-string", "POST", PROMO_PATH, b'"hello"', 400, "invalid_request", ["object"]),
    ("json-null", "POST", PROMO_PATH, b"null", 400, "invalid_request", ["object"]),
    ("missing-bundleId", "POST", PROMO_PATH, body(bundleId=...), 400, "invalid_request", ['"bundleId"']),
    ("missing-productId", "POST", PROMO_PATH, body(productId=...), 400, "invalid_request", ['"productId"']),
    ("missing-offerId", "POST", PROMO_PATH, body(offerId=...), 400, "invalid_request", ['"offerId"']),
    ("productId-number", "POST", PROMO_PATH, body(productId=5), 400, "invalid_request", ['"productId"']),
    ("bundleId-array", "POST", PROMO_PATH, body(bundleId=[BUNDLE_ID]), 400, "invalid_request", ['"bundleId"']),
    ("offerId-empty", "POST", PROMO_PATH, body(offerId=""), 400, "invalid_request", ['"offerId"']),
    ("format-number", "POST", PROMO_PATH, body(format=1), 400, "invalid_request", ['"format"']),
    ("unknown-field", "POST", PROMO_PATH, body(colour="red"), 400, "invalid_request", ['"colour"']),
    ("token-not-uuid", "POST", PROMO_PATH, body(appAccountToken="not-a-uuid"), 400, "invalid_request",
     ['"appAccountToken"']),
    ("token-too-short", "POST", PROMO_PATH, body(appAccountToken="7e3fb20b-4cdb-47cc-936d-99d65f60813"), 400,
     "invalid_request", ['"appAccountToken"']),
    ("token-braced", "POST", PROMO_PATH, body(appAccountToken="{7e3fb20b-4cdb-47cc-936d-99d65f608138}"), 400,
     "invalid_request", ['"appAccountToken"']),
    ("unknown-format", "POST", PROMO_PATH, body(format="jwt"), 400, "invalid_request", ['"format"', "jwt"]),
    ("unknown-app", "POST", PROMO_PATH, body(bundleId="com.example.other"), 404, "unknown_app",
     ["com.example.other"]),
    ("unknown-offer", "POST", PROMO_PATH, body(offerId="no_such_offer"), 404, "unknown_offer", ["no_such_offer"]),
    ("product-not-covered", "POST", PROMO_PATH, body(productId=PRODUCT_UNCOVERED), 400, "product_not_covered",
     [PRODUCT_UNCOVERED]),
    ("winback-offer-on-promo-route", "POST", PROMO_PATH, body(offerId=OFFER_WINBACK), 400, "wrong_offer_type",
     [OFFER_WINBACK]),
    ("invalid-utf8-value", "POST", PROMO_PATH,
     b'{"bundleId":"com.example.interop","productId":"\xff\xfe","offerId":"x"}', 400, "invalid_request", ["UTF-8"]),
    ("invalid-utf8-overlong", "POST", PROMO_PATH, b'{"bundleId":"\xc0\xaf"}', 400, "invalid_request", []),
    ("invalid-utf8-surrogate", "POST", PROMO_PATH, b'{"bundleId":"\xed\xa0\x80"}', 400, "invalid_request", []),
    ("nested-arrays-1000", "POST", PROMO_PATH, b"[" * 1000, 400, "invalid_request", []),
    ("nested-objects-1000", "POST", PROMO_PATH, b'{"a":' * 1000, 400, "invalid_request", []),
    ("nested-closed-1000", "POST", PROMO_PATH, b"[" * 1000 + b"]" * 1000, 400, "invalid_request", []),
    ("oversize-content-length", "POST", PROMO_PATH, b" " * (MAX_BODY + 1), 413, "payload_too_large", []),
    ("get-on-post-route", "GET", PROMO_PATH, None, 405, "method_not_allowed", []),
    ("put-on-post-route", "PUT", PROMO_PATH, body(), 405, "method_not_allowed", []),
    ("post-on-get-route", "POST", "/livez", body(), 405, "method_not_allowed", []),
    ("unknown-path", "GET", "/v1/nothing-here", None, 404, "not_found", []),
    ("unknown-path-post", "POST", "/v1/signatures/promotional-offers", body(), 404, "not_found", []),
    ("trailing-slash", "POST", PROMO_PATH + "/", body(), 404, "not_found", []),
]


@pytest.mark.parametrize("name,method,path,raw,status,code,words", CASES, ids=[c[0] for c in CASES])
def test_error_table(server, name, method, path, raw, status, code, words):
    response = server.request(method, path, raw)
    assert response.status == status, (response.status, response.body)
    assert response.header("Content-Type").startswith("application/json")
    document = response.json()
    assert set(document) == {"error"}
    error = document["error"]
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"]
    for word in words:
        assert word in error["message"], (word, error["message"])
    if status == 405:
        allow = "GET, HEAD" if path == "/livez" else "POST"
        assert response.header("Allow") == allow


def test_not_eligible_without_signed_data(server):
    response = server.post(PROMO_PATH, json.loads(body(offerId=OFFER_VERIFIED)))
    assert response.status == 403, response.body
    error = response.json()["error"]
    assert error["code"] == "not_eligible"
    assert error["reasons"] == [{"rule": "verifiedCustomer", "code": "verified_customer_required"}]


def test_not_eligible_legacy_too(server):
    response = server.post(PROMO_PATH, json.loads(body(offerId=OFFER_VERIFIED, format="legacy")))
    assert response.status == 403, response.body
    assert response.json()["error"]["code"] == "not_eligible"
    assert "signature" not in response.json()


# MARK: - Raw sockets


def raw_exchange(port: int, parts: list[bytes], delay: float = 0.0, timeout: float = 10) -> tuple[int, dict, bytes]:
    """Sends `parts` one by one (Nagle off, optional pause between), reads until the server closes."""
    data = read_raw(port, parts, delay, timeout)
    assert data, "server closed the connection without a response"
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    length = int(headers.get("content-length", len(rest)))
    return status, headers, rest[:length]


def request_head(extra: str) -> bytes:
    return (f"POST {PROMO_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Connection: close\r\n{extra}\r\n").encode()


def test_body_in_small_chunks(server, signing_key):
    payload = body()
    parts = [request_head(f"Content-Length: {len(payload)}\r\n")]
    parts += [payload[i:i + 3] for i in range(0, len(payload), 3)]
    status, _, reply = raw_exchange(server.port, parts, delay=0.002)
    assert status == 200, reply
    document = json.loads(reply)
    assert document["format"] == "jws" and document["keyId"] == signing_key.key_id


def test_headers_and_body_split_byte_by_byte(server):
    payload = body(format="legacy")
    message = request_head(f"Content-Length: {len(payload)}\r\n") + payload
    status, _, reply = raw_exchange(server.port, [message[i:i + 1] for i in range(len(message))], delay=0.0005)
    assert status == 200, reply
    assert json.loads(reply)["format"] == "legacy"


def test_chunked_transfer_encoding(server):
    payload = body()
    parts = [request_head("Transfer-Encoding: chunked\r\n")]
    for i in range(0, len(payload), 7):
        piece = payload[i:i + 7]
        parts.append(b"%x\r\n" % len(piece) + piece + b"\r\n")
    parts.append(b"0\r\n\r\n")
    status, _, reply = raw_exchange(server.port, parts, delay=0.001)
    assert status == 200, reply
    assert json.loads(reply)["format"] == "jws"


def test_body_at_limit_accepted(server):
    payload = body()
    padded = payload[:-1] + b" " * (MAX_BODY - len(payload)) + b"}"
    assert len(padded) == MAX_BODY
    response = server.request("POST", PROMO_PATH, padded)
    assert response.status == 200, response.body[:300]


def test_oversize_content_length_with_http_client(server):
    """413 is answered from the declared length; the client may still be sending."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        try:
            connection.request("POST", PROMO_PATH, body=b" " * (MAX_BODY * 4),
                               headers={"Content-Type": "application/json"})
        except (BrokenPipeError, ConnectionResetError):
            pass
        reply = connection.getresponse()
        assert reply.status == 413
        assert json.loads(reply.read())["error"]["code"] == "payload_too_large"
    finally:
        connection.close()


def test_oversize_chunked_body_gets_413(server):
    """No Content-Length: the limit is hit while the body arrives; the client must still get a 413."""
    piece = b" " * 1024
    parts = [request_head("Transfer-Encoding: chunked\r\n")]
    parts += [b"%x\r\n" % len(piece) + piece + b"\r\n" for _ in range(70)]
    parts.append(b"0\r\n\r\n")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        try:
            for part in parts:
                sock.sendall(part)
        except (BrokenPipeError, ConnectionResetError):
            pass
        data = b""
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        except ConnectionResetError:
            pass
    assert data.startswith(b"HTTP/1.1 413"), f"expected a 413 response, got {data[:200]!r}"
    assert b"payload_too_large" in data


# MARK: - Keep-alive


def test_keep_alive(server):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.connect()
        first_socket = connection.sock
        nonces = []
        for fmt in ("jws", "legacy"):
            connection.request("POST", PROMO_PATH, body=body(format=fmt),
                               headers={"Content-Type": "application/json"})
            reply = connection.getresponse()
            document = json.loads(reply.read())
            assert reply.status == 200, document
            assert document["format"] == fmt
            assert (reply.getheader("Connection") or "").lower() != "close"
            assert not reply.will_close
            nonces.append(document["nonce"])
        assert connection.sock is first_socket, "the connection was reopened"
        # An error answered on the same connection keeps it open too.
        connection.request("POST", PROMO_PATH, body=body(offerId="no_such_offer"),
                           headers={"Content-Type": "application/json"})
        reply = connection.getresponse()
        assert reply.status == 404
        reply.read()
        assert not reply.will_close
        connection.request("GET", "/livez")
        reply = connection.getresponse()
        assert reply.status == 200 and json.loads(reply.read()) == {"status": "ok"}
        assert connection.sock is first_socket
        assert nonces[0] != nonces[1]
    finally:
        connection.close()


# MARK: - Secrets and survival


def test_no_key_material_in_responses(server, signing_key):
    responses = [
        server.promo(),
        server.promo(format="legacy", appAccountToken="7E3FB20B-4CDB-47CC-936D-99D65F608138"),
        server.promo(offerId=OFFER_VERIFIED),
        server.promo(offerId="missing"),
        server.request("POST", PROMO_PATH, b"{"),
        server.request("GET", "/readyz"),
        server.request("GET", "/metrics"),
        server.request("GET", "/livez"),
    ]
    assert responses[0].status == 200 and responses[1].status == 200
    pem_lines = signing_key.pem_body_lines()
    assert pem_lines and all(len(line) >= 16 for line in pem_lines)
    joined = "".join(pem_lines)
    texts = [r.body.decode("latin-1") + json.dumps(r.headers) for r in responses]
    texts += [b.decode("latin-1") for b in server.bodies]
    texts.append(server.stderr_path.read_text(errors="replace"))
    for text in texts:
        assert "PRIVATE KEY" not in text
        assert joined not in text
        for line in pem_lines:
            assert line not in text


def test_readyz(server, config_path):
    response = server.request("GET", "/readyz")
    assert response.status == 200
    # The configuration in force: the first 12 hex digits of the SHA-256 of the file's bytes.
    loaded = hashlib.sha256(pathlib.Path(config_path).read_bytes()).hexdigest()[:12]
    assert response.json() == {"status": "ready", "apps": 1, "keys": 1, "configuration": loaded,
                               "catalog": {"source": "file", "versions": {}}}


def test_query_string_ignored_for_routing(server):
    response = server.request("GET", "/livez?probe=1")
    assert response.status == 200 and response.json() == {"status": "ok"}


def test_server_alive_after_bad_input(server):
    """Runs last in this module: everything above was thrown at the same process."""
    for raw in (b"[" * 5000, b"\xff" * 100, b'{"bundleId":' + b'"a' * 2000):
        assert server.request("POST", PROMO_PATH, raw).status == 400
    assert server.process.poll() is None, "the server process died"
    response = server.request("GET", "/livez")
    assert response.status == 200
    assert response.json() == {"status": "ok"}
    assert server.promo().status == 200
