#!/usr/bin/env python3
"""The benchmark's peer: offer-signer's promotional-offer work done with Apple's own Python library.

`app-store-server-library`'s `SignedDataVerifier` verifies the signed transaction and renewal info, and its
`PromotionalOfferV2SignatureCreator` signs the promotional offer JWS, behind uvicorn with N worker processes
sharing one listening socket. The app is a bare ASGI callable (no framework), so what the peer costs over the
library is HTTP and JSON only. See Benchmarks/peer/README.md.

    python Benchmarks/peer/server.py --host 127.0.0.1 --port 0 --workers 2 --key SubscriptionKey_ID.p8 \
        --key-id ID --issuer-id UUID --bundle-id B --root root.cer [--environment Sandbox]

Prints exactly one line on stdout, `peer listening on http://HOST:PORT`, once every worker serves; logs go to
stderr. SIGTERM or SIGINT stops the workers and exits 0.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import sys
import time
from pathlib import Path

# The offers of the benchmark's app (Benchmarks/run.py), and their rules.
OPEN_OFFER = "bench_open"  # no signed data needed, no rules
RULE_OFFER = "bench_winback_rules"  # {"all": [{"subscriptionStatus": ["expired"]}, {"daysSinceExpiry": {"min": 30}}]}
MIN_DAYS_SINCE_EXPIRY = 30
DAY_MS = 86_400_000
# As offer-signer's CustomerFacts: past Apple's longest billing retry (60 days) a lapsed subscription can only be
# expired; before it, a transaction without renewal info does not prove it (the status is unknown).
LONGEST_BILLING_RETRY_MS = 60 * DAY_MS

PROMO_PATH = "/v1/signatures/promotional-offer"
MAX_BODY = 64 * 1024  # offer-signer's own request body limit is of the same order; larger bodies get 413
SETTINGS_VARIABLE = "OFFER_SIGNER_PEER_SETTINGS"  # how the parent hands its settings to the spawned workers
READY_TIMEOUT = 60.0  # seconds for every worker to start serving


# ---------------------------------------------------------------------------------------------
# The ASGI app (one per worker)


class Refusal(Exception):
    """An answer other than 200: status and error code (never signed data in it)."""

    def __init__(self, status: int, code: str, message: str | None = None):
        super().__init__(code)
        self.status = status
        self.code = code
        self.message = message


def create_app():
    """uvicorn's app factory, called once in each worker: the key, the verifier and the signature creator are
    built here, once per worker, never per request (as offer-signer keeps its keys and verifier)."""
    from appstoreserverlibrary.jws_signature_creator import PromotionalOfferV2SignatureCreator
    from appstoreserverlibrary.models.Environment import Environment
    from appstoreserverlibrary.models.Type import Type
    from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, VerificationException
    from cryptography import x509

    settings = json.loads(os.environ[SETTINGS_VARIABLE])
    creator = PromotionalOfferV2SignatureCreator(
        signing_key=Path(settings["key"]).read_bytes(),
        key_id=settings["keyId"],
        issuer_id=settings["issuerId"],
        bundle_id=settings["bundleId"],
    )
    # With enable_online_checks=False the library caches nothing: its _ChainVerifier keeps verified chains only
    # when online (OCSP) checks are on, so every request verifies the whole chain again (X509_STRICT, at the
    # payload's signedDate, two P-384 signatures: leaf by intermediate, intermediate by root; pyOpenSSL's
    # verify_certificate and get_verified_chain each run it), then the JWS with the leaf's P-256 key. offer-signer
    # caches verified (leaf, intermediate) pairs; this is the library as it is.
    roots = [Path(root).read_bytes() for root in settings["roots"]]
    for path, root in zip(settings["roots"], roots):
        try:  # the library keeps the bytes and would only fail on each request: check them once here
            x509.load_der_x509_certificate(root)
        except ValueError:
            raise ValueError(f"--root {path} is not a DER certificate") from None
    verifier = SignedDataVerifier(
        root_certificates=roots,
        enable_online_checks=False,
        environment=Environment(settings["environment"]),
        bundle_id=settings["bundleId"],
        app_apple_id=settings.get("appAppleId"),
    )
    bundle_id = settings["bundleId"]
    subscription_type = Type.AUTO_RENEWABLE_SUBSCRIPTION

    def customer(body: dict) -> tuple[str | None, bool]:
        """Verifies the signed data in `body`: the JWS `transactionId` claim (offer-signer's choice: the verified
        appTransactionId, else originalTransactionId, else transactionId) and whether the lapsed-customer rule
        holds (subscriptionStatus expired and daysSinceExpiry >= 30, derived as offer-signer derives them)."""
        signed_transaction = optional_string(body, "signedTransaction")
        signed_renewal_info = optional_string(body, "signedRenewalInfo")
        if signed_transaction is None and signed_renewal_info is None:
            return None, False
        try:
            transaction = (
                verifier.verify_and_decode_signed_transaction(signed_transaction) if signed_transaction else None
            )
            renewal = verifier.verify_and_decode_renewal_info(signed_renewal_info) if signed_renewal_info else None
        except VerificationException as error:
            raise Refusal(400, "untrusted_signed_data", f"signed data not verified: {error.status.name}") from None
        except (ValueError, TypeError, KeyError) as error:  # a payload the library's model cannot hold
            raise Refusal(400, "untrusted_signed_data", f"signed data not decoded: {type(error).__name__}") from None
        if transaction is not None and renewal is not None:
            if transaction.originalTransactionId is None or (
                transaction.originalTransactionId != renewal.originalTransactionId
            ):
                raise Refusal(400, "untrusted_signed_data", "renewal info does not belong to the transaction")
        app_transaction_ids = {
            value for value in (getattr(transaction, "appTransactionId", None),
                                getattr(renewal, "appTransactionId", None)) if value is not None
        }
        if len(app_transaction_ids) > 1:
            raise Refusal(400, "untrusted_signed_data", "the signed payloads disagree on appTransactionId")
        claim = (
            next(iter(app_transaction_ids), None)
            or getattr(transaction, "originalTransactionId", None)
            or getattr(renewal, "originalTransactionId", None)
            or getattr(transaction, "transactionId", None)
        )
        return claim, lapsed(transaction, renewal, int(time.time() * 1000))

    def lapsed(transaction, renewal, now: int) -> bool:
        if transaction is None or transaction.type != subscription_type:
            return False  # no subscription in the data: the status is unknown
        if transaction.revocationDate is not None:
            return False  # revoked
        expires = transaction.expiresDate
        if expires is None or expires > now:
            return False  # unknown, or active
        if renewal is not None and renewal.gracePeriodExpiresDate is not None and renewal.gracePeriodExpiresDate > now:
            return False  # in grace period
        retrying = renewal.isInBillingRetryPeriod if renewal is not None else None
        if retrying is True:
            return False  # in billing retry
        if retrying is None and now - expires <= LONGEST_BILLING_RETRY_MS:
            return False  # unknown: renewal info the app did not send could show Apple still retrying
        return (now - expires) // DAY_MS >= MIN_DAYS_SINCE_EXPIRY

    def promotional_offer(raw: bytes) -> dict:
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise Refusal(400, "invalid_request", "the body is not JSON") from None
        if not isinstance(body, dict):
            raise Refusal(400, "invalid_request", "the body is not a JSON object")
        request_bundle = required_string(body, "bundleId")
        product_id = required_string(body, "productId")
        offer_id = required_string(body, "offerId")
        optional_string(body, "appAccountToken")  # not part of the JWS form; only its type is checked
        if body.get("format", "jws") != "jws":
            raise Refusal(400, "invalid_request", "the peer signs the JWS form only")
        if request_bundle != bundle_id:
            raise Refusal(404, "unknown_app", "no such app")
        if offer_id not in (OPEN_OFFER, RULE_OFFER):
            raise Refusal(404, "unknown_offer", "no such offer")
        transaction_id, is_lapsed = customer(body)
        if offer_id == RULE_OFFER and not is_lapsed:
            raise Refusal(403, "not_eligible")
        compact = creator.create_signature(product_id, offer_id, transaction_id)
        # The library makes the nonce and does not return it: read it back from the claims it signed.
        claims = compact.split(".")[1]
        nonce = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))["nonce"]
        return {"format": "jws", "keyId": settings["keyId"], "compactJWS": compact, "nonce": nonce}

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return  # lifespan is off; nothing else is served
        method, path = scope["method"], scope["path"]
        try:
            if path == "/livez":
                if method != "GET":
                    raise Refusal(405, "method_not_allowed")
                status, answer = 200, LIVEZ
            elif path == PROMO_PATH:
                if method != "POST":
                    raise Refusal(405, "method_not_allowed")
                answer = promotional_offer(await read_body(receive))
                status, answer = 200, json.dumps(answer, separators=(",", ":")).encode()
            else:
                raise Refusal(404, "not_found")
        except Refusal as refusal:
            error = {"code": refusal.code}
            if refusal.message:
                error["message"] = refusal.message
            status, answer = refusal.status, json.dumps({"error": error}, separators=(",", ":")).encode()
        await send({
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())],
        })
        await send({"type": "http.response.body", "body": answer})

    return app


LIVEZ = b'{"status":"ok"}'


async def read_body(receive) -> bytes:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise Refusal(400, "invalid_request", "the client went away")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            raise Refusal(413, "payload_too_large", f"the body is over {MAX_BODY} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def required_string(body: dict, name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value:
        raise Refusal(400, "invalid_request", f"{name} must be a non-empty string")
    return value


def optional_string(body: dict, name: str) -> str | None:
    value = body.get(name)
    if value is not None and (not isinstance(value, str) or not value):
        raise Refusal(400, "invalid_request", f"{name} must be a non-empty string when present")
    return value


# ---------------------------------------------------------------------------------------------
# The parent: one listening socket, uvicorn's own worker supervisor


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port; 0 picks a free one (default 0)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="worker processes (default: cores)")
    parser.add_argument("--key", required=True, help="the signing key, a PKCS#8 PEM .p8 file")
    parser.add_argument("--key-id", required=True, help="the key's ID")
    parser.add_argument("--issuer-id", required=True, help="the issuer ID (a UUID)")
    parser.add_argument("--bundle-id", required=True, help="the app's bundle ID")
    parser.add_argument("--root", required=True, action="append",
                        help="a trusted root certificate, DER (.cer); may be repeated")
    parser.add_argument("--environment", default="Sandbox",
                        help="the signed data's environment: Sandbox (default), Production, Xcode or LocalTesting")
    parser.add_argument("--app-apple-id", type=int, help="the app's Apple ID (required by the library for Production)")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error("--port must be 0 to 65535")
    if not 1 <= args.workers <= 64:
        parser.error("--workers must be 1 to 64")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    settings = {
        "key": str(Path(args.key).resolve()),
        "keyId": args.key_id,
        "issuerId": args.issuer_id,
        "bundleId": args.bundle_id,
        "roots": [str(Path(root).resolve()) for root in args.root],
        "environment": args.environment,
        "appAppleId": args.app_apple_id,
    }
    os.environ[SETTINGS_VARIABLE] = json.dumps(settings)
    # Build one app here first: a bad key, root or environment fails now, with the reason, before any worker.
    try:
        create_app()
    except Exception as error:  # noqa: BLE001 - any reason is reported the same way
        print(f"error: cannot start the peer: {type(error).__name__}: {error}", file=sys.stderr)
        return 2

    import uvicorn
    from uvicorn.supervisors import Multiprocess

    # The workers import this file as the module `server` (spawned interpreters get this sys.path).
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)

    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as error:
        print(f"error: cannot listen on {args.host}:{args.port}: {error}", file=sys.stderr)
        return 2
    sock.listen(2048)
    sock.set_inheritable(True)
    port = sock.getsockname()[1]

    config = uvicorn.Config(
        "server:create_app",
        factory=True,
        workers=args.workers,
        loop="uvloop",
        http="httptools",
        lifespan="off",
        access_log=False,
        log_level="warning",
        server_header=False,
        date_header=False,
    )
    supervisor = Multiprocess(config, sockets=[sock])
    supervisor.init_processes()
    deadline = time.monotonic() + READY_TIMEOUT
    for process in supervisor.processes:
        if not process.wait_until_ready(max(0.0, deadline - time.monotonic()), supervisor.should_exit):
            print("error: a worker did not start serving", file=sys.stderr)
            supervisor.terminate_all()
            supervisor.join_all()
            return 1
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"peer listening on http://{shown}:{port}", flush=True)
    while not supervisor.should_exit.wait(0.5):
        supervisor.handle_signals()
        supervisor.keep_subprocess_alive()
    supervisor.terminate_all()
    supervisor.join_all()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
