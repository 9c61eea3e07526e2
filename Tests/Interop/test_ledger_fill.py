"""Benchmarks/ledger_fill.py (issue 24, item 5) fills a ledger the real binary takes as one it wrote itself: on a
SQLite ledger the service made, 2,000 customers' signatures, redemptions and totals, then judged by the binary alone.
`ledger stats` counts what the fill says it wrote (issued, redeemed, the places still held); `ledger customer` finds a
customer's signatures; and a served limited offer whose total is a few places above what the fill holds admits
exactly those few, so a place the fill miscounted (or a redemption missing from the totals) shows. The file is also
read with Python's sqlite3: each redemption names its customer's redeemed signature."""

from __future__ import annotations

import importlib
import json
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from support import BUNDLE_ID, ISSUER_ID, PRODUCT_MONTHLY, REPO_ROOT, Server, assert_refused_for, run_cli

sys.path.insert(0, str(REPO_ROOT / "Benchmarks"))
ledger_fill = importlib.import_module("ledger_fill")

CUSTOMERS = 2000
LIMITED = "bench_limited"
LEFT = 3  # places of the limited offer's total beyond what the fill holds
STATS_LINE = re.compile(r"^  (\S+) (\S+): issued (\d+), redeemed (\d+), reserved (\d+)", re.MULTILINE)


def write_config(directory: Path, signing_key, total: int | None = None) -> Path:
    """The fill's offers (its defaults, the benchmark's), open to any customer; the limited one with `total`."""
    offers = [{"id": offer, "type": "promotional", "productIds": [PRODUCT_MONTHLY], "requiresVerifiedCustomer": False}
              for offer in ledger_fill.OFFERS]
    if total is not None:
        next(offer for offer in offers if offer["id"] == LIMITED)["limits"] = {"total": total}
    config = {
        "listen": {"host": "127.0.0.1", "port": 0},
        "storage": f"sqlite:{directory / 'ledger.sqlite'}",
        "apps": [{"bundleId": BUNDLE_ID, "issuerId": ISSUER_ID,
                  "keys": [{"keyId": signing_key.key_id, "privateKeyFile": str(signing_key.path)}],
                  "offers": offers}],
    }
    path = directory / ("limited.json" if total is not None else "ledger.json")
    path.write_text(json.dumps(config, indent=2))
    return path


def make_ledger(directory: Path, signing_key) -> Path:
    """A SQLite ledger the service made (its migrations, one start and a clean stop); its configuration."""
    directory.mkdir(exist_ok=True)
    config = write_config(directory, signing_key)
    server = Server.start(config, directory)
    assert server.stop(signal.SIGTERM) == 0, server.stderr_path.read_text(errors="replace")
    return config


@pytest.fixture(scope="module")
def filled(tmp_path_factory, signing_key):
    directory = tmp_path_factory.mktemp("ledger-fill")
    config = make_ledger(directory, signing_key)
    fill = ledger_fill.Fill.generate(CUSTOMERS, bundle_id=BUNDLE_ID, product_id=PRODUCT_MONTHLY,
                                     key_id=signing_key.key_id)
    rows = ledger_fill.fill_sqlite(directory / "ledger.sqlite", fill)
    return directory, config, fill, rows


def stats(config: Path) -> dict[str, tuple[int, int, int]]:
    result = run_cli("ledger", "stats", "--config", str(config))
    assert result.returncode == 0, result.stderr
    return {offer: (int(issued), int(redeemed), int(reserved))
            for bundle, offer, issued, redeemed, reserved in STATS_LINE.findall(result.stdout) if bundle == BUNDLE_ID}


def test_ledger_stats_counts_what_the_fill_wrote(filled):
    _, config, fill, rows = filled
    totals, places = fill.totals(), fill.places()
    redeemed = sum(redemptions for _, redemptions in totals.values())
    assert rows == {"issued_signatures": fill.signatures, "redemptions": redeemed, "subscription_runs": redeemed,
                    "offer_totals": len(ledger_fill.OFFERS)}

    assert stats(config) == {offer: (issued, redemptions, places[offer])
                             for offer, (issued, redemptions) in totals.items()}
    # The shares the fill promises, within what 2,000 customers leave to chance: 1.5 signatures a customer, about
    # 10% redeemed, about 1/90 still holding a place.
    assert 1.4 < fill.signatures / CUSTOMERS < 1.6
    assert 0.08 < redeemed / fill.signatures < 0.12
    assert 1 / 180 < sum(places.values()) / fill.signatures < 1 / 45


def test_each_redemption_names_its_customers_redeemed_signature(filled):
    directory, config, _, _ = filled
    with closing(sqlite3.connect(f"file:{directory / 'ledger.sqlite'}?mode=ro", uri=True)) as connection:
        unmatched = connection.execute(
            "SELECT count(*) FROM redemptions r LEFT JOIN issued_signatures s ON s.nonce = r.nonce "
            "AND s.customer_key = r.customer_key AND s.offer_id = r.offer_id AND s.redeemed_at_ms = r.redeemed_at_ms "
            "AND s.issued_at_ms < r.redeemed_at_ms WHERE s.id IS NULL").fetchone()[0]
        redeemed = connection.execute(
            "SELECT count(*) FROM issued_signatures WHERE redeemed_at_ms IS NOT NULL").fetchone()[0]
        runs = connection.execute(
            "SELECT count(*) FROM subscription_runs u JOIN redemptions r ON r.customer_key = u.original_transaction_id "
            "AND r.offer_id = u.offer_id AND r.redeemed_at_ms = u.purchase_ms").fetchone()[0]
        customer, nonces = connection.execute(
            "SELECT customer_key, group_concat(nonce, ' ') FROM issued_signatures WHERE customer_key = "
            "(SELECT customer_key FROM redemptions ORDER BY id LIMIT 1) GROUP BY customer_key").fetchone()
        total_redemptions = connection.execute("SELECT count(*) FROM redemptions").fetchone()[0]
    assert unmatched == 0 and redeemed == runs == total_redemptions > 0

    history = run_cli("ledger", "customer", customer, "--config", str(config))
    assert history.returncode == 0, history.stderr
    assert sorted(re.findall(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", history.stdout)) \
        == sorted(nonces.split())


def test_a_limited_offer_counts_the_filled_places_and_redemptions(filled, signing_key):
    directory, _, fill, _ = filled
    _, redemptions = fill.totals()[LIMITED]
    held = fill.places()[LIMITED] + redemptions
    assert fill.places()[LIMITED] > 0 and redemptions > 0
    # A copy of the filled ledger, so the other tests read it as filled.
    copy = directory / "limited"
    copy.mkdir()
    shutil.copyfile(directory / "ledger.sqlite", copy / "ledger.sqlite")
    config = write_config(copy, signing_key, total=held + LEFT)
    server = Server.start(config, copy)
    try:
        answers = [server.promo(offerId=LIMITED) for _ in range(LEFT + 1)]
    finally:
        assert server.stop(signal.SIGTERM) == 0, server.stderr_path.read_text(errors="replace")
    assert [answer.status for answer in answers] == [200] * LEFT + [403], [answer.body for answer in answers]
    assert_refused_for(answers[-1], "total_limit_reached")
    assert all(answer.json()["nonce"] for answer in answers[:LEFT])
    issued, _, reserved = stats(config)[LIMITED]
    assert (issued, reserved) == (fill.totals()[LIMITED][0] + LEFT, fill.places()[LIMITED] + LEFT)


def test_the_same_seed_and_moment_give_the_same_rows():
    def rows(seed: int) -> list[list[tuple]]:
        fill = ledger_fill.Fill.generate(300, now_ms=1_800_000_000_000, seed=seed)
        return [list(table.rows) for table in fill.tables()]

    first = rows(7)
    assert first == rows(7)
    assert first != rows(8)
    nonces = [row[3] for row in first[0]]
    assert len(set(nonces)) == len(nonces) and nonces == sorted(nonces)  # time-ordered, as the service's


def test_the_command_line_fills_a_new_ledger_and_refuses_a_filled_one(tmp_path, signing_key):
    make_ledger(tmp_path, signing_key)
    command = [sys.executable, str(REPO_ROOT / "Benchmarks" / "ledger_fill.py"), "--sqlite",
               str(tmp_path / "ledger.sqlite"), "--customers", "100", "--bundle-id", BUNDLE_ID]
    first = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    assert re.search(r"with 100 customers in [\d.]+ s .*issued_signatures \d+", first.stdout), first.stdout
    again = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and "already holds rows" in again.stderr, again.stderr
    missing = subprocess.run([*command[:3], str(tmp_path / "none.sqlite"), *command[4:]], capture_output=True,
                             text=True, timeout=60)
    assert missing.returncode == 1 and "start `offer-signer serve` on it once first" in missing.stderr, missing.stderr


def test_the_benchmark_judges_a_million_customers_against_the_same_runs_baseline():
    sys.path.insert(0, str(REPO_ROOT / "Benchmarks"))
    run = importlib.import_module("run")

    def verdicts(cpu: float, rate: float) -> dict[str, bool]:
        results = {key: {"label": key, "requestsPerSecond": 1000.0 * (rate if key.endswith("_1m") else 1),
                         "cpuPerRequestUs": 200.0 * (cpu if key.endswith("_1m") else 1)}
                   for key in ("sqlite_limited", "sqlite_limited_1m")}
        return {row["target"]: row["met"] for row in run.targets(results, {}, {})}

    assert verdicts(cpu=1.15, rate=0.85) == {
        "CPU per request at 1M customers / at 1k, sqlite_limited": True,
        "req/s at 1M customers / at 1k, sqlite_limited": True,
    }
    assert set(verdicts(cpu=1.16, rate=0.84).values()) == {False}
