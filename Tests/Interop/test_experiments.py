"""Issue 22: outcomes, holdout experiments and their statistics, through the real binary.

`offer-signer-testkit simulate-campaign` plays campaigns whose true effect it sets against the running service, over
its real routes: lapsed subscribers (signed by the test CA) ask for a promotional offer's signature (or the
eligibility listing, for a win-back offer), and Apple's notifications of their purchases, renewals and expiries come
to the notification route. The report (admin API, `offer-signer report`) must count exactly what the simulation did,
arm by arm, on SQLite and on PostgreSQL; with a true lift of +10 points the difference's interval holds it, and with
none the verdict finds no difference.

Every interval and sample size of a report is judged by SciPy and statsmodels (Wilson, Newcombe's hybrid score
interval, the normal-approximation sample size), and the verdict is derived again from them. The false-positive
rate across seeds is measured over 200 seeded campaigns of known arms written into the ledger: the service's
reports say "no difference" about 95% of the time with no true effect, and hold a true +10 points in about 95% of
their intervals. The console's Charts page is opened in Chromium and photographed with the experiment cards.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import random
import re
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from scipy.stats import norm
from selenium.webdriver.common.by import By
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from support import BUNDLE_ID, ISSUER_ID, PRODUCT_MONTHLY, PRODUCT_YEARLY, Server, run_cli, run_testkit
from test_console import Console, Deployment, driver, screenshots, unexpected_errors  # noqa: F401

APP_APPLE_ID = 1234567890
LIFT = "comeback"  # a promotional offer whose campaign has a true lift of +10 points
NULL_A, NULL_B = "steady-a", "steady-b"  # campaigns with no true effect
WINBACK = "returning"  # a win-back offer, listed by /v1/eligibility
FALSE_POSITIVE_OFFERS = 200


def experiment(identifier: str, holdout: float, effect: float, metric: str = "conversion") -> dict:
    return {"id": identifier, "start": "2026-01-01T00:00:00Z", "holdoutPercent": holdout, "metric": metric,
            "minimumDetectableEffect": effect}


def offers() -> list[dict]:
    lapsed = {"subscriptionStatus": ["expired"]}
    return [
        {"id": LIFT, "type": "promotional", "productIds": [PRODUCT_MONTHLY], "eligibility": lapsed,
         "experiment": experiment("lift-test", 50, 10)},
        {"id": NULL_A, "type": "promotional", "productIds": [PRODUCT_MONTHLY], "eligibility": lapsed,
         "experiment": experiment("null-a", 50, 15)},
        {"id": NULL_B, "type": "promotional", "productIds": [PRODUCT_MONTHLY], "eligibility": lapsed,
         "experiment": experiment("null-b", 50, 15, "retainedAfterPeriod")},
        # On a product of its own: a listing exposes the customer to every offer it decides on the products asked.
        {"id": WINBACK, "type": "winBack", "productIds": [PRODUCT_YEARLY],
         "experiment": experiment("wb", 30, 15)},
    ]


def start(directory: Path, testkit_dir: Path, signing_key, storage: str, extra_offers: list[dict] = ()) -> tuple:
    config = {
        "listen": {"host": "127.0.0.1", "port": 0},
        "storage": storage,
        "admin": {"listen": {"host": "127.0.0.1", "port": 0}, "sessionMinutes": 60},
        "trust": {"rootCertificates": [str(testkit_dir / "ca" / "root.cer")],
                  "environments": ["Production", "Sandbox"]},
        "apps": [{"bundleId": BUNDLE_ID, "issuerId": ISSUER_ID, "appAppleId": APP_APPLE_ID,
                  "keys": [{"keyId": signing_key.key_id, "privateKeyFile": str(signing_key.path)}],
                  "offers": offers() + list(extra_offers)}],
    }
    path = directory / "experiments.json"
    path.write_text(json.dumps(config, indent=2))
    made = run_cli("admin", "token", "create", "--config", str(path), "--name", "ops", "--role", "viewer")
    assert made.returncode == 0, made.stderr
    server = Server.start(path, directory, admin=True)
    return server, path, made.stdout.strip()


def campaign(server: Server, testkit_dir: Path, offer: str, seed: int, customers: int, lift: float,
             *extra: str) -> dict:
    product = PRODUCT_YEARLY if offer == WINBACK else PRODUCT_MONTHLY
    played = run_testkit(
        "simulate-campaign", "--url", server.base_url, "--ca", str(testkit_dir / "ca"), "--bundle-id", BUNDLE_ID,
        "--offer", offer, "--product", product, "--customers", str(customers), "--seed", str(seed),
        "--lift", str(lift), "--app-apple-id", str(APP_APPLE_ID), *extra, timeout=300)
    assert played.returncode == 0, played.stderr
    truth = json.loads(played.stdout)
    assert truth["errors"] == 0, played.stderr
    assert truth["treatment"]["exposures"] + truth["holdout"]["exposures"] == customers
    return truth


def report(admin: Server, token: str, offer: str, experiment_id: str, query: str = ""):
    return admin.request("GET", f"/admin/v1/apps/{BUNDLE_ID}/offers/{offer}/experiments/{experiment_id}{query}",
                         headers={"Authorization": f"Bearer {token}"})


def assert_counts_are_the_truth(found: dict, truth: dict, signed: bool = True) -> None:
    """The report counts exactly what the simulation did, arm by arm."""
    for arm in ("treatment", "holdout"):
        row, done = found[arm], truth[arm]
        assert (row["exposures"], row["converted"], row["retained"], row["lapsed"]) == (
            done["exposures"], done["converted"], done["retained"], done["lapsed"]), (arm, row, done)
        revenue = {item["currency"]: item for item in row["revenue"]}
        if done["transactions"]:
            assert revenue["EUR"]["milliunits"] == done["revenueMilliunits"], (arm, row)
            assert revenue["EUR"]["transactions"] == done["transactions"], (arm, row)
            assert revenue["EUR"]["perExposureMilliunits"] == done["revenueMilliunits"] // done["exposures"]
        else:
            assert revenue == {}
    treatment, holdout = found["treatment"], found["holdout"]
    assert treatment["signaturesIssued"] == (treatment["exposures"] if signed else 0)
    assert treatment["redeemed"] == treatment["converted"] and treatment["convertedWithoutOffer"] == 0
    assert holdout["signaturesIssued"] == 0 and holdout["redeemed"] == 0
    assert holdout["convertedWithoutOffer"] == holdout["converted"]


def required_per_arm(baseline: float, effect: float) -> int:
    """The exposures per arm to detect `effect` from `baseline`, two-sided 5% and 80% power, from SciPy's quantiles
    (the normal approximation for two proportions without continuity correction)."""
    treated = baseline + effect
    pooled = (baseline + treated) / 2
    root = (norm.ppf(0.975) * (2 * pooled * (1 - pooled)) ** 0.5
            + norm.ppf(0.80) * (treated * (1 - treated) + baseline * (1 - baseline)) ** 0.5)
    return int(-(-(root * root) // (effect * effect)))


def assert_statistics_are_sound(found: dict) -> None:
    """Every figure of the report, judged by statsmodels and SciPy, and the verdict derived again from them."""
    treatment, holdout = found["treatment"], found["holdout"]
    effect = found["experiment"]["minimumDetectableEffect"] / 100
    for row in (treatment, holdout):
        assert row["rate"] == pytest.approx(row["successes"] / row["exposures"], abs=1e-12)
        lower, upper = proportion_confint(row["successes"], row["exposures"], alpha=0.05, method="wilson")
        assert row["interval"]["lower"] == pytest.approx(lower, abs=1e-9)
        assert row["interval"]["upper"] == pytest.approx(upper, abs=1e-9)
    lower, upper = confint_proportions_2indep(
        treatment["successes"], treatment["exposures"], holdout["successes"], holdout["exposures"],
        method="newcomb", compare="diff", alpha=0.05)
    assert found["difference"] == pytest.approx(treatment["rate"] - holdout["rate"], abs=1e-12)
    assert found["differenceInterval"]["lower"] == pytest.approx(lower, abs=1e-9)
    assert found["differenceInterval"]["upper"] == pytest.approx(upper, abs=1e-9)
    if holdout["rate"] > 0:
        assert found["relativeLift"] == pytest.approx(found["difference"] / holdout["rate"], abs=1e-12)
    required = required_per_arm(holdout["rate"], effect)
    assert found["requiredPerArm"] == required
    still = max(0, required - treatment["exposures"], required - holdout["exposures"])
    assert found["stillNeeded"] == still
    if still > 0:
        expected = "collecting"
    elif lower > 0:
        expected = "treatment better"
    elif upper < 0:
        expected = "holdout better"
    else:
        expected = "no difference detected yet"
    assert found["verdict"] == expected


@pytest.fixture(scope="module")
def world(tmp_path_factory, testkit_dir, signing_key):
    """One SQLite deployment and the campaigns played against it, with what each did."""
    directory = tmp_path_factory.mktemp("experiments")
    server, path, token = start(directory, testkit_dir, signing_key, f"sqlite:{directory / 'ledger.sqlite'}")
    truths = {
        LIFT: campaign(server, testkit_dir, LIFT, 22, 700, 10),
        NULL_A: campaign(server, testkit_dir, NULL_A, 103, 320, 0),
        NULL_B: campaign(server, testkit_dir, NULL_B, 104, 320, 0, "--retention", "0.6"),
        WINBACK: campaign(server, testkit_dir, WINBACK, 7, 240, 0, "--win-back"),
    }
    yield server, path, token, truths, directory
    assert server.stop() == 0


def test_the_reports_count_exactly_what_the_campaigns_did(world):
    server, _, token, truths, _ = world
    admin = server.admin()
    for offer, experiment_id in ((LIFT, "lift-test"), (NULL_A, "null-a"), (NULL_B, "null-b"), (WINBACK, "wb")):
        found = report(admin, token, offer, experiment_id)
        assert found.status == 200, found.body
        assert_counts_are_the_truth(found.json(), truths[offer], signed=offer != WINBACK)
        assert_statistics_are_sound(found.json())
    # The win-back offer's holdout is near its 30%.
    winback = truths[WINBACK]
    assert 0.2 < winback["holdout"]["exposures"] / 240 < 0.4


def test_a_true_lift_lies_in_the_interval_and_no_lift_finds_no_difference(world):
    server, _, token, truths, _ = world
    admin = server.admin()
    lifted = report(admin, token, LIFT, "lift-test").json()
    interval = lifted["differenceInterval"]
    assert interval["lower"] <= 0.10 <= interval["upper"], lifted
    assert lifted["stillNeeded"] == 0 and lifted["verdict"] != "collecting"
    for offer, experiment_id in ((NULL_A, "null-a"), (NULL_B, "null-b")):
        found = report(admin, token, offer, experiment_id).json()
        assert found["stillNeeded"] == 0, found
        assert found["differenceInterval"]["lower"] <= 0 <= found["differenceInterval"]["upper"], found
        assert found["verdict"] == "no difference detected yet", found
    # The retention metric counts the retained.
    retained = report(admin, token, NULL_B, "null-b").json()
    assert retained["experiment"]["metric"] == "retainedAfterPeriod"
    assert retained["treatment"]["successes"] == truths[NULL_B]["treatment"]["retained"]


def test_outcomes_csv_metrics_and_the_command_line_agree(world):
    server, path, token, truths, _ = world
    admin = server.admin()
    bearer = {"Authorization": f"Bearer {token}"}
    outcomes = admin.request("GET", f"/admin/v1/apps/{BUNDLE_ID}/offers/{LIFT}/outcomes", headers=bearer)
    assert outcomes.status == 200, outcomes.body
    periods = outcomes.json()["periods"]
    assert [(p["experimentId"], p["arm"]) for p in periods] == [("lift-test", "treatment"), ("lift-test", "holdout")]
    as_csv = admin.request("GET", f"/admin/v1/apps/{BUNDLE_ID}/offers/{LIFT}/outcomes?format=csv", headers=bearer)
    assert as_csv.status == 200 and as_csv.header("Content-Type").startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(as_csv.body.decode())))
    assert [(row["arm"], int(row["exposures"]), int(row["converted"])) for row in rows] == [
        (p["arm"], p["exposures"], p["converted"]) for p in periods]
    experiment_csv = report(admin, token, LIFT, "lift-test", "?format=csv")
    lines = list(csv.DictReader(io.StringIO(experiment_csv.body.decode())))
    assert [line["arm"] for line in lines] == ["treatment", "holdout", "difference"]
    found = report(admin, token, LIFT, "lift-test").json()
    assert float(lines[2]["lower"]) == pytest.approx(found["differenceInterval"]["lower"])
    assert lines[2]["verdict"] == found["verdict"]

    # Nothing in a report names a customer: no subscription key of the campaign appears anywhere.
    key = re.compile(r"(?<![\d.])5000022\d{8}(?!\d)")  # seed 22's keys: "5", the seed in 6 digits, 8 more
    for body in (outcomes.body, as_csv.body, experiment_csv.body, report(admin, token, LIFT, "lift-test").body):
        assert not key.search(body.decode())

    metrics = server.request("GET", "/metrics").body.decode()
    for arm in ("treatment", "holdout"):
        exposed = re.search(
            rf'offer_signer_exposures_total{{app="{BUNDLE_ID}",offer="{LIFT}",arm="{arm}"}} (\d+)', metrics)
        converted = re.search(
            rf'offer_signer_conversions_total{{app="{BUNDLE_ID}",offer="{LIFT}",arm="{arm}"}} (\d+)', metrics)
        assert exposed and int(exposed.group(1)) == truths[LIFT][arm]["exposures"], metrics
        assert converted and int(converted.group(1)) == truths[LIFT][arm]["converted"], metrics

    table = run_cli("report", "experiment", "--offer", LIFT, "--config", str(path))
    assert table.returncode == 0, table.stderr
    assert f"verdict: {found['verdict']}" in table.stdout
    assert f"treatment  {found['treatment']['exposures']:>7}" in table.stdout, table.stdout
    as_json = run_cli("report", "experiment", "--offer", LIFT, "--json", "--config", str(path))
    assert json.loads(as_json.stdout) == found
    cli_csv = run_cli("report", "experiment", "--offer", LIFT, "--csv", "--config", str(path))
    assert cli_csv.stdout.replace("\r\n", "\n") == experiment_csv.body.decode().replace("\r\n", "\n")
    cli_outcomes = run_cli("report", "outcomes", "--offer", LIFT, "--json", "--config", str(path))
    assert json.loads(cli_outcomes.stdout) == outcomes.json()


def test_bad_questions_get_their_codes(world):
    server, path, token, _, _ = world
    admin = server.admin()
    bearer = {"Authorization": f"Bearer {token}"}
    unknown = report(admin, token, LIFT, "autumn")
    assert unknown.status == 404 and unknown.json()["error"]["code"] == "unknown_experiment", unknown.body
    assert "lift-test" in unknown.json()["error"]["message"]
    missing = admin.request("GET", f"/admin/v1/apps/{BUNDLE_ID}/offers/nothing/outcomes", headers=bearer)
    assert missing.status == 404 and missing.json()["error"]["code"] == "unknown_offer"
    wrong = report(admin, token, LIFT, "lift-test", "?format=xml")
    assert wrong.status == 400 and wrong.json()["error"]["field"] == "format"
    environment = report(admin, token, LIFT, "lift-test", "?environment=Staging")
    assert environment.status == 400 and environment.json()["error"]["field"] == "environment"
    sandbox = report(admin, token, LIFT, "lift-test", "?environment=Sandbox").json()
    assert sandbox["treatment"]["exposures"] == 0 and sandbox["verdict"] == "collecting"
    anonymous = admin.request("GET", f"/admin/v1/apps/{BUNDLE_ID}/offers/{LIFT}/outcomes")
    assert anonymous.status == 401
    cli = run_cli("report", "experiment", "--offer", LIFT, "--experiment", "autumn", "--config", str(path))
    assert cli.returncode == 1 and "no experiment autumn" in cli.stderr, cli.stderr


@pytest.mark.parametrize("mistake, path, words", [
    ({"holdoutPercent": 95}, "$.apps[0].offers[0].experiment.holdoutPercent", "from 0 to 90"),
    ({"metric": "revenue"}, "$.apps[0].offers[0].experiment.metric", "unknown metric"),
    ({"requiresVerifiedCustomer": False}, "$.apps[0].offers[0].experiment", "verified customers"),
])
def test_a_bad_experiment_is_a_config_error_at_its_path(tmp_path, signing_key, mistake, path, words):
    offer = {"id": "o", "type": "promotional", "productIds": [PRODUCT_MONTHLY],
             "experiment": experiment("e", 20, 5)}
    if "requiresVerifiedCustomer" in mistake:
        offer.update(mistake)
    else:
        offer["experiment"].update(mistake)
    config = {"apps": [{"bundleId": BUNDLE_ID, "issuerId": ISSUER_ID,
                        "keys": [{"keyId": signing_key.key_id, "privateKeyFile": str(signing_key.path)}],
                        "offers": [offer]}]}
    file = tmp_path / "bad.json"
    file.write_text(json.dumps(config))
    checked = run_cli("config", "check", "--config", str(file))
    assert checked.returncode != 0
    assert path in checked.stderr and words in checked.stderr, checked.stderr


def test_the_false_positive_rate_across_seeds_is_near_five_percent(world):
    """200 seeded campaigns with no true effect, and 200 with +10 points, written into the ledger as exposures of
    known arm and outcome (what the campaigns above make through the routes, without their cost), each under an
    offer of its own; every report the service gives is judged by statsmodels, and the verdicts are counted."""
    server, path, token, _, directory = world
    admin = server.admin()
    ledger = directory / "ledger.sqlite"
    generator = random.Random(2026)
    with closing(sqlite3.connect(ledger, timeout=30)) as connection, connection:
        for index in range(2 * FALSE_POSITIVE_OFFERS):
            lift = 0.0 if index < FALSE_POSITIVE_OFFERS else 0.10
            offer = f"seeded-{index}"
            rows = []
            for customer in range(900):
                arm = "treatment" if generator.random() < 0.5 else "holdout"
                rate = 0.2 + (lift if arm == "treatment" else 0)
                converted = generator.random() < rate
                # The state's flag 4 is "converted" (Exposure.State).
                rows.append((BUNDLE_ID, offer, f"e-{index}", f"9{index:04d}{customer:06d}", arm, 1_000,
                             2_000 if converted else None, 0 if converted else None, 4 if converted else 0))
            connection.executemany(
                "INSERT INTO exposures (bundle_id, offer_id, experiment_id, customer_key, arm, exposed_ms, "
                "converted_ms, converted_with_offer, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    # The offers, each with its experiment, are served by a second deployment on the same ledger.
    seeded = [{"id": f"seeded-{index}", "type": "promotional", "productIds": [PRODUCT_MONTHLY],
               "experiment": experiment(f"e-{index}", 50, 10)} for index in range(2 * FALSE_POSITIVE_OFFERS)]
    config = json.loads(path.read_text())
    config["apps"][0]["offers"] += seeded
    reader_path = directory / "seeded.json"
    reader_path.write_text(json.dumps(config))
    reader = Server.start(reader_path, directory, admin=True)
    try:
        verdicts = {0.0: [], 0.10: []}
        covered = {0.0: 0, 0.10: 0}
        for index in range(2 * FALSE_POSITIVE_OFFERS):
            lift = 0.0 if index < FALSE_POSITIVE_OFFERS else 0.10
            found = report(reader.admin(), token, f"seeded-{index}", f"e-{index}")
            assert found.status == 200, found.body
            found = found.json()
            assert_statistics_are_sound(found)
            verdicts[lift].append(found["verdict"])
            interval = found["differenceInterval"]
            covered[lift] += interval["lower"] <= lift <= interval["upper"]
    finally:
        assert reader.stop() == 0
    null = verdicts[0.0]
    print(f"seeded campaigns: null verdicts {sorted((v, null.count(v)) for v in set(null))}; "
          f"+10 verdicts {sorted((v, verdicts[0.10].count(v)) for v in set(verdicts[0.10]))}; "
          f"coverage {covered[0.0]}/{FALSE_POSITIVE_OFFERS} and {covered[0.10]}/{FALSE_POSITIVE_OFFERS}")
    assert null.count("collecting") < 0.05 * len(null), null
    false_positive = sum(verdict in ("treatment better", "holdout better") for verdict in null) / len(null)
    assert 0.01 <= false_positive <= 0.10, false_positive
    assert 0.90 <= covered[0.0] / FALSE_POSITIVE_OFFERS <= 0.99
    assert 0.90 <= covered[0.10] / FALSE_POSITIVE_OFFERS <= 0.99
    # Planned for 80% power: most +10-point campaigns are found.
    power = verdicts[0.10].count("treatment better") / FALSE_POSITIVE_OFFERS
    assert 0.65 <= power <= 0.95, power


def test_the_charts_page_draws_the_experiments(driver, world, screenshots):
    server, _, token, _, directory = world
    deployment = Deployment(server, token, directory / "ledger.sqlite")
    console = Console(driver, deployment, screenshots)
    console.open()
    console.sign_in(token)
    console.go("charts")
    cards = {card.get_attribute("data-offer-id"): card for card in console.all(".experiment-card")}
    assert set(cards) == {LIFT, NULL_A, NULL_B, WINBACK}
    for offer, experiment_id in ((LIFT, "lift-test"), (NULL_A, "null-a")):
        found = report(server.admin(), token, offer, experiment_id).json()
        card = cards[offer]
        assert card.find_element(By.CSS_SELECTOR, ".verdict").text == found["verdict"]
        assert len(card.find_elements(By.CSS_SELECTOR, ".chart-wide .error-bar")) == 9  # 3 lines per interval
        assert str(found["treatment"]["exposures"]) in card.find_element(By.CSS_SELECTOR, "[data-fact=treatment]").text
    for offer, name in ((LIFT, "experiment-lift-10"), (NULL_A, "experiment-lift-0")):
        photograph(driver, cards[offer], screenshots / f"{name}.png")
    split = console.find(f".chart-card[data-offer-id={LIFT}] .arm-split")
    assert split.get_attribute("data-period") == "lift-test"
    console.screenshot("charts-experiments")
    # The console asks for its session before signing in: that 401 is the only error the browser may have seen.
    problems = unexpected_errors(console.read_log(), {(401, "/admin/v1/session")})
    assert not problems, problems


def photograph(browser, element, path: Path) -> None:
    """The whole of `element`, wherever it is on the page (the viewport may show part of it)."""
    box = browser.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height];", element)
    shot = browser.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": box[0], "y": box[1], "width": box[2], "height": box[3], "scale": 1}})
    path.write_bytes(base64.b64decode(shot["data"]))


def test_postgresql_counts_the_same(tmp_path, testkit_dir, signing_key, postgres_dsn):
    server, _, token = start(tmp_path, testkit_dir, signing_key, postgres_dsn)
    try:
        truth = campaign(server, testkit_dir, LIFT, 5, 300, 10)
        found = report(server.admin(), token, LIFT, "lift-test")
        assert found.status == 200, found.body
        assert_counts_are_the_truth(found.json(), truth)
        assert_statistics_are_sound(found.json())
        winback = campaign(server, testkit_dir, WINBACK, 8, 120, 5, "--win-back")
        assert_counts_are_the_truth(report(server.admin(), token, WINBACK, "wb").json(), winback, signed=False)
    finally:
        assert server.stop() == 0
