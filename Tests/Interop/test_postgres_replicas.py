"""Issue 8, item 8: three replicas of the real binary on loopback share one PostgreSQL database, and its limits
hold across them.

Fifty clients (threads), spread over the three replicas and released together by a barrier, ask at once for the
last units of a `total` budget, for the last unit of a budget one customer each, and for an offer limited to one
signature per customer; the answers must be exactly as many 200s as the limit allows and 403 `not_eligible`
naming the limit for the rest. The database is then read with `psql` (not the service's own code): its rows are
exactly the signatures handed out. Last, one replica is killed with SIGKILL under load: the other two keep
answering 200, and every nonce any client received, from the killed one too, is in the ledger. And (issue 24) a
replica killed while its budget lease holds unused places: the others never sign past the budget, those places are
refused until the lease expires, then they are signed, and the ledger ends at exactly the budget.

Each test has a database of its own (the `postgres_dsn` fixture) and its own three replicas."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from support import (
    BUNDLE_ID,
    ISSUER_ID,
    OFFER_OPEN,
    PRODUCT_MONTHLY,
    PROMO_PATH,
    Hammer,
    ask_together,
    assert_refused_for,
    psql,
    run_cli,
    sign_with_testkit,
    signed_nonce,
    start_servers,
    stop_servers,
    transaction_payload,
)

REPLICAS = 3
CLIENTS = 50

BUDGET = "replicas_budget"  # the first 20 signatures, whoever asks
BUDGET_TOTAL = 20
LAST_UNIT = "replicas_last_unit"  # the first 5 customers
LAST_UNIT_TOTAL = 5
ONCE = "replicas_once"  # one signature per customer
LARGE_BUDGET = "replicas_large_budget"  # counted and recorded on every signature, never reached
LEASED = "replicas_leased"  # a budget spent through leases while a replica holding one is killed
LEASED_TOTAL = 300


def write_config(path: Path, signing_key, dsn: str, testkit_dir: Path) -> Path:
    config = {
        "listen": {"host": "127.0.0.1", "port": 0},
        "storage": dsn,
        "trust": {"rootCertificates": [str(testkit_dir / "ca" / "root.cer")], "environments": ["Sandbox"]},
        "apps": [{
            "bundleId": BUNDLE_ID,
            "issuerId": ISSUER_ID,
            "keys": [{"keyId": signing_key.key_id, "privateKeyFile": str(signing_key.path)}],
            "offers": [
                {"id": OFFER_OPEN, "type": "promotional", "productIds": [PRODUCT_MONTHLY],
                 "requiresVerifiedCustomer": False},
                {"id": BUDGET, "type": "promotional", "productIds": [PRODUCT_MONTHLY],
                 "requiresVerifiedCustomer": False, "limits": {"total": BUDGET_TOTAL}},
                {"id": LAST_UNIT, "type": "promotional", "productIds": [PRODUCT_MONTHLY],
                 "requiresVerifiedCustomer": True, "limits": {"total": LAST_UNIT_TOTAL}},
                {"id": ONCE, "type": "promotional", "productIds": [PRODUCT_MONTHLY],
                 "requiresVerifiedCustomer": True, "limits": {"perCustomer": 1}},
                {"id": LARGE_BUDGET, "type": "promotional", "productIds": [PRODUCT_MONTHLY],
                 "requiresVerifiedCustomer": False, "limits": {"total": 1_000_000}},
                {"id": LEASED, "type": "promotional", "productIds": [PRODUCT_MONTHLY],
                 "requiresVerifiedCustomer": False, "limits": {"total": LEASED_TOTAL}},
            ],
        }],
    }
    path.write_text(json.dumps(config, indent=2))
    return path


@pytest.fixture
def replicas(tmp_path, signing_key, postgres_dsn, testkit_dir):
    """Three servers on one new database, started at once (their migrations race, as replicas' do)."""
    config = write_config(tmp_path / "replicas.json", signing_key, postgres_dsn, testkit_dir)
    check = run_cli("config", "check", "--config", str(config))
    assert check.returncode == 0, check.stdout + check.stderr
    servers = start_servers(config, tmp_path, REPLICAS)
    try:
        yield servers
    finally:
        stop_servers(servers)


def customers(testkit_dir: Path, count: int, first: int) -> list[str]:
    """Signed transactions of `count` distinct customers (distinct originalTransactionIds), lapsed 70 days."""
    now = int(time.time() * 1000)
    ids = [f"{3_000_000_000_000_000 + first + index}" for index in range(count)]
    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(
            lambda otid: sign_with_testkit(testkit_dir, testkit_dir / "ca", "transaction",
                                      transaction_payload(now, 70, original_transaction_id=otid)),
            ids))


def promo(offer: str, signed_transaction: str | None = None) -> dict:
    body = {"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY, "offerId": offer}
    if signed_transaction is not None:
        body["signedTransaction"] = signed_transaction
    return body


# The ledger keeps Sandbox customers' rows under `sandbox:` and the bundle ID (their own namespace); requests
# without signed data count in Production.
APP_KEYS = f"('{BUNDLE_ID}', 'sandbox:{BUNDLE_ID}')"


def recorded_nonces(dsn: str, offer: str) -> list[str]:
    return [row[0] for row in psql(
        dsn, f"SELECT nonce FROM issued_signatures WHERE bundle_id IN {APP_KEYS} AND offer_id = '{offer}'")]


def offer_total(dsn: str, offer: str) -> int:
    rows = psql(dsn, f"SELECT issued FROM offer_totals WHERE bundle_id IN {APP_KEYS} AND offer_id = '{offer}'")
    return int(rows[0][0]) if rows else 0


def test_the_last_units_of_a_budget_go_to_exactly_as_many_clients(replicas, postgres_dsn, signing_key):
    answers = ask_together(replicas, [promo(BUDGET)] * CLIENTS)

    assert Counter(answer.status for answer in answers) == {200: BUDGET_TOTAL, 403: CLIENTS - BUDGET_TOTAL}
    nonces = [signed_nonce(answer, signing_key, BUDGET) for answer in answers if answer.status == 200]
    for answer in answers:
        if answer.status != 200:
            assert_refused_for(answer, "total_limit_reached")
    recorded = recorded_nonces(postgres_dsn, BUDGET)
    assert len(recorded) == BUDGET_TOTAL
    assert sorted(recorded) == sorted(nonces)
    assert offer_total(postgres_dsn, BUDGET) == BUDGET_TOTAL


def test_fifty_customers_for_the_last_unit_get_one_signature(replicas, postgres_dsn, signing_key, testkit_dir):
    early = customers(testkit_dir, LAST_UNIT_TOTAL - 1, first=0)
    late = customers(testkit_dir, CLIENTS, first=1000)
    # The budget is spent down to its last unit, a customer at a time, on every replica.
    early_nonces = []
    for index, transaction in enumerate(early):
        answer = replicas[index % REPLICAS].post(PROMO_PATH, promo(LAST_UNIT, transaction))
        assert answer.status == 200, answer.body
        early_nonces.append(signed_nonce(answer, signing_key, LAST_UNIT))

    answers = ask_together(replicas, [promo(LAST_UNIT, transaction) for transaction in late])

    assert Counter(answer.status for answer in answers) == {200: 1, 403: CLIENTS - 1}
    last = [signed_nonce(answer, signing_key, LAST_UNIT) for answer in answers if answer.status == 200]
    for answer in answers:
        if answer.status != 200:
            assert_refused_for(answer, "total_limit_reached")
    assert sorted(recorded_nonces(postgres_dsn, LAST_UNIT)) == sorted(early_nonces + last)
    assert offer_total(postgres_dsn, LAST_UNIT) == LAST_UNIT_TOTAL
    per_customer = psql(postgres_dsn, f"SELECT count(*) FROM issued_signatures WHERE offer_id = '{LAST_UNIT}' "
                                      "GROUP BY customer_key")
    assert sorted(int(row[0]) for row in per_customer) == [1] * LAST_UNIT_TOTAL


def test_once_per_customer_holds_across_replicas(replicas, postgres_dsn, signing_key, testkit_dir):
    people = 5
    transactions = customers(testkit_dir, people, first=2000)
    # Request i is customer i % 5's, sent to replica i % 3: each customer asks 10 times, on all three replicas.
    bodies = [promo(ONCE, transactions[index % people]) for index in range(CLIENTS)]

    answers = ask_together(replicas, bodies)

    granted = Counter(index % people for index, answer in enumerate(answers) if answer.status == 200)
    assert granted == {customer: 1 for customer in range(people)}
    nonces = [signed_nonce(answer, signing_key, ONCE) for answer in answers if answer.status == 200]
    for answer in answers:
        if answer.status != 200:
            assert_refused_for(answer, "per_customer_limit_reached")
    assert sorted(recorded_nonces(postgres_dsn, ONCE)) == sorted(nonces)
    per_customer = psql(postgres_dsn, f"SELECT count(*) FROM issued_signatures WHERE offer_id = '{ONCE}' "
                                      "GROUP BY customer_key")
    assert sorted(int(row[0]) for row in per_customer) == [1] * people


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_the_others_keep_serving_when_a_replica_is_killed(replicas, postgres_dsn):
    stop = threading.Event()
    # Two clients per replica: one for an open offer (recorded), one for a limited one (counted and recorded).
    hammers = [Hammer(replicas[index % REPLICAS], OFFER_OPEN if index < REPLICAS else LARGE_BUDGET, stop)
               for index in range(2 * REPLICAS)]
    victim, survivors = replicas[0], replicas[1:]
    on_victim = [hammer for hammer in hammers if hammer.server is victim]
    on_survivors = [hammer for hammer in hammers if hammer.server is not victim]
    for hammer in hammers:
        hammer.start()
    try:
        wait_until(lambda: all(len(hammer.nonces) >= 30 for hammer in hammers), 20, "answers from every replica")
        victim.process.send_signal(signal.SIGKILL)
        assert victim.process.wait(timeout=10) == -signal.SIGKILL
        at_kill = {id(hammer): len(hammer.nonces) for hammer in on_survivors}
        wait_until(lambda: all(not hammer.is_alive() for hammer in on_victim), 10, "the killed replica's clients")
        wait_until(lambda: all(len(hammer.nonces) - at_kill[id(hammer)] >= 50 or not hammer.is_alive()
                               for hammer in on_survivors), 20, "answers after the kill")
    finally:
        stop.set()
        for hammer in hammers:
            hammer.join(timeout=20)

    failures = [(hammer.server.port, hammer.failure) for hammer in on_survivors if hammer.failure]
    assert not failures, f"the surviving replicas stopped answering 200: {failures}"
    for hammer in on_survivors:
        assert len(hammer.nonces) - at_kill[id(hammer)] >= 50
    # The killed replica's clients saw the connection end, not an error answer.
    for hammer in on_victim:
        assert hammer.failure is not None and not hammer.refused, hammer.failure
    for survivor in survivors:
        assert survivor.stop(signal.SIGTERM, timeout=10) == 0, survivor.stderr_path.read_text(errors="replace")

    received = [nonce for hammer in hammers for nonce in hammer.nonces]
    assert len(received) == len(set(received)), "a nonce was handed out twice"
    recorded = set(recorded_nonces(postgres_dsn, OFFER_OPEN)) | set(recorded_nonces(postgres_dsn, LARGE_BUDGET))
    missing = set(received) - recorded
    assert not missing, f"{len(missing)} of {len(received)} signatures handed out are not in the ledger"
    # Beyond those, only what the killed replica recorded for a request in flight (one per connection) is there.
    unanswered = recorded - set(received)
    assert len(unanswered) <= len(on_victim), f"{len(unanswered)} recorded signatures were never answered"
    assert offer_total(postgres_dsn, LARGE_BUDGET) == len(recorded_nonces(postgres_dsn, LARGE_BUDGET))


def leased_places(dsn: str, offer: str) -> int:
    """Unused places of the offer's unexpired leases, every replica's, read with psql (the leases' times are the
    replicas' clocks: Unix milliseconds)."""
    rows = psql(dsn, f"SELECT coalesce(sum(places), 0) FROM offer_leases WHERE offer_id = '{offer}' "
                     "AND expires_at_ms > (extract(epoch FROM clock_timestamp()) * 1000)::bigint")
    return int(rows[0][0])


def drain(servers, offer: str, signing_key) -> tuple[list[str], list]:
    """Asks `servers` in turn for `offer` until each has refused once; returns the nonces signed and the refusals."""
    nonces, refusals, open_servers = [], [], list(servers)
    while open_servers:
        server = open_servers[len(nonces) % len(open_servers)]
        answer = server.post(PROMO_PATH, promo(offer))
        if answer.status == 200:
            nonces.append(signed_nonce(answer, signing_key, offer))
        else:
            refusals.append(answer)
            open_servers.remove(server)
        assert len(nonces) <= LEASED_TOTAL, "signed past the budget"
    return nonces, refusals


def test_a_replica_killed_mid_lease_never_lets_the_budget_be_passed(replicas, postgres_dsn, signing_key):
    victim, survivors = replicas[0], replicas[1:]
    # Eight requests one after the other on one replica: its lease keeps twice what it was used for, so it holds
    # unused places when it is killed.
    received = [signed_nonce(victim.post(PROMO_PATH, promo(LEASED)), signing_key, LEASED) for _ in range(8)]
    held = leased_places(postgres_dsn, LEASED)
    assert held > 0
    victim.process.send_signal(signal.SIGKILL)
    assert victim.process.wait(timeout=10) == -signal.SIGKILL

    # Two clients per surviving replica at once, until each is refused: every place but the dead lease's is signed.
    stop = threading.Event()
    hammers = [Hammer(survivors[index % 2], LEASED, stop) for index in range(4)]
    for hammer in hammers:
        hammer.start()
    for hammer in hammers:
        hammer.join(timeout=60)
    assert not any(hammer.is_alive() for hammer in hammers), "a client never got its refusal"
    for hammer in hammers:
        assert hammer.refused and hammer.failure.startswith("403"), hammer.failure
        received += hammer.nonces
    recorded = recorded_nonces(postgres_dsn, LEASED)
    assert len(recorded) == LEASED_TOTAL - held
    # Refused while the dead replica's lease lasts: its places are held, not lost and not given twice.
    nonces, refusals = drain(survivors, LEASED, signing_key)
    assert nonces == []
    for refusal in refusals:
        assert_refused_for(refusal, "total_limit_reached")
    assert leased_places(postgres_dsn, LEASED) == held

    # Once the lease expires (10 s after it was taken), its places are signed, and not one more.
    wait_until(lambda: leased_places(postgres_dsn, LEASED) == 0, 30, "the killed replica's lease to expire")
    nonces, refusals = drain(survivors, LEASED, signing_key)
    assert len(nonces) == held
    for refusal in refusals:
        assert_refused_for(refusal, "total_limit_reached")
    received += nonces

    assert len(received) == len(set(received)) == LEASED_TOTAL, "a nonce was handed out twice, or places were lost"
    assert sorted(recorded_nonces(postgres_dsn, LEASED)) == sorted(received)
    assert offer_total(postgres_dsn, LEASED) == LEASED_TOTAL
