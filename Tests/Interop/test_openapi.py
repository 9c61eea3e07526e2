"""openapi.yaml against the real binary.

1. The document is valid OpenAPI 3.1 (openapi-spec-validator), and every example in it fits its schema.
2. Real responses, from the session server (no trusted roots) and from a server here that trusts a test
   root made by `offer-signer-testkit` (so verified customers, intro eligibility, win-back and limits are
   reachable), validate (jsonschema, Draft 2020-12, `$ref`s resolved in the whole document) against the
   schema the document declares for that path, method, status and media type; so do their headers.
   The HTTP library's own HTML protocol errors are checked the same way.
3. The operations in the document are exactly the routes the server has: a fixed list, a probe of every
   operation (never 404 `not_found`, never 405), 405 with `Allow` for every other method on those paths,
   404 for paths the document does not list, and the error codes and reasons the Swift source can emit.
4. Request schemas agree with the server: bodies the schema refuses get 400 `invalid_request`, bodies it
   accepts never do.
5. admin-openapi.yaml, the admin listener's, the same way: valid, its examples fit, its operations exactly the
   admin routes (probed without credentials on a server with an admin listener: never 404 or 405, every answer
   as documented), 405 and 404 elsewhere, the public port refusing every admin path, and its error codes the
   ones the Swift source gives the admin API.
"""

from __future__ import annotations

import copy
import json
import re
import signal
from dataclasses import dataclass
from typing import Any, Callable

import pytest
import yaml
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_openapi
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from support import (
    OFFER_FIRST_COME,
    OFFER_INTRO,
    OFFER_LAPSED,
    OFFER_ONCE,
    OFFER_WB_ANY,
    read_raw,
    BUNDLE_ID,
    OFFER_OPEN,
    OFFER_VERIFIED,
    OFFER_WINBACK,
    PRODUCT_MONTHLY,
    PRODUCT_UNCOVERED,
    PRODUCT_YEARLY,
    PROMO_PATH,
    REPO_ROOT,
    Response,
    Server,
    write_config,
)

SPEC_PATH = REPO_ROOT / "openapi.yaml"
ADMIN_SPEC_PATH = REPO_ROOT / "admin-openapi.yaml"
BASE_URI = "urn:offer-signer:openapi"
INTRO_PATH = "/v1/signatures/introductory-offer-eligibility"
ELIGIBILITY_PATH = "/v1/eligibility"
MAX_BODY = 64 * 1024
TOKEN = "7E3FB20B-4CDB-47CC-936D-99D65F608138"

NOTIFICATIONS_PATH = "/v1/apple/notifications/{bundleId}"
RETENTION_PATH = "/v1/apple/retention/{bundleId}"

# Every operation the server routes: method and path. HEAD is answered wherever GET is.
EXPECTED_OPERATIONS = {
    ("POST", PROMO_PATH),
    ("POST", INTRO_PATH),
    ("POST", ELIGIBILITY_PATH),
    ("POST", "/v1/app-attest/challenge"),
    ("POST", "/v1/app-attest/keys"),
    ("GET", "/livez"),
    ("HEAD", "/livez"),
    ("GET", "/readyz"),
    ("HEAD", "/readyz"),
    ("GET", "/metrics"),
    ("HEAD", "/metrics"),
    ("POST", NOTIFICATIONS_PATH),
    ("POST", RETENTION_PATH),
}
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
OPENAPI_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def escape(segment: str) -> str:
    """One JSON Pointer segment."""
    return segment.replace("~", "~0").replace("/", "~1")


def lookup(document, pointer: str):
    node = document
    for raw in pointer.lstrip("/").split("/") if pointer else []:
        segment = raw.replace("~1", "/").replace("~0", "~")
        node = node[int(segment)] if isinstance(node, list) else node[segment]
    return node


# MARK: - The document


class OpenAPI:
    """openapi.yaml with its schemas resolvable by JSON Pointer (the whole document is one 2020-12 resource,
    so `#/components/...` references inside any schema resolve against it)."""

    def __init__(self, document: dict):
        self.document = document
        self.registry = Registry().with_resource(BASE_URI, DRAFT202012.create_resource(document))
        self._validators: dict[str, Draft202012Validator] = {}

    def validator(self, pointer: str) -> Draft202012Validator:
        if pointer not in self._validators:
            lookup(self.document, pointer)  # fails loudly when the pointer leads nowhere
            self._validators[pointer] = Draft202012Validator(
                {"$ref": f"{BASE_URI}#{pointer}"}, registry=self.registry,
                format_checker=Draft202012Validator.FORMAT_CHECKER)
        return self._validators[pointer]

    def errors(self, pointer: str, instance) -> list[str]:
        return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                for e in self.validator(pointer).iter_errors(instance)]

    def deref(self, node: dict, pointer: str) -> tuple[dict, str]:
        """Follows OpenAPI Reference Objects (responses, headers, examples) to the object and its pointer."""
        while isinstance(node, dict) and "$ref" in node:
            reference = node["$ref"]
            assert reference.startswith("#/"), reference
            pointer = reference[1:]
            node = lookup(self.document, pointer)
        return node, pointer

    def operations(self) -> set[tuple[str, str]]:
        return {(method.upper(), path) for path, item in self.document["paths"].items()
                for method in OPENAPI_METHODS if method in item}

    def operation_response(self, method: str, path: str, status: int) -> tuple[dict, str]:
        operation = self.document["paths"][path][method.lower()]
        responses = operation["responses"]
        assert str(status) in responses, (
            f"{method} {path} answered {status}; the document declares only {sorted(responses)}")
        return self.deref(responses[str(status)],
                          f"/paths/{escape(path)}/{method.lower()}/responses/{status}")

    def component_response(self, name: str) -> tuple[dict, str]:
        return self.deref(self.document["components"]["responses"][name], f"/components/responses/{name}")

    def request_schema_pointer(self, path: str) -> str:
        return f"/paths/{escape(path)}/post/requestBody/content/{escape('application/json')}/schema"

    def check(self, reply: Response, declared: tuple[dict, str], method: str) -> None:
        """The reply fits the declared response: media type, body schema, declared headers."""
        response, pointer = declared
        content_type = reply.header("Content-Type")
        from_service = content_type is not None
        if from_service:
            # Everything the service itself sends carries these, declared or not.
            assert reply.header("Cache-Control") == "no-store", reply.headers
            assert reply.header("X-Content-Type-Options") == "nosniff", reply.headers
            for name, header in response.get("headers", {}).items():
                header, header_pointer = self.deref(header, f"{pointer}/headers/{escape(name)}")
                value = reply.header(name)
                assert value is not None, f"declared header {name} missing: {reply.headers}"
                problems = self.errors(f"{header_pointer}/schema", value)
                assert not problems, (name, value, problems)
        if method == "HEAD":
            assert reply.body == b"", reply.body[:200]
            return
        media = content_type if from_service else "text/html"  # libmicrohttpd's pages carry no Content-Type
        content = response.get("content") or {}
        assert media in content, f"{reply.status} {media!r} is not declared (declared: {sorted(content)})"
        if media == "application/json":
            instance = json.loads(reply.body)
        else:
            instance = reply.body.decode("utf-8")
        problems = self.errors(f"{pointer}/content/{escape(media)}/schema", instance)
        assert not problems, (reply.status, instance, problems)
        if media == "application/json" and reply.status >= 400:
            problems = self.errors("/components/schemas/Error", instance)
            assert not problems, (instance, problems)


@pytest.fixture(scope="module")
def openapi() -> OpenAPI:
    return OpenAPI(yaml.safe_load(SPEC_PATH.read_text(encoding="utf-8")))


def test_document_is_valid_openapi_3_1(openapi):
    assert openapi.document["openapi"].startswith("3.1.")
    validate_openapi(openapi.document)


def test_validator_catches_a_broken_document(openapi):
    """The validator is not a no-op: a wrong schema type and a dangling reference are refused."""
    broken = copy.deepcopy(openapi.document)
    broken["components"]["schemas"]["Nonce"]["type"] = "uuid"
    with pytest.raises(Exception):
        validate_openapi(broken)
    broken = copy.deepcopy(openapi.document)
    broken["components"]["schemas"]["PromotionalOfferRequest"]["properties"]["bundleId"]["$ref"] = (
        "#/components/schemas/Missing")
    with pytest.raises(Exception):
        validate_openapi(broken)


def media_types(openapi: OpenAPI):
    """Every media type object of every request body and response, with its pointer."""
    document = openapi.document
    containers = []
    for path, item in document["paths"].items():
        for method in OPENAPI_METHODS:
            if method not in item:
                continue
            base = f"/paths/{escape(path)}/{method}"
            if "requestBody" in item[method]:
                containers.append((item[method]["requestBody"], f"{base}/requestBody"))
            for status, response in item[method]["responses"].items():
                containers.append((response, f"{base}/responses/{status}"))
    for name, response in document["components"]["responses"].items():
        containers.append((response, f"/components/responses/{name}"))
    for node, pointer in containers:
        if "$ref" in node:
            continue  # checked where it is defined
        for media, media_object in node.get("content", {}).items():
            yield media, media_object, f"{pointer}/content/{escape(media)}"


def test_every_example_fits_its_schema(openapi):
    assert examples_checked(openapi) >= 30


def examples_checked(openapi: OpenAPI) -> int:
    """Checks every example of the document against its schema; returns how many there were."""
    checked = 0
    for media, media_object, pointer in media_types(openapi):
        assert "schema" in media_object, pointer
        values = []
        if "example" in media_object:
            values.append(("example", media_object["example"]))
        for name, example in media_object.get("examples", {}).items():
            example, _ = openapi.deref(example, f"{pointer}/examples/{name}")
            values.append((name, example["value"]))
        for name, value in values:
            problems = openapi.errors(f"{pointer}/schema", value)
            assert not problems, (pointer, name, problems)
            checked += 1

    def schema_examples(node, pointer):
        if isinstance(node, dict):
            if isinstance(node.get("examples"), list):
                yield node["examples"], pointer
            for key, value in node.items():
                if key not in ("examples", "enum", "required"):
                    yield from schema_examples(value, f"{pointer}/{escape(key)}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                yield from schema_examples(value, f"{pointer}/{index}")

    for examples, pointer in schema_examples(openapi.document["components"]["schemas"], "/components/schemas"):
        for value in examples:
            problems = openapi.errors(pointer, value)
            assert not problems, (pointer, value, problems)
            checked += 1
    return checked


def test_schemas_refuse_what_the_server_never_sends(openapi):
    """Spot checks that the response schemas are tight, so that the validations below mean something."""
    jws = {"format": "jws", "keyId": "TESTKEY001", "nonce": "d6bba6e8-a8e7-40c0-aeab-48d85a4a152d",
           "issuedAt": 1795988821, "compactJWS": "a.b." + "c" * 86}
    pointer = "/components/schemas/PromotionalOfferSignature"
    assert not openapi.errors(pointer, jws)
    assert openapi.errors(pointer, {**jws, "nonce": jws["nonce"].upper()})
    assert openapi.errors(pointer, {**jws, "issuedAt": 1795988821.5})
    assert openapi.errors(pointer, {**jws, "extra": 1})
    assert openapi.errors(pointer, {**jws, "format": "legacy"})
    signature = "MEUCIQCiEfLtPWOCs1NEjKZ6ZVwVTwqysoAF32Hup3v3SzwQqQIgKOTZvBctw5hsreEgtIHSrCkeoXLqw81cDtpIUs55Zj4="
    legacy = {"format": "legacy", "keyId": "TESTKEY001", "nonce": jws["nonce"], "timestamp": 1795988821115,
              "signature": signature}
    assert not openapi.errors(pointer, legacy)
    assert openapi.errors(pointer, {**legacy, "signature": legacy["signature"].rstrip("=")})
    assert openapi.errors(pointer, {**legacy, "signature": "ab-_" + legacy["signature"][4:]})
    assert openapi.errors(pointer, {**legacy, "appAccountToken": TOKEN})
    untrusted = "/components/schemas/UntrustedSignedDataError"
    assert openapi.errors(untrusted, {"error": {"code": "untrusted_signed_data", "message": "m",
                                                "reason": "malformed"}})
    assert not openapi.errors(untrusted, {"error": {"code": "untrusted_signed_data", "message": "m",
                                                    "reason": "inconsistent"}})
    assert openapi.errors("/components/schemas/NotEligibleError",
                          {"error": {"code": "not_eligible", "message": "m", "reasons": []}})
    assert openapi.errors("/components/schemas/InvalidRequestError",
                          {"error": {"code": "unknown_app", "message": "m"}})


# MARK: - Real responses against the document


@dataclass
class Case:
    id: str
    method: str
    path: str
    body: Any  # dict, bytes, None, or a function of SignedData returning one
    status: int
    code: str | None = None
    verified: bool = False  # the verified server, else the session one
    reason: str | None = None
    field: str | None = None
    check: Callable[[Any], None] | None = None


def promo(**fields):
    body = {"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY, "offerId": OFFER_OPEN}
    body.update(fields)
    return {k: v for k, v in body.items() if v is not ...}


def intro(**fields):
    body = {"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY}
    body.update(fields)
    return body


def eligibility(**fields):
    return {"bundleId": BUNDLE_ID, **fields}


def expect_keys(*keys):
    def check(document):
        assert set(document) == set(keys), document
    return check


def expect_intro(allow: bool):
    def check(document):
        assert document["allowIntroductoryOffer"] is allow
        assert document["offerId"] == OFFER_INTRO
        assert ("reasons" in document) is (not allow)
    return check


def expect_reasons(*pairs):
    def check(document):
        assert [(r["rule"], r["code"]) for r in document["error"]["reasons"]] == list(pairs)
    return check


def expect_offers(promotional, win_back):
    def check(document):
        assert [(o["offerId"], o["productId"]) for o in document["promotionalOffers"]] == promotional
        assert [(o["offerId"], o["productId"]) for o in document["winBackOffers"]] == win_back
    return check


CASES = [
    # Session server: no trusted roots, so no signed data verifies.
    Case("promo-jws", "POST", PROMO_PATH, promo(), 200,
         check=expect_keys("format", "keyId", "compactJWS", "nonce", "issuedAt")),
    Case("promo-jws-explicit", "POST", PROMO_PATH, promo(format="jws", productId=PRODUCT_YEARLY), 200),
    Case("promo-legacy", "POST", PROMO_PATH, promo(format="legacy"), 200,
         check=expect_keys("format", "keyId", "nonce", "timestamp", "signature")),
    Case("promo-legacy-token", "POST", PROMO_PATH, promo(format="legacy", appAccountToken=TOKEN), 200,
         check=lambda d: d["appAccountToken"] == TOKEN.lower() or pytest.fail(d)),
    Case("promo-invalid-json", "POST", PROMO_PATH, b'{"bundleId": ', 400, "invalid_request"),
    Case("promo-empty-body", "POST", PROMO_PATH, b"", 400, "invalid_request"),
    Case("promo-unknown-field", "POST", PROMO_PATH, promo(colour="red"), 400, "invalid_request", field="colour"),
    Case("promo-bad-format", "POST", PROMO_PATH, promo(format="jwt"), 400, "invalid_request",
         field="format"),
    Case("promo-bad-token", "POST", PROMO_PATH, promo(appAccountToken="not-a-uuid"), 400, "invalid_request",
         field="appAccountToken"),
    Case("promo-unknown-app", "POST", PROMO_PATH, promo(bundleId="com.example.other"), 404, "unknown_app",
         field="bundleId"),
    Case("promo-unknown-offer", "POST", PROMO_PATH, promo(offerId="no_such_offer"), 404, "unknown_offer",
         field="offerId"),
    Case("promo-product-not-covered", "POST", PROMO_PATH, promo(productId=PRODUCT_UNCOVERED), 400,
         "product_not_covered", field="productId"),
    Case("promo-winback-offer", "POST", PROMO_PATH, promo(offerId=OFFER_WINBACK), 400, "wrong_offer_type",
         field="offerId"),
    Case("promo-not-eligible-unverified", "POST", PROMO_PATH, promo(offerId=OFFER_VERIFIED), 403, "not_eligible",
         check=expect_reasons(("verifiedCustomer", "verified_customer_required"))),
    Case("promo-not-eligible-legacy", "POST", PROMO_PATH, promo(offerId=OFFER_VERIFIED, format="legacy"), 403,
         "not_eligible"),
    Case("promo-signed-garbage", "POST", PROMO_PATH, promo(signedTransaction="hello"), 400,
         "untrusted_signed_data", reason="malformed", field="signedTransaction"),
    Case("promo-oversize", "POST", PROMO_PATH, b" " * (MAX_BODY + 1), 413, "payload_too_large"),
    Case("livez-oversize", "GET", "/livez", b" " * (MAX_BODY + 1), 413, "payload_too_large"),
    Case("intro-no-intro-offer", "POST", INTRO_PATH, intro(signedAppTransaction="hello"), 404, "unknown_offer",
         field="productId"),
    Case("intro-promotional-offer-id", "POST", INTRO_PATH, intro(offerId=OFFER_OPEN), 400, "wrong_offer_type",
         field="offerId"),
    Case("intro-unknown-app", "POST", INTRO_PATH, intro(bundleId="com.example.other"), 404, "unknown_app",
         field="bundleId"),
    Case("intro-not-json-object", "POST", INTRO_PATH, b"[]", 400, "invalid_request"),
    Case("eligibility-unverified", "POST", ELIGIBILITY_PATH, eligibility(), 200,
         check=expect_offers([(OFFER_OPEN, PRODUCT_MONTHLY), (OFFER_OPEN, PRODUCT_YEARLY)], [])),
    Case("eligibility-product-filter", "POST", ELIGIBILITY_PATH, eligibility(productIds=[PRODUCT_YEARLY]), 200,
         check=expect_offers([(OFFER_OPEN, PRODUCT_YEARLY)], [])),
    Case("eligibility-unknown-app", "POST", ELIGIBILITY_PATH, eligibility(bundleId="com.example.other"), 404,
         "unknown_app", field="bundleId"),
    Case("eligibility-bad-product-ids", "POST", ELIGIBILITY_PATH, eligibility(productIds="x"), 400,
         "invalid_request", field="productIds"),
    Case("eligibility-signed-garbage", "POST", ELIGIBILITY_PATH, eligibility(signedAppTransaction="x.y.z"), 400,
         "untrusted_signed_data", reason="malformed", field="signedAppTransaction"),
    Case("app-attest-challenge-off", "POST", "/v1/app-attest/challenge", {"bundleId": BUNDLE_ID}, 404,
         "app_attest_off", field="bundleId"),
    Case("app-attest-challenge-unknown-app", "POST", "/v1/app-attest/challenge", {"bundleId": "com.example.other"},
         404, "unknown_app", field="bundleId"),
    Case("app-attest-challenge-unknown-member", "POST", "/v1/app-attest/challenge",
         {"bundleId": BUNDLE_ID, "keyId": "x"}, 400, "invalid_request", field="keyId"),
    Case("app-attest-keys-off", "POST", "/v1/app-attest/keys",
         {"bundleId": BUNDLE_ID, "keyId": "a", "attestation": "b", "challenge": "c"}, 404, "app_attest_off",
         field="bundleId"),
    Case("livez", "GET", "/livez", None, 200, check=lambda d: d == {"status": "ok"} or pytest.fail(d)),
    Case("livez-query", "GET", "/livez?verbose=1", None, 200),
    Case("readyz", "GET", "/readyz", None, 200),
    Case("metrics", "GET", "/metrics", None, 200),
    Case("livez-head", "HEAD", "/livez", None, 200),
    Case("readyz-head", "HEAD", "/readyz", None, 200),
    Case("metrics-head", "HEAD", "/metrics", None, 200),
    # Verified server: test-signed data under a trusted test root.
    Case("verified-promo-jws", "POST", PROMO_PATH, lambda s: promo(offerId=OFFER_LAPSED, signedTransaction=s.lapsed),
         200, verified=True),
    # A Sandbox customer (the test kit's data) gets JWS signatures only.
    Case("verified-promo-legacy-sandbox", "POST", PROMO_PATH,
         lambda s: promo(offerId=OFFER_LAPSED, format="legacy", appAccountToken=TOKEN, signedTransaction=s.lapsed,
                         signedRenewalInfo=s.renewal), 400, code="invalid_request", verified=True, field="format"),
    Case("verified-promo-rules-fail", "POST", PROMO_PATH,
         lambda s: promo(offerId=OFFER_LAPSED, signedTransaction=s.recent, signedRenewalInfo=s.renewal), 403,
         "not_eligible", verified=True,
         check=expect_reasons(("daysSinceExpiry", "days_since_expiry_out_of_range"))),
    Case("verified-promo-never-subscribed", "POST", PROMO_PATH,
         lambda s: promo(offerId=OFFER_LAPSED, signedAppTransaction=s.app_transaction), 403, "not_eligible",
         verified=True, check=lambda d: d["error"]["reasons"][0] == {"rule": "subscriptionHistory",
                                                                     "code": "no_subscription_history"}
         or pytest.fail(d)),
    Case("verified-bad-signature", "POST", PROMO_PATH, lambda s: promo(signedTransaction=s.bad_signature), 400,
         "untrusted_signed_data", verified=True, reason="bad_signature", field="signedTransaction"),
    Case("verified-wrong-app", "POST", PROMO_PATH, lambda s: promo(signedTransaction=s.wrong_app), 400,
         "untrusted_signed_data", verified=True, reason="wrong_app", field="signedTransaction"),
    Case("verified-wrong-environment", "POST", INTRO_PATH, lambda s: intro(signedTransaction=s.production), 400,
         "untrusted_signed_data", verified=True, reason="wrong_environment", field="signedTransaction"),
    Case("verified-untrusted-chain", "POST", ELIGIBILITY_PATH, lambda s: eligibility(signedTransaction=s.stranger),
         400, "untrusted_signed_data", verified=True, reason="untrusted_chain", field="signedTransaction"),
    Case("verified-malformed-renewal", "POST", ELIGIBILITY_PATH,
         lambda s: eligibility(signedTransaction=s.lapsed, signedRenewalInfo="hello"), 400, "untrusted_signed_data",
         verified=True, reason="malformed", field="signedRenewalInfo"),
    Case("verified-inconsistent", "POST", ELIGIBILITY_PATH,
         lambda s: eligibility(signedTransaction=s.lapsed, signedRenewalInfo=s.foreign_renewal), 400,
         "untrusted_signed_data", verified=True, reason="inconsistent"),
    Case("verified-malformed-wrong-type", "POST", PROMO_PATH, lambda s: promo(signedTransaction=s.wrong_type),
         400, "untrusted_signed_data", verified=True, reason="malformed", field="signedTransaction"),
    Case("verified-renewal-alone", "POST", ELIGIBILITY_PATH, lambda s: eligibility(signedRenewalInfo=s.renewal),
         400, "invalid_request", verified=True, field="signedRenewalInfo"),
    Case("verified-intro-allowed", "POST", INTRO_PATH, lambda s: intro(signedTransaction=s.lapsed), 200,
         verified=True, check=expect_intro(True)),
    Case("verified-intro-refused", "POST", INTRO_PATH, lambda s: intro(signedAppTransaction=s.app_transaction), 200,
         verified=True, check=expect_intro(False)),
    Case("verified-intro-by-offer-id", "POST", INTRO_PATH,
         lambda s: intro(offerId=OFFER_INTRO, signedAppTransaction=s.app_transaction), 200, verified=True),
    Case("verified-intro-no-signed-data", "POST", INTRO_PATH, intro(), 400, "invalid_request", verified=True),
    Case("verified-intro-product-not-covered", "POST", INTRO_PATH,
         intro(offerId=OFFER_INTRO, productId=PRODUCT_YEARLY), 400, "product_not_covered", verified=True,
         field="productId"),
    Case("verified-intro-no-offer-for-product", "POST", INTRO_PATH, intro(productId=PRODUCT_YEARLY), 404,
         "unknown_offer", verified=True, field="productId"),
    Case("verified-eligibility-win-back", "POST", ELIGIBILITY_PATH,
         lambda s: eligibility(productIds=[PRODUCT_MONTHLY], signedTransaction=s.lapsed,
                               signedRenewalInfo=s.renewal), 200, verified=True,
         check=lambda d: d["winBackOffers"] == [{"offerId": OFFER_WB_ANY, "productId": PRODUCT_MONTHLY}]
         or pytest.fail(d)),
    Case("verified-readyz-with-ledger", "GET", "/readyz", None, 200, verified=True),
    # Retention Messaging, as Apple posts it.
    Case("verified-retention-message", "POST", RETENTION_PATH.format(bundleId=BUNDLE_ID),
         lambda s: {"signedPayload": s.retention}, 200, verified=True, check=expect_keys("message")),
    Case("verified-retention-offer", "POST", RETENTION_PATH.format(bundleId=BUNDLE_ID),
         lambda s: {"signedPayload": s.retention_yearly}, 200, verified=True, check=expect_keys("promotionalOffer")),
    Case("verified-retention-none", "POST", RETENTION_PATH.format(bundleId=BUNDLE_ID),
         lambda s: {"signedPayload": s.retention_uncovered}, 404, "no_retention_answer", verified=True),
    Case("retention-garbage", "POST", RETENTION_PATH.format(bundleId=BUNDLE_ID), {"signedPayload": "hello"}, 400,
         "untrusted_signed_data", reason="malformed", field="signedPayload"),
    Case("retention-not-json", "POST", RETENTION_PATH.format(bundleId=BUNDLE_ID), b"[", 400, "invalid_request"),
    Case("retention-unknown-app", "POST", RETENTION_PATH.format(bundleId="com.example.other"),
         {"signedPayload": "hello"}, 404, "unknown_app", field="bundleId"),
]


def send(request, verified: bool, method: str, path: str, body) -> Response:
    target = request.getfixturevalue("verified_server" if verified else "server")
    if callable(body):
        body = body(request.getfixturevalue("signed"))
    return target.request(method, path, body)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_response_fits_the_document(request, openapi, case):
    reply = send(request, case.verified, case.method, case.path, case.body)
    assert reply.status == case.status, (reply.status, reply.body[:400])
    path = case.path.split("?")[0]
    # A path of Apple's routes names the app; the document names its template.
    for template in (NOTIFICATIONS_PATH, RETENTION_PATH):
        if path.startswith(template.split("{")[0]):
            path = template
    openapi.check(reply, openapi.operation_response(case.method, path, reply.status), case.method)
    if case.method == "HEAD":
        return
    document = reply.json() if reply.header("Content-Type") == "application/json" else reply.body.decode()
    if case.code is not None:
        error = document["error"]
        assert error["code"] == case.code, document
        assert error.get("reason") == case.reason, document
        assert error.get("field") == case.field, document
    else:
        assert case.status < 400
    if case.check is not None:
        case.check(document)


def test_offer_limits_answer_403_in_the_documented_shape(verified_server, signed, openapi):
    first = verified_server.post(PROMO_PATH, promo(offerId=OFFER_ONCE, signedTransaction=signed.lapsed))
    assert first.status == 200, first.body
    openapi.check(first, openapi.operation_response("POST", PROMO_PATH, 200), "POST")
    again = verified_server.post(PROMO_PATH, promo(offerId=OFFER_ONCE, signedTransaction=signed.lapsed))
    assert again.status == 403, again.body
    openapi.check(again, openapi.operation_response("POST", PROMO_PATH, 403), "POST")
    expect_reasons(("limits", "per_customer_limit_reached"))(again.json())

    listed = verified_server.post(ELIGIBILITY_PATH, eligibility(productIds=[PRODUCT_YEARLY]))
    assert (OFFER_FIRST_COME, PRODUCT_YEARLY) in [(o["offerId"], o["productId"])
                                                  for o in listed.json()["promotionalOffers"]]
    first = verified_server.post(PROMO_PATH, promo(offerId=OFFER_FIRST_COME, productId=PRODUCT_YEARLY))
    assert first.status == 200, first.body
    again = verified_server.post(PROMO_PATH, promo(offerId=OFFER_FIRST_COME, productId=PRODUCT_YEARLY))
    assert again.status == 403, again.body
    openapi.check(again, openapi.operation_response("POST", PROMO_PATH, 403), "POST")
    expect_reasons(("limits", "total_limit_reached"))(again.json())
    listed = verified_server.post(ELIGIBILITY_PATH, eligibility(productIds=[PRODUCT_YEARLY]))
    openapi.check(listed, openapi.operation_response("POST", ELIGIBILITY_PATH, 200), "POST")
    assert OFFER_FIRST_COME not in [o["offerId"] for o in listed.json()["promotionalOffers"]]


# MARK: - The HTTP library's own errors (HTML, no Content-Type)


def raw_reply(port: int, message: bytes, body: bytes = b"") -> Response:
    """Sends one raw request and reads to the close; `body`, if any, after a pause. Tolerates libmicrohttpd 0.9.75
    sending the status line and headers of some errors twice: the body is the HTML page at the end."""
    data = read_raw(port, [message, body] if body else [message], delay=0.2 if body else 0.0)
    head, _, _ = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = dict(line.split(": ", 1) for line in lines[1:])
    start = data.find(b"<html>")
    assert start >= 0, data[:300]
    return Response(status, headers, data[start:])


PROTOCOL_ERRORS = [
    ("headers-over-16k", "GET", "/livez", b"X-Padding: " + b"a" * 20_000 + b"\r\n", 431),
    ("headers-over-16k-post", "POST", PROMO_PATH, b"X-Padding: " + b"a" * 20_000 + b"\r\nContent-Length: 2\r\n", 431),
    ("content-length-not-a-number", "POST", PROMO_PATH, b"Content-Length: abc\r\n", 400),
    ("content-length-negative", "POST", ELIGIBILITY_PATH, b"Content-Length: -1\r\n", 400),
    ("content-length-on-get", "GET", "/readyz", b"Content-Length: 1, 2\r\n", 400),
    ("content-length-overflow", "POST", INTRO_PATH, b"Content-Length: 99999999999999999999999\r\n", 413),
    ("bad-chunked-encoding", "POST", PROMO_PATH, b"Transfer-Encoding: chunked\r\n", 400),
]


@pytest.mark.parametrize("name,method,path,headers,status", PROTOCOL_ERRORS, ids=[p[0] for p in PROTOCOL_ERRORS])
def test_protocol_errors_are_html_as_documented(server, openapi, name, method, path, headers, status):
    message = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n".encode() + headers + b"\r\n"
    if b"chunked" in headers:
        # A chunk size that is not hexadecimal, after the head: libmicrohttpd's own page. (Sent with the head, the
        # service has read it by the time the head is parsed and answers `invalid_request` itself: test_edges.py.)
        reply = raw_reply(server.port, message, b"zz\r\n{}\r\n0\r\n\r\n")
    else:
        reply = raw_reply(server.port, message + b"{}")
    assert reply.status == status, (reply.status, reply.body)
    assert reply.header("Content-Type") is None, reply.headers
    openapi.check(reply, openapi.operation_response(method, path, status), method)
    assert server.request("GET", "/livez").status == 200


# MARK: - Routes: the document lists exactly what the server routes


def test_document_operations_are_the_routes(openapi):
    assert openapi.operations() == EXPECTED_OPERATIONS


def test_every_documented_operation_is_routed(server, openapi):
    for method, path in sorted(openapi.operations()):
        reply = server.request(method, path, b"{}" if method == "POST" else None)
        assert reply.status not in (404, 405), (method, path, reply.status, reply.body)
        openapi.check(reply, openapi.operation_response(method, path, reply.status), method)


def test_every_other_method_gets_405_with_allow(server, openapi):
    declared = openapi.component_response("MethodNotAllowed")
    for path, item in openapi.document["paths"].items():
        allowed = {m.upper() for m in OPENAPI_METHODS if m in item}
        allow = "POST" if "POST" in allowed else "GET, HEAD"
        for method in HTTP_METHODS:
            if method in allowed:
                continue
            reply = server.request(method, path, b"{}" if method in ("POST", "PUT", "PATCH") else None)
            assert reply.status == 405, (method, path, reply.status)
            assert reply.header("Allow") == allow, (method, path, reply.headers)
            openapi.check(reply, declared, method)
            if method != "HEAD":
                assert reply.json()["error"]["code"] == "method_not_allowed"


@pytest.mark.parametrize("path", ["/", "/v1", "/v1/signatures", PROMO_PATH + "/", "/LIVEZ", "/v2/eligibility",
                                  "/v1/signatures/legacy", "/metrics/", "/openapi.yaml"])
def test_undocumented_paths_get_404(server, openapi, path):
    declared = openapi.component_response("NotFound")
    for method in ("GET", "POST"):
        reply = server.request(method, path, b"{}" if method == "POST" else None)
        assert reply.status == 404, (method, path, reply.status)
        openapi.check(reply, declared, method)
        assert reply.json()["error"]["code"] == "not_found"


def schema_codes(openapi: OpenAPI, node, seen: set[str] | None = None) -> set[str]:
    """Every error `code` const reachable from a schema."""
    seen = set() if seen is None else seen
    codes: set[str] = set()
    if isinstance(node, dict):
        if "$ref" in node and node["$ref"] not in seen:
            seen.add(node["$ref"])
            codes |= schema_codes(openapi, lookup(openapi.document, node["$ref"][1:]), seen)
        code = node.get("properties", {}).get("code")
        if isinstance(code, dict) and "const" in code:
            codes.add(code["const"])
        for key, value in node.items():
            if key != "$ref":
                codes |= schema_codes(openapi, value, seen)
    elif isinstance(node, list):
        for value in node:
            codes |= schema_codes(openapi, value, seen)
    return codes


# Where ErrorMapping.statuses begins the admin API's codes.
ADMIN_SECTION = "// The admin API."


def status_table(server) -> str:
    """The text of ErrorMapping.statuses, the only table of statuses, between its brackets."""
    mapping = (server / "ErrorMapping.swift").read_text()
    start = "statuses: [ErrorCode: Int] = ["
    table = mapping[mapping.index(start) + len(start):]
    return table[:table.index("]")]


def test_error_codes_and_reasons_match_the_swift_source(openapi):
    """Every (status, code) the service can answer, read from the source, is declared for that status somewhere,
    and the document lists no code or reason the source cannot produce."""
    server = REPO_ROOT / "Sources" / "OfferServer" / "Routing"
    raw_codes = dict(re.findall(r'static let (\w+) = ErrorCode\(rawValue: "([a-z_]+)"\)',
                                (REPO_ROOT / "Sources" / "OfferAPI" / "ErrorCode.swift").read_text()))
    # Every code gets its status in ErrorMapping's one table: the public API's and the HTTP layer's come before its
    # admin section.
    table = status_table(server)
    pairs = re.findall(r'\.(\w+): (\d+)', table[:table.index(ADMIN_SECTION)])
    emitted = {(int(status), raw_codes[code]) for code, status in pairs}
    assert len(emitted) >= 12, emitted

    declared: set[tuple[int, str]] = set()
    for path, item in openapi.document["paths"].items():
        for method in OPENAPI_METHODS:
            for status, response in item.get(method, {}).get("responses", {}).items():
                response, _ = openapi.deref(response, "")
                schema = response.get("content", {}).get("application/json", {}).get("schema")
                declared |= {(int(status), code) for code in schema_codes(openapi, schema)} if schema else set()
    for name, status in (("NotFound", 404), ("MethodNotAllowed", 405)):
        response, _ = openapi.component_response(name)
        declared |= {(status, code) for code in schema_codes(openapi, response["content"]["application/json"])}
    assert emitted <= declared, f"answered by the service but not declared: {sorted(emitted - declared)}"
    enum = set(openapi.document["components"]["schemas"]["ErrorCode"]["enum"])
    assert enum == {code for _, code in emitted}
    assert {code for _, code in declared} <= enum

    error_source = (REPO_ROOT / "Sources" / "OfferCore" / "Verification" / "SignedDataError.swift").read_text()
    cases = re.findall(r'^\s*case (\w+)(?: = "(\w+)")?\s*$', error_source, re.MULTILINE)
    reasons = {raw or name for name, raw in cases}
    assert set(openapi.document["components"]["schemas"]["UntrustedSignedDataReason"]["enum"]) == reasons


# MARK: - Request schemas agree with the server


def long_text(length: int) -> str:
    return "a" * length


# (id, path, body or function of SignedData, the schema accepts it)
REQUESTS = [
    ("promo-minimal", PROMO_PATH, promo(), True),
    ("promo-nulls", PROMO_PATH, promo(format=None, appAccountToken=None, signedTransaction=None), True),
    ("promo-legacy-upper-token", PROMO_PATH, promo(format="legacy", appAccountToken=TOKEN), True),
    ("promo-signed-garbage", PROMO_PATH, promo(signedAppTransaction="hello"), True),
    ("promo-longest-product", PROMO_PATH, promo(productId=long_text(16384)), True),
    ("promo-with-renewal", PROMO_PATH, lambda s: promo(signedTransaction=s.lapsed, signedRenewalInfo=s.renewal), True),
    ("promo-missing-bundle", PROMO_PATH, promo(bundleId=...), False),
    ("promo-null-product", PROMO_PATH, promo(productId=None), False),
    ("promo-empty-offer", PROMO_PATH, promo(offerId=""), False),
    ("promo-number-product", PROMO_PATH, promo(productId=5), False),
    ("promo-product-too-long", PROMO_PATH, promo(productId=long_text(16385)), False),
    ("promo-unknown-field", PROMO_PATH, promo(colour="red"), False),
    ("promo-format-jwt", PROMO_PATH, promo(format="jwt"), False),
    ("promo-format-upper", PROMO_PATH, promo(format="JWS"), False),
    ("promo-format-number", PROMO_PATH, promo(format=1), False),
    ("promo-token-not-uuid", PROMO_PATH, promo(appAccountToken="not-a-uuid"), False),
    ("promo-token-braced", PROMO_PATH, promo(appAccountToken="{" + TOKEN + "}"), False),
    ("promo-token-short", PROMO_PATH, promo(appAccountToken=TOKEN[:-1]), False),
    ("promo-token-not-hex", PROMO_PATH, promo(appAccountToken="g" + TOKEN[1:]), False),
    ("promo-signed-empty", PROMO_PATH, promo(signedTransaction=""), False),
    ("promo-signed-number", PROMO_PATH, promo(signedTransaction=1), False),
    ("promo-renewal-alone", PROMO_PATH, lambda s: promo(signedRenewalInfo=s.renewal), False),
    ("promo-array", PROMO_PATH, [promo()], False),
    ("promo-string", PROMO_PATH, "hello", False),
    ("intro-app-transaction", INTRO_PATH, lambda s: intro(signedAppTransaction=s.app_transaction), True),
    ("intro-transaction", INTRO_PATH, lambda s: intro(signedTransaction=s.lapsed, offerId=None), True),
    ("intro-garbage", INTRO_PATH, intro(signedTransaction="hello"), True),
    ("intro-both-and-renewal", INTRO_PATH,
     lambda s: intro(signedTransaction=s.lapsed, signedAppTransaction=s.app_transaction, signedRenewalInfo=s.renewal),
     True),
    ("intro-no-signed-data", INTRO_PATH, intro(), False),
    ("intro-null-signed-data", INTRO_PATH, intro(signedTransaction=None, signedAppTransaction=None), False),
    ("intro-renewal-only", INTRO_PATH, lambda s: intro(signedRenewalInfo=s.renewal), False),
    ("intro-empty-offer", INTRO_PATH, lambda s: intro(offerId="", signedAppTransaction=s.app_transaction), False),
    ("intro-format", INTRO_PATH, lambda s: intro(format="jws", signedAppTransaction=s.app_transaction), False),
    ("intro-missing-product", INTRO_PATH, {"bundleId": BUNDLE_ID, "signedAppTransaction": "hello"}, False),
    ("eligibility-minimal", ELIGIBILITY_PATH, eligibility(), True),
    ("eligibility-no-products", ELIGIBILITY_PATH, eligibility(productIds=[]), True),
    ("eligibility-null-products", ELIGIBILITY_PATH, eligibility(productIds=None), True),
    ("eligibility-everything", ELIGIBILITY_PATH,
     lambda s: eligibility(signedTransaction=s.lapsed, signedRenewalInfo=s.renewal,
                           signedAppTransaction=s.app_transaction, productIds=[PRODUCT_MONTHLY]), True),
    ("eligibility-empty-product", ELIGIBILITY_PATH, eligibility(productIds=[""]), False),
    ("eligibility-number-product", ELIGIBILITY_PATH, eligibility(productIds=[1]), False),
    ("eligibility-products-string", ELIGIBILITY_PATH, eligibility(productIds=PRODUCT_MONTHLY), False),
    ("eligibility-renewal-alone", ELIGIBILITY_PATH, lambda s: eligibility(signedRenewalInfo=s.renewal), False),
    ("eligibility-missing-bundle", ELIGIBILITY_PATH, {"productIds": []}, False),
    ("eligibility-offer-id", ELIGIBILITY_PATH, eligibility(offerId=OFFER_OPEN), False),
    # Notifications: the path's bundleId is the template's own text, an app that is not configured (404).
    ("notification-garbage", NOTIFICATIONS_PATH, {"signedPayload": "hello"}, True),
    ("notification-longer-than-other-strings", NOTIFICATIONS_PATH, {"signedPayload": long_text(20000)}, True),
    ("notification-empty", NOTIFICATIONS_PATH, {"signedPayload": ""}, False),
    ("notification-missing", NOTIFICATIONS_PATH, {}, False),
    ("notification-number", NOTIFICATIONS_PATH, {"signedPayload": 1}, False),
    ("notification-unknown-field", NOTIFICATIONS_PATH, {"signedPayload": "hello", "bundleId": BUNDLE_ID}, False),
    # Retention: the same, with the 16 KiB of every other string.
    ("retention-garbage", RETENTION_PATH, {"signedPayload": "hello"}, True),
    ("retention-longest", RETENTION_PATH, {"signedPayload": long_text(16384)}, True),
    ("retention-too-long", RETENTION_PATH, {"signedPayload": long_text(16385)}, False),
    ("retention-empty", RETENTION_PATH, {"signedPayload": ""}, False),
    ("retention-missing", RETENTION_PATH, {}, False),
    ("retention-unknown-field", RETENTION_PATH, {"signedPayload": "hello", "bundleId": BUNDLE_ID}, False),
]


@pytest.mark.parametrize("name,path,body,accepted", REQUESTS, ids=[r[0] for r in REQUESTS])
def test_request_schema_agrees_with_the_server(request, openapi, verified_server, name, path, body, accepted):
    if callable(body):
        body = body(request.getfixturevalue("signed"))
    problems = openapi.errors(openapi.request_schema_pointer(path), body)
    assert (not problems) is accepted, problems
    raw = json.dumps(body).encode()
    reply = verified_server.request("POST", path, raw)
    openapi.check(reply, openapi.operation_response("POST", path, reply.status), "POST")
    code = reply.json().get("error", {}).get("code") if reply.status >= 400 else None
    if accepted:
        assert code != "invalid_request", reply.body
    else:
        assert (reply.status, code) == (400, "invalid_request"), reply.body


# MARK: - admin-openapi.yaml: the admin listener

CATALOG = "/admin/v1/apps/{bundleId}/catalog"
# Every operation the admin listener routes (HEAD is answered wherever GET is, undocumented).
ADMIN_OPERATIONS = {
    ("GET", "/admin/v1/health"),
    ("POST", "/admin/v1/session"),
    ("GET", "/admin/v1/session"),
    ("DELETE", "/admin/v1/session"),
    ("GET", "/admin/v1/tokens"),
    ("POST", "/admin/v1/tokens"),
    ("DELETE", "/admin/v1/tokens/{id}"),
    ("GET", CATALOG + "/versions"),
    ("GET", CATALOG + "/versions/{version}"),
    ("GET", CATALOG + "/draft"),
    ("PUT", CATALOG + "/draft"),
    ("DELETE", CATALOG + "/draft"),
    ("POST", CATALOG + "/validate"),
    ("GET", CATALOG + "/diff"),
    ("POST", CATALOG + "/publish"),
    ("POST", CATALOG + "/rollback"),
    ("GET", "/admin/v1/apps/{bundleId}/app-store-connect"),
    ("POST", "/admin/v1/apps/{bundleId}/app-store-connect/refresh"),
    ("POST", "/admin/v1/apps/{bundleId}/app-store-connect/import"),
    ("GET", "/admin/v1/audit"),
    ("GET", "/admin/v1/audit/verify"),
    ("GET", "/admin/v1/apps"),
    ("GET", "/admin/v1/apps/{bundleId}/keys"),
    ("GET", "/admin/v1/apps/{bundleId}/offers"),
    ("GET", "/admin/v1/apps/{bundleId}/offers/{offerId}/stats"),
    ("GET", "/admin/v1/apps/{bundleId}/offers/{offerId}/outcomes"),
    ("GET", "/admin/v1/apps/{bundleId}/app-attest"),
    ("GET", "/admin/v1/apps/{bundleId}/offers/{offerId}/experiments/{experimentId}"),
    ("GET", "/admin/v1/decisions"),
    ("POST", "/admin/v1/simulate"),
}


def concrete(path: str) -> str:
    return (path.replace("{bundleId}", BUNDLE_ID).replace("{id}", "0123456789ab").replace("{version}", "1")
            .replace("{offerId}", OFFER_OPEN))


@pytest.fixture(scope="module")
def admin_openapi() -> OpenAPI:
    return OpenAPI(yaml.safe_load(ADMIN_SPEC_PATH.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def admin_server(tmp_path_factory, signing_key):
    """A server with an admin listener (the catalog in the storage), addressed at its admin port."""
    directory = tmp_path_factory.mktemp("admin-openapi")
    config = json.loads(write_config(directory / "plain.json", [signing_key]).read_text())
    config["storage"] = "memory"
    config["catalog"] = "storage"
    config["admin"] = {"listen": {"host": "127.0.0.1", "port": 0}}
    path = directory / "admin.json"
    path.write_text(json.dumps(config, indent=2))
    running = Server.start(path, directory, admin=True)
    yield running.admin()
    status = running.stop(signal.SIGTERM, timeout=5)
    assert status == 0, running.stderr_path.read_text(errors="replace")


def test_admin_document_is_valid_openapi_3_1(admin_openapi):
    assert admin_openapi.document["openapi"].startswith("3.1.")
    validate_openapi(admin_openapi.document)


def test_admin_examples_fit_their_schemas(admin_openapi):
    assert examples_checked(admin_openapi) >= 15


def test_admin_document_operations_are_the_routes(admin_openapi):
    assert admin_openapi.operations() == ADMIN_OPERATIONS


def test_admin_every_documented_operation_is_routed(admin_server, admin_openapi):
    """Without credentials: 200 for health, 400 for a sign-in without a token, 401 everywhere else; each as
    documented, security headers included."""
    for method, path in sorted(admin_openapi.operations()):
        reply = admin_server.request(method, concrete(path), b"{}" if method in ("POST", "PUT") else None)
        assert reply.status not in (404, 405), (method, path, reply.status, reply.body)
        expected = {"/admin/v1/health": 200}.get(path, 400 if (method, path) == ("POST", "/admin/v1/session") else 401)
        assert reply.status == expected, (method, path, reply.status, reply.body)
        admin_openapi.check(reply, admin_openapi.operation_response(method, path, reply.status), method)
        assert reply.header("X-Frame-Options") == "DENY", (method, path, reply.headers)
        assert (reply.header("Content-Security-Policy") or "").startswith("default-src 'none'"), reply.headers
        assert reply.header("Referrer-Policy") == "no-referrer", reply.headers


def test_admin_sign_in_with_an_unknown_token_is_401(admin_server, admin_openapi):
    reply = admin_server.post("/admin/v1/session", {"token": "osa_" + "A" * 43})
    assert reply.status == 401, reply.body
    admin_openapi.check(reply, admin_openapi.operation_response("POST", "/admin/v1/session", 401), "POST")
    assert reply.json()["error"]["code"] == "unauthorized"


def test_admin_every_other_method_gets_405_with_allow(admin_server, admin_openapi):
    declared = admin_openapi.component_response("MethodNotAllowed")
    for path, item in admin_openapi.document["paths"].items():
        allowed = {m.upper() for m in OPENAPI_METHODS if m in item}
        if "GET" in allowed:
            allowed.add("HEAD")
        for method in HTTP_METHODS:
            if method in allowed:
                continue
            reply = admin_server.request(method, concrete(path), b"{}" if method in ("POST", "PUT", "PATCH") else None)
            assert reply.status == 405, (method, path, reply.status)
            methods = {m.strip() for m in reply.header("Allow").split(",")}
            assert methods == allowed, (method, path, reply.headers)
            admin_openapi.check(reply, declared, method)


@pytest.mark.parametrize("path", ["/admin/v1", "/admin/v2/session", "/admin/v1/session/", "/admin/v1/audits",
                                  "/admin/v1/tokens/a/b", "/ADMIN/v1/health"])
def test_admin_undocumented_paths_get_404(admin_server, admin_openapi, path):
    declared = admin_openapi.component_response("NotFound")
    reply = admin_server.request("GET", path)
    assert reply.status == 404, (path, reply.status)
    admin_openapi.check(reply, declared, "GET")
    assert reply.json()["error"]["code"] == "not_found"


def test_public_port_refuses_every_admin_path(server, openapi):
    """The admin API is never on the public port, whatever the credentials."""
    declared = openapi.component_response("NotFound")
    for method, path in sorted(ADMIN_OPERATIONS):
        reply = server.request(method, concrete(path), b"{}" if method in ("POST", "PUT") else None,
                               headers={"Authorization": "Bearer osa_" + "A" * 43})
        assert reply.status == 404, (method, path, reply.status)
        openapi.check(reply, declared, method)


def test_admin_error_codes_match_the_swift_source(admin_openapi):
    """Every (status, code) the admin listener can answer is declared, and the document's codes are exactly those:
    the admin API's own (the admin section of ErrorMapping.statuses) and the shared ones its routes and the HTTP layer give."""
    server = REPO_ROOT / "Sources" / "OfferServer" / "Routing"
    raw_codes = dict(re.findall(r'static let (\w+) = ErrorCode\(rawValue: "([a-z_]+)"\)',
                                (REPO_ROOT / "Sources" / "OfferAPI" / "ErrorCode.swift").read_text()))
    table = status_table(server)
    pairs = re.findall(r'\.(\w+): (\d+)', table[table.index(ADMIN_SECTION):])
    emitted = {(int(status), raw_codes[code]) for code, status in pairs}
    assert len(emitted) >= 11, emitted
    # Shared with the public API: a bad body or argument, an unknown app or offer (an offer's stats), signed data that
    # does not verify (a simulation), the store failing, a bug; the HTTP layer's 404, 405, 413 and its 503 while
    # stopping.
    emitted |= {(400, "invalid_request"), (404, "unknown_app"), (503, "storage_unavailable"), (500, "internal_error"),
                (404, "not_found"), (405, "method_not_allowed"), (413, "payload_too_large"), (503, "not_ready"),
                (404, "unknown_offer"), (400, "untrusted_signed_data")}

    declared: set[tuple[int, str]] = set()
    for path, item in admin_openapi.document["paths"].items():
        for method in OPENAPI_METHODS:
            for status, response in item.get(method, {}).get("responses", {}).items():
                response, _ = admin_openapi.deref(response, "")
                schema = response.get("content", {}).get("application/json", {}).get("schema")
                declared |= {(int(status), code) for code in schema_codes(admin_openapi, schema)} if schema else set()
    for name, status in (("NotFound", 404), ("MethodNotAllowed", 405), ("InternalError", 500)):
        response, _ = admin_openapi.component_response(name)
        declared |= {(status, code) for code in schema_codes(admin_openapi, response["content"]["application/json"])}
    assert emitted <= declared, f"answered by the admin listener but not declared: {sorted(emitted - declared)}"
    assert declared <= emitted, f"declared but never answered: {sorted(declared - emitted)}"
    enum = set(admin_openapi.document["components"]["schemas"]["ErrorCode"]["enum"])
    assert enum == {code for _, code in emitted}
