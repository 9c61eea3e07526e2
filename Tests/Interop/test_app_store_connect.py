"""The catalog against App Store Connect, judged from outside: `offer-signer-testkit app-store-connect`'s fake and
`offer-signer catalog check --app-store-connect`.

1. The check finds what StoreKit would refuse (a typo'd offer ID, an offer attached to another product, an unknown
   product, a win-back rule no eligible customer passes) with codes, JSON paths and Apple's identifiers, in text and
   JSON, and exits 1 on errors, 0 when the catalog agrees.
2. The JWT it sends (captured by the fake's --token-file) verifies with PyJWT under the team key's public key, with
   exactly the header and claims Apple documents for team keys: kid, typ JWT, iss, iat, exp at most 20 minutes after
   iat, aud appstoreconnect-v1, and no bid.
3. A refused key, and Apple's rate limit, fail the check in one line naming the app and the key, never a token.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from pathlib import Path

import jwt
import pytest

from support import BUNDLE_ID, ISSUER_ID, KEY_ID, KeyMaterial, KitFake, generate_key, run_cli

ASC_KEY_ID = "ASCKEY0001"
ASC_ISSUER = "69a6de70-03db-47e3-e053-5b8c7c11a4d1"
MONTHLY = "com.example.interop.pro.monthly"
YEARLY = "com.example.interop.pro.yearly"


def state(fault: dict | None = None) -> dict:
    document = {
        "issuerId": ASC_ISSUER, "keyId": ASC_KEY_ID, "pageSize": 1,
        "apps": [
            {"id": "100", "bundleId": BUNDLE_ID, "groups": [
                {"id": "g1", "referenceName": "Pro", "subscriptions": [
                    {"id": "s1", "productId": MONTHLY, "name": "Monthly", "state": "APPROVED",
                     "promotionalOffers": [{"id": "p1", "offerCode": "spring", "name": "Spring"},
                                           {"id": "p2", "offerCode": "autumn", "name": "Autumn"}],
                     "introductoryOffers": [{"id": "i1", "duration": "ONE_WEEK", "offerMode": "FREE_TRIAL"}],
                     "winBackOffers": [{"id": "w1", "offerId": "comeback", "referenceName": "Come back",
                                        "customerEligibilityPaidSubscriptionDurationInMonths": 3,
                                        "customerEligibilityTimeSinceLastSubscribedInMonths":
                                            {"minimum": 2, "maximum": 24}}]},
                    {"id": "s2", "productId": YEARLY, "name": "Yearly", "state": "APPROVED"}]}]},
            {"id": "200", "bundleId": BUNDLE_ID + ".dev"}],
    }
    if fault:
        document["fault"] = fault
    return document


class Fake(KitFake):
    """`offer-signer-testkit app-store-connect` on a free port, with its state file and the last token it saw."""

    def __init__(self, directory: Path, public_key: Path):
        self.token_path = directory / "asc-token.txt"
        super().__init__("app-store-connect", directory / "asc-state.json", directory / "asc.stderr",
                         ["--public-key", str(public_key), "--token-file", str(self.token_path)], state())


@pytest.fixture()
def team_key(tmp_path) -> KeyMaterial:
    return KeyMaterial.load(ASC_KEY_ID, generate_key(tmp_path, ASC_KEY_ID))


@pytest.fixture()
def fake(tmp_path, team_key):
    running = Fake(tmp_path, team_key.path)
    yield running
    running.stop()


GOOD_OFFERS = [
    {"id": "spring", "type": "promotional", "productIds": [MONTHLY]},
    {"id": "autumn", "type": "promotional", "productIds": [MONTHLY]},
    {"id": "comeback", "type": "winBack", "productIds": [MONTHLY], "eligibility": {"daysSinceExpiry": {"min": 60}}},
]

BAD_OFFERS = [
    {"id": "spring", "type": "promotional", "productIds": [MONTHLY, YEARLY]},
    {"id": "sprnig", "type": "promotional", "productIds": [MONTHLY]},
    {"id": "comeback", "type": "winBack", "productIds": [MONTHLY],
     "eligibility": {"all": [{"subscriptionStatus": ["expired"]}, {"daysSinceExpiry": {"max": 30}}]}},
    {"id": "weekly", "type": "promotional", "productIds": ["com.example.interop.pro.weekly"]},
]


def write_config(directory: Path, team_key: KeyMaterial, fake: Fake, offers: list[dict]) -> Path:
    signing = generate_key(directory, KEY_ID)
    config = {
        "storage": "memory",
        "appStoreConnect": {"keyId": team_key.key_id, "issuerId": ASC_ISSUER, "privateKeyFile": str(team_key.path),
                            "baseURL": fake.base_url},
        "apps": [{"bundleId": BUNDLE_ID, "issuerId": ISSUER_ID,
                  "keys": [{"keyId": KEY_ID, "privateKeyFile": str(signing)}], "offers": offers}],
    }
    path = directory / "offer-signer.json"
    path.write_text(json.dumps(config))
    return path


def check(config: Path, *extra: str) -> subprocess.CompletedProcess:
    return run_cli("catalog", "check", "--config", str(config), "--app-store-connect", *extra, timeout=60)


def test_agreeing_catalog_passes_with_a_notice_for_apple_offers_it_does_not_use(tmp_path, team_key, fake):
    result = check(write_config(tmp_path, team_key, fake, GOOD_OFFERS), "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["errors"] == 0
    assert [app["bundleId"] for app in report["apps"]] == [BUNDLE_ID]
    assert report["apps"][0]["findings"] == []


def test_mismatches_are_errors_with_codes_paths_and_apple_ids_and_exit_1(tmp_path, team_key, fake):
    config = write_config(tmp_path, team_key, fake, BAD_OFFERS)
    result = check(config, "--format", "json")
    assert result.returncode == 1, result.stderr
    findings = [(f["severity"], f["code"], f["path"], f.get("appleId"))
                for f in json.loads(result.stdout)["apps"][0]["findings"]]
    assert findings == [
        ("error", "offer_other_product", "$.apps[0].offers[0].productIds[1]", "spring"),
        ("error", "offer_missing", "$.apps[0].offers[1].id", "sprnig"),
        ("error", "rule_never_passes", "$.apps[0].offers[2].eligibility", "w1"),
        ("error", "offer_missing", "$.apps[0].offers[3].id", "weekly"),
        ("error", "product_unknown", "$.apps[0].offers[3].productIds[0]", "com.example.interop.pro.weekly"),
        ("notice", "apple_offer_unused", "$.apps[0]", "autumn"),
    ]
    text = check(config)
    assert text.returncode == 1
    assert text.stdout.splitlines()[0].startswith(f"{BUNDLE_ID}: 5 error(s), 0 warning(s), 1 notice(s) against "
                                                  "App Store Connect (read ")
    assert ("  error offer_missing at $.apps[0].offers[1].id (Apple: sprnig): App Store Connect has no promotional "
            f"offer \"sprnig\" for any subscription of {BUNDLE_ID}: StoreKit refuses it (a typo, or removed at "
            "Apple?)") in text.stdout.splitlines()


def test_the_token_is_a_team_key_jwt_as_apple_documents_it(tmp_path, team_key, fake):
    assert check(write_config(tmp_path, team_key, fake, GOOD_OFFERS)).returncode == 0
    token = fake.token_path.read_text()
    header = jwt.get_unverified_header(token)
    assert header == {"alg": "ES256", "kid": ASC_KEY_ID, "typ": "JWT"}
    claims = jwt.decode(token, team_key.public_key, algorithms=["ES256"], audience="appstoreconnect-v1",
                        issuer=ASC_ISSUER, options={"require": ["iss", "iat", "exp", "aud"]})
    assert set(claims) == {"iss", "iat", "exp", "aud"}
    assert 0 < claims["exp"] - claims["iat"] <= 20 * 60
    assert abs(claims["iat"] - time.time()) < 300
    # A changed byte fails.
    head, body, signature = token.split(".")
    forged = ".".join([head, body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1], signature])
    with pytest.raises(jwt.InvalidTokenError):
        jwt.decode(forged, team_key.public_key, algorithms=["ES256"], audience="appstoreconnect-v1")


def test_a_refused_key_fails_in_one_line_naming_app_and_key(tmp_path, team_key, fake):
    other = KeyMaterial.load("OTHERKEY01", generate_key(tmp_path, "OTHERKEY01"))
    config = json.loads(write_config(tmp_path, team_key, fake, GOOD_OFFERS).read_text())
    config["appStoreConnect"]["privateKeyFile"] = str(other.path)
    path = tmp_path / "wrong-key.json"
    path.write_text(json.dumps(config))
    result = check(path)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"offer-signer: {BUNDLE_ID}: App Store Connect refused key {ASC_KEY_ID} of issuer "
                               f"{ASC_ISSUER} (401)"), lines[0]
    token = fake.token_path.read_text()
    assert token not in result.stdout + result.stderr
    assert "the signature does not verify" in fake.stderr_path.read_text()


def test_apples_rate_limit_fails_the_check_saying_until_when(tmp_path, team_key, fake):
    fake.set_state(state({"status": 429, "retryAfter": "120"}))
    result = check(write_config(tmp_path, team_key, fake, GOOD_OFFERS))
    assert result.returncode != 0
    assert f"{BUNDLE_ID}: App Store Connect's rate limit was reached (429); no call before " in result.stderr


def test_check_needs_its_source_and_an_api_key(tmp_path, team_key, fake):
    config = write_config(tmp_path, team_key, fake, GOOD_OFFERS)
    usage = run_cli("catalog", "check", "--config", str(config))
    assert usage.returncode == 2
    assert "--app-store-connect" in usage.stderr
    bare = json.loads(config.read_text())
    del bare["appStoreConnect"]
    path = tmp_path / "bare.json"
    path.write_text(json.dumps(bare))
    result = check(path)
    assert result.returncode != 0
    assert "no app to check has \"appStoreConnect\"" in result.stderr


def test_config_check_loads_the_team_key_without_calling_apple(tmp_path, team_key, fake):
    config = write_config(tmp_path, team_key, fake, GOOD_OFFERS)
    calls = json.loads(urllib.request.urlopen(fake.base_url + "/__fake/requests").read())["calls"]
    checked = run_cli("config", "check", "--config", str(config))
    assert checked.returncode == 0, checked.stderr
    assert (f"  App Store Connect: key {ASC_KEY_ID} of issuer {ASC_ISSUER}, {team_key.path} (loaded; Apple not "
            "contacted: `catalog check --app-store-connect` does)") in checked.stdout.splitlines()
    after = json.loads(urllib.request.urlopen(fake.base_url + "/__fake/requests").read())["calls"]
    assert after == calls
    # A key file others may read is refused, naming the file, never its contents.
    team_key.path.chmod(0o644)
    refused = run_cli("config", "check", "--config", str(config))
    assert refused.returncode == 1
    assert f"$.apps[0].appStoreConnect.privateKeyFile: {team_key.path}" in refused.stderr
    assert "PRIVATE KEY" not in refused.stderr
