"""The example consumer package (Examples/OfferKitDemo) against the real binary: it depends on this repository
as an app would, imports only OfferKit, and runs the flow of docs/app-teams.md. Its purchase plans are judged here:
ES256 verification (cryptography) of the JWS with the service's key, and the legacy plan's DER bytes verified over
the payload Apple's own library builds from the plan's nonce, timestamp and token."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from support import (
    BUNDLE_ID,
    ISSUER_ID,
    OFFER_INTRO,
    OFFER_LAPSED,
    OFFER_OPEN,
    OFFER_WB_ANY,
    PRODUCT_MONTHLY,
    REPO_ROOT,
    apple_legacy_payload,
    der_signature_verifies,
    jws_parts,
    jws_verifies,
)

EXAMPLE = REPO_ROOT / "Examples" / "OfferKitDemo"


@pytest.fixture(scope="module")
def demo() -> Path:
    path = Path(os.environ.get("OFFERKIT_DEMO_BIN", EXAMPLE / ".build" / "debug" / "offerkit-demo"))
    assert path.exists(), f"{path} is missing: `make test` builds it (swift build --package-path {EXAMPLE})"
    return path


def run_demo(demo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(demo), *args], capture_output=True, text=True, timeout=60)


def steps(result: subprocess.CompletedProcess) -> dict[str, dict]:
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    by_step = {line.pop("step"): line for line in lines}
    assert len(by_step) == len(lines), result.stdout
    return by_step


def test_the_example_builds_only_offerkit_and_the_wire_types(demo):
    """An app that adds the package links OfferKit and OfferAPI, none of the service's modules or C libraries."""
    # The objects linked into the example's binary, by module (SwiftPM's link file list for the product).
    link_list = demo.parent / f"{demo.name}.product" / "Objects.LinkFileList"
    objects = [Path(line.strip().strip("'\"")) for line in link_list.read_text().splitlines() if line.strip()]
    modules = {obj.parent.name.removesuffix(".build") for obj in objects}
    assert modules == {"OfferAPI", "OfferKit", "offerkit_demo"}, modules
    linked = subprocess.run(["ldd", str(demo)], capture_output=True, text=True, check=True).stdout
    for library in ("libmicrohttpd", "libsqlite3"):
        assert library not in linked, linked


@pytest.mark.parametrize("environment", ["Sandbox", "Production"])
def test_the_readme_flow_against_test_kit_data(demo, request, signed, signing_key, tmp_path, environment):
    production = environment == "Production"
    verified_server = request.getfixturevalue("verified_production_server" if production else "verified_server")
    (tmp_path / "transaction.jws").write_text(signed.lapsed_production if production else signed.lapsed)
    (tmp_path / "renewal.jws").write_text(signed.renewal_production if production else signed.renewal)
    before = int(time.time() * 1000)
    result = run_demo(
        demo, "--url", verified_server.base_url, "--bundle-id", BUNDLE_ID, "--product", PRODUCT_MONTHLY,
        "--offer", OFFER_LAPSED, "--intro-offer", OFFER_INTRO, "--transaction", str(tmp_path / "transaction.jws"),
        "--renewal-info", str(tmp_path / "renewal.jws"), "--json")
    after = int(time.time() * 1000)
    out = steps(result)
    assert set(out) == {"eligible", "win-back", "jws", "legacy", "intro-decision", "intro"}, out

    # Listing: the lapsed customer's promotional offers; Apple's win-back list filtered by the service's rules
    # (the GBR-only offer is out for a USA storefront, the unconfigured one is dropped), Apple's order kept.
    assert OFFER_LAPSED in out["eligible"]["promotional"] and OFFER_OPEN in out["eligible"]["promotional"]
    assert out["eligible"]["winBack"] == [OFFER_WB_ANY]
    assert out["win-back"] == {"productId": PRODUCT_MONTHLY, "offerId": OFFER_WB_ANY, "appAccountToken": None}

    # The JWS plan: signed by the service's key, for this app, product and offer.
    jws = out["jws"]
    assert jws["offerId"] == OFFER_LAPSED and jws["appAccountToken"] is None
    assert jws_verifies(jws["compactJWS"], signing_key.public_key)
    header, claims, _ = jws_parts(jws["compactJWS"])
    assert header["kid"] == signing_key.key_id
    assert (claims["iss"], claims["bid"], claims["productId"], claims["offerIdentifier"]) == (
        ISSUER_ID, BUNDLE_ID, PRODUCT_MONTHLY, OFFER_LAPSED)

    # A Sandbox customer gets JWS signatures only: a legacy one does not name the customer.
    legacy = out["legacy"]
    if not production:
        assert "JWS signatures only" in legacy["refused"], legacy
        legacy = None
    # The legacy plan: DER bytes (not Base64 text) that verify over Apple's payload made from the plan's own
    # nonce, timestamp (milliseconds) and token; the token is the one the plan buys with.
    if legacy is not None:
        check_legacy_plan(legacy, signing_key, before, after)

    # The introductory offer decision: lapsed over 30 days, allowed, and the JWS says so.
    assert out["intro-decision"] == {"offerId": OFFER_INTRO, "allowed": True, "reasons": []}
    intro = out["intro"]
    assert jws_verifies(intro["compactJWS"], signing_key.public_key)
    _, intro_claims, _ = jws_parts(intro["compactJWS"])
    assert intro_claims["allowIntroductoryOffer"] is True and intro_claims["productId"] == PRODUCT_MONTHLY


def check_legacy_plan(legacy: dict, signing_key, before: int, after: int) -> None:
    der = base64.b64decode(legacy["signatureDER"], validate=True)
    assert der[0] == 0x30 and len(der) in range(68, 73), der.hex()
    assert before <= legacy["timestamp"] <= after
    token = legacy["appAccountToken"]
    assert uuid.UUID(token) and uuid.UUID(legacy["nonce"])
    payload = apple_legacy_payload(
        signing_key.pem, legacy["keyId"], BUNDLE_ID, PRODUCT_MONTHLY, OFFER_LAPSED, token, legacy["nonce"],
        legacy["timestamp"])
    assert der_signature_verifies(der, payload, signing_key.public_key)
    other = apple_legacy_payload(
        signing_key.pem, legacy["keyId"], BUNDLE_ID, PRODUCT_MONTHLY, OFFER_LAPSED, str(uuid.uuid4()),
        legacy["nonce"], legacy["timestamp"])
    assert not der_signature_verifies(der, other, signing_key.public_key)


def test_the_example_reports_the_service_errors(demo, verified_server):
    result = run_demo(demo, "--url", verified_server.base_url, "--bundle-id", BUNDLE_ID, "--product", PRODUCT_MONTHLY,
                      "--offer", "no_such_offer")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "unknown offer" in result.stderr and "offerId" in result.stderr, result.stderr
    refused = run_demo(demo, "--url", verified_server.base_url, "--bundle-id", BUNDLE_ID, "--product", PRODUCT_MONTHLY,
                       "--offer", OFFER_LAPSED)
    assert refused.returncode == 1
    assert refused.stderr.startswith("offerkit-demo: not eligible: "), refused.stderr
    closed = run_demo(demo, "--url", "http://127.0.0.1:1", "--bundle-id", BUNDLE_ID)
    assert closed.returncode == 1 and "transport: cannotConnect" in closed.stderr, closed.stderr


def test_the_example_builds_from_a_checkout_in_a_folder_of_any_name(tmp_path):
    """SwiftPM names a path dependency after its folder (issue 19, item 11): the example's manifest reads that name
    from its own path, so a clone called anything but `offer-signer` still builds it. Built here from a copy of the
    manifest and sources in `My-Offer-Signer.git` (the identity `my-offer-signer`: lowercased, `.git` dropped), as an app would, with
    pkg-config blind; the same manifest with the package hard-coded as "offer-signer" must fail there."""
    checkout = tmp_path / "My-Offer-Signer.git"
    checkout.mkdir()
    shutil.copy(REPO_ROOT / "Package.swift", checkout / "Package.swift")
    shutil.copytree(REPO_ROOT / "Sources", checkout / "Sources")
    example = checkout / "Examples" / "OfferKitDemo"
    shutil.copytree(EXAMPLE, example, ignore=shutil.ignore_patterns(".build"))
    environment = {**os.environ, "PKG_CONFIG_LIBDIR": "/nonexistent", "PKG_CONFIG_PATH": ""}

    def build() -> subprocess.CompletedProcess:
        return subprocess.run(["swift", "build", "--package-path", str(example), "--scratch-path",
                               str(tmp_path / "scratch"), "--product", "offerkit-demo"],
                              capture_output=True, text=True, timeout=600, env=environment)

    built = build()
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert (tmp_path / "scratch" / "debug" / "offerkit-demo").exists()

    manifest = example / "Package.swift"
    manifest.write_text(manifest.read_text().replace('package: identity', 'package: "offer-signer"'))
    hard_coded = build()
    assert hard_coded.returncode != 0, "a hard-coded identity built from a folder of another name"
    assert "offer-signer" in hard_coded.stderr + hard_coded.stdout
