"""Issue 8's "Done when": caps, budgets, reservations, redemptions, idempotency keys, Sandbox namespaces and the
abuse guard hold under concurrency, on SQLite and on PostgreSQL, through the real binary.

Every test runs on two backends: `sqlite`, two servers sharing one SQLite ledger file (SQLite lets several
processes write one file, each write transaction taking the file's lock), and `postgresql`, three replicas sharing
one database of the test's own. Clients (threads) are spread over the servers and released together by a barrier.
Each count is checked twice: in the HTTP answers, and in the database read without the service's code (Python's
`sqlite3`, or `psql`). Every 200 carries a signature that verifies, and its nonce is in the ledger.

Customers are distinct `originalTransactionId`s in test-signed transactions (the testkit CA, trusted for Production
and Sandbox). A customer redeems an offer by coming back with a transaction bought with it (`offerType` 2 and its
`offerIdentifier`), signed after their signature was issued. Places that expire (`signatureTTLSeconds`, 60 at the
least) are not waited for: the test moves the signatures' issue time back in the ledger, as if the time had passed.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

from support import (
    BUNDLE_ID,
    ISSUER_ID,
    OFFER_OPEN,
    PRODUCT_MONTHLY,
    PROMO_PATH,
    Response,
    Server,
    apple_legacy_payload,
    ask_together,
    assert_refused_for,
    decode_standard_b64,
    der_signature_verifies,
    psql,
    run_cli,
    sign_with_testkit,
    signed_nonce,
    start_servers,
    stop_servers,
    transaction_payload,
)

CLIENTS = 50
SERVERS = {"sqlite": 2, "postgresql": 3}

REFUSING_APP = "com.example.interop.refusing"  # sandbox: refuse
GUARDED_APP = "com.example.interop.guarded"  # signaturesPerCustomerPerDay: 3
PER_DAY = 3

SHORT_TTL = 60  # seconds: signatureTTLSeconds' least value
BUDGET = "e2e_budget"  # the first 20 places, whoever asks; places expire after SHORT_TTL
BUDGET_TOTAL = 20
LAST_UNIT = "e2e_last_unit"
LAST_UNIT_TOTAL = 5
ONCE = "e2e_once"  # one place per customer; places expire after SHORT_TTL
KEYED = "e2e_keyed"  # a budget of one
NAMESPACED = "e2e_namespaced"  # one place per customer, three in all: in each namespace
NAMESPACED_TOTAL = 3
GUARDED_OFFERS = ("e2e_guarded_a", "e2e_guarded_b")  # open, verified customers only


def write_config(path: Path, signing_key, storage: str, testkit_dir: Path) -> Path:
    keys = [{"keyId": signing_key.key_id, "privateKeyFile": str(signing_key.path)}]

    def offer(offer_id: str, **fields) -> dict:
        return {"id": offer_id, "type": "promotional", "productIds": [PRODUCT_MONTHLY], **fields}

    config = {
        "listen": {"host": "127.0.0.1", "port": 0},
        "storage": storage,
        "trust": {"rootCertificates": [str(testkit_dir / "ca" / "root.cer")],
                  "environments": ["Production", "Sandbox"]},
        "apps": [
            {"bundleId": BUNDLE_ID, "issuerId": ISSUER_ID, "keys": keys, "offers": [
                offer(OFFER_OPEN, requiresVerifiedCustomer=False),
                offer(BUDGET, limits={"total": BUDGET_TOTAL, "signatureTTLSeconds": SHORT_TTL}),
                offer(LAST_UNIT, limits={"total": LAST_UNIT_TOTAL}),
                offer(ONCE, limits={"perCustomer": 1, "signatureTTLSeconds": SHORT_TTL}),
                offer(KEYED, limits={"total": 1}),
                offer(NAMESPACED, limits={"perCustomer": 1, "total": NAMESPACED_TOTAL}),
            ]},
            {"bundleId": REFUSING_APP, "issuerId": ISSUER_ID, "keys": keys, "sandbox": "refuse",
             "offers": [offer(OFFER_OPEN)]},
            {"bundleId": GUARDED_APP, "issuerId": ISSUER_ID, "keys": keys, "signaturesPerCustomerPerDay": PER_DAY,
             "offers": [offer(offer_id) for offer_id in GUARDED_OFFERS]},
        ],
    }
    path.write_text(json.dumps(config, indent=2))
    return path


@dataclass
class Deployment:
    """The servers of one backend and their ledger, read (and, to move time, written) without the service."""

    backend: str
    servers: list[Server]
    ledger: str  # the SQLite file, or the database's DSN

    def rows(self, sql: str) -> list[list[str]]:
        """`sql`'s rows, every value as text (NULL as ''), as `psql` prints them."""
        if self.backend == "postgresql":
            return psql(self.ledger, sql)
        with closing(sqlite3.connect(self.ledger, timeout=30)) as database:
            return [["" if value is None else str(value) for value in row] for row in database.execute(sql)]

    def execute(self, sql: str) -> None:
        if self.backend == "postgresql":
            psql(self.ledger, sql)
            return
        with closing(sqlite3.connect(self.ledger, timeout=30)) as database, database:
            database.execute(sql)

    def column(self, sql: str) -> list[str]:
        return [row[0] for row in self.rows(sql)]

    def count(self, sql: str) -> int:
        return int(self.rows(sql)[0][0])

    # What the ledger holds for an offer (`app` is the stored app key: `sandbox:` and the bundle ID for Sandbox).

    def nonces(self, offer: str, app: str = BUNDLE_ID) -> list[str]:
        return sorted(self.column(
            f"SELECT nonce FROM issued_signatures WHERE bundle_id = '{app}' AND offer_id = '{offer}'"))

    def totals(self, offer: str, app: str = BUNDLE_ID) -> tuple[int, int]:
        """`offer_totals`' issued and redeemed."""
        rows = self.rows(
            f"SELECT issued, redeemed FROM offer_totals WHERE bundle_id = '{app}' AND offer_id = '{offer}'")
        return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)

    def per_customer(self, offer: str, app: str = BUNDLE_ID) -> dict[str, int]:
        return {row[0]: int(row[1]) for row in self.rows(
            f"SELECT customer_key, count(*) FROM issued_signatures WHERE bundle_id = '{app}' AND offer_id = '{offer}' "
            "GROUP BY customer_key")}

    def redemptions(self, offer: str, app: str = BUNDLE_ID) -> dict[str, str]:
        """Each redeeming customer's key and the nonce of the signature their redemption was matched to."""
        rows = self.rows(
            f"SELECT customer_key, nonce FROM redemptions WHERE bundle_id = '{app}' AND offer_id = '{offer}'")
        assert len({row[0] for row in rows}) == len(rows), f"a customer redeemed twice: {rows}"
        return {row[0]: row[1] for row in rows}

    def assert_recorded(self, nonces: list[str]) -> None:
        """Every nonce handed out in a 200 is in the ledger, once."""
        recorded = Counter(self.column("SELECT nonce FROM issued_signatures"))
        missing = [nonce for nonce in nonces if recorded[nonce] != 1]
        assert not missing, f"{len(missing)} of {len(nonces)} signatures handed out are not in the ledger"

    def age_signatures(self, offer: str, seconds: int) -> None:
        """Moves the offer's signatures `seconds` into the past, as if that time had gone by."""
        self.execute(f"UPDATE issued_signatures SET issued_at_ms = issued_at_ms - {seconds * 1000} "
                     f"WHERE offer_id = '{offer}'")


@pytest.fixture(params=list(SERVERS))
def deployment(request, tmp_path, signing_key, testkit_dir):
    """Two servers on one SQLite file, or three replicas on one PostgreSQL database, started at once."""
    backend = request.param
    if backend == "sqlite":
        storage, ledger = "sqlite:ledger.sqlite", str(tmp_path / "ledger.sqlite")
    else:
        storage = ledger = request.getfixturevalue("postgres_dsn")
    config = write_config(tmp_path / "limits.json", signing_key, storage, testkit_dir)
    check = run_cli("config", "check", "--config", str(config))
    assert check.returncode == 0, check.stdout + check.stderr
    servers = start_servers(config, tmp_path, SERVERS[backend])
    try:
        yield Deployment(backend, servers, ledger)
    finally:
        stop_servers(servers)
    if backend == "sqlite":
        with closing(sqlite3.connect(ledger)) as database:
            assert database.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


class Customers:
    """Test-signed transactions of customer number `n` (originalTransactionId 5000000000000000 + n): lapsed ones,
    made once per module and shared by both backends (each test has a ledger of its own), and purchases made with
    an offer, signed when asked for (so they are bought after the signatures they redeem)."""

    def __init__(self, testkit_dir: Path):
        self.testkit_dir = testkit_dir
        self.signed: dict[tuple[int, str, str], str] = {}

    @staticmethod
    def key(number: int) -> str:
        return str(5_000_000_000_000_000 + number)

    def sign(self, payload: dict) -> str:
        return sign_with_testkit(self.testkit_dir, self.testkit_dir / "ca", "transaction", payload)

    def lapsed(self, numbers, environment: str = "Production", app: str = BUNDLE_ID) -> list[str]:
        """Each customer's subscription, expired 70 days ago."""
        wanted = [(number, environment, app) for number in numbers]
        missing = [key for key in wanted if key not in self.signed]
        now = int(time.time() * 1000)
        with ThreadPoolExecutor(4) as pool:
            tokens = pool.map(lambda key: self.sign(transaction_payload(
                now, 70, bundle_id=key[2], environment=key[1], original_transaction_id=self.key(key[0]))), missing)
            self.signed.update(zip(missing, tokens))
        return [self.signed[key] for key in wanted]

    def bought(self, numbers, offer: str, environment: str = "Production") -> list[str]:
        """Each customer's purchase, just now, made with promotional offer `offer`."""
        now = int(time.time() * 1000)
        with ThreadPoolExecutor(4) as pool:
            return list(pool.map(lambda number: self.sign(transaction_payload(
                now, -30, environment=environment, original_transaction_id=self.key(number),
                transactionId=str(6_000_000_000_000_000 + number), offerType=2, offerIdentifier=offer)), numbers))


@pytest.fixture(scope="module")
def customers(testkit_dir) -> Customers:
    return Customers(testkit_dir)


def promo(offer: str, signed_transaction: str | None = None, app: str = BUNDLE_ID, **fields) -> dict:
    body = {"bundleId": app, "productId": PRODUCT_MONTHLY, "offerId": offer, **fields}
    if signed_transaction is not None:
        body["signedTransaction"] = signed_transaction
    return body


def statuses(answers: list[Response]) -> Counter:
    return Counter(answer.status for answer in answers)


def granted_nonces(answers: list[Response], signing_key, offer: str) -> list[str]:
    return sorted(signed_nonce(answer, signing_key, offer) for answer in answers if answer.status == 200)


def assert_refused(answers: list[Response], code: str) -> None:
    for answer in answers:
        if answer.status != 200:
            assert_refused_for(answer, code)


def test_a_budget_is_never_oversold_and_redemptions_keep_their_places(deployment, customers, signing_key):
    servers, key = deployment.servers, Customers.key
    answers = ask_together(servers, [promo(BUDGET, data) for data in customers.lapsed(range(CLIENTS))])

    assert statuses(answers) == {200: BUDGET_TOTAL, 403: CLIENTS - BUDGET_TOTAL}
    assert_refused(answers, "total_limit_reached")
    granted = {number: signed_nonce(answer, signing_key, BUDGET)
               for number, answer in enumerate(answers) if answer.status == 200}
    assert deployment.nonces(BUDGET) == sorted(granted.values())
    assert deployment.totals(BUDGET) == (BUDGET_TOTAL, 0)

    # Five of them come back having bought with the offer, each purchase shown three times across the servers: five
    # redemptions, each matched to its customer's signature, which stops being a reservation. The budget stays full.
    redeemers = sorted(granted)[:5]
    purchases = customers.bought(redeemers, BUDGET)
    answers = ask_together(servers, [promo(BUDGET, purchases[index % 5]) for index in range(15)])

    assert statuses(answers) == {403: 15}
    assert_refused(answers, "total_limit_reached")
    assert deployment.redemptions(BUDGET) == {key(number): granted[number] for number in redeemers}
    assert sorted(deployment.column(f"SELECT nonce FROM issued_signatures WHERE offer_id = '{BUDGET}' "
                                    "AND redeemed_at_ms IS NOT NULL")) == sorted(granted[n] for n in redeemers)
    assert deployment.totals(BUDGET) == (BUDGET_TOTAL, 5)
    answers = ask_together(servers, [promo(BUDGET, data) for data in customers.lapsed(range(CLIENTS, CLIENTS + 10))])
    assert statuses(answers) == {403: 10}
    assert_refused(answers, "total_limit_reached")

    # The unredeemed signatures' time runs out: their 15 places are free again, the 5 redemptions keep theirs.
    deployment.age_signatures(BUDGET, 2 * SHORT_TTL)
    latecomers = customers.lapsed(range(CLIENTS + 10, CLIENTS + 40))
    answers = ask_together(servers, [promo(BUDGET, data) for data in latecomers])

    assert statuses(answers) == {200: BUDGET_TOTAL - 5, 403: 30 - (BUDGET_TOTAL - 5)}
    assert_refused(answers, "total_limit_reached")
    late = granted_nonces(answers, signing_key, BUDGET)
    assert deployment.nonces(BUDGET) == sorted(list(granted.values()) + late)
    assert deployment.totals(BUDGET) == (BUDGET_TOTAL + len(late), 5)
    deployment.assert_recorded(list(granted.values()) + late)


def test_fifty_customers_for_the_last_unit_get_one_signature(deployment, customers, signing_key):
    servers = deployment.servers
    early = []
    for number, data in enumerate(customers.lapsed(range(LAST_UNIT_TOTAL - 1))):
        early.append(signed_nonce(servers[number % len(servers)].post(PROMO_PATH, promo(LAST_UNIT, data)),
                                  signing_key, LAST_UNIT))

    answers = ask_together(servers, [promo(LAST_UNIT, data) for data in customers.lapsed(range(100, 100 + CLIENTS))])

    assert statuses(answers) == {200: 1, 403: CLIENTS - 1}
    assert_refused(answers, "total_limit_reached")
    last = granted_nonces(answers, signing_key, LAST_UNIT)
    assert deployment.nonces(LAST_UNIT) == sorted(early + last)
    assert deployment.totals(LAST_UNIT) == (LAST_UNIT_TOTAL, 0)
    assert sorted(deployment.per_customer(LAST_UNIT).values()) == [1] * LAST_UNIT_TOTAL
    deployment.assert_recorded(early + last)


def test_once_per_customer_holds_and_a_redemption_keeps_the_place_after_the_signature_expires(
        deployment, customers, signing_key):
    servers, key, people = deployment.servers, Customers.key, 5
    lapsed = customers.lapsed(range(people))
    # Request i is customer i % 5's: each customer asks six times at once, on every server.
    answers = ask_together(servers, [promo(ONCE, lapsed[index % people]) for index in range(30)])

    assert Counter(index % people for index, answer in enumerate(answers) if answer.status == 200) == \
        {number: 1 for number in range(people)}
    assert_refused(answers, "per_customer_limit_reached")
    first = {index % people: signed_nonce(answer, signing_key, ONCE)
             for index, answer in enumerate(answers) if answer.status == 200}
    assert deployment.per_customer(ONCE) == {key(number): 1 for number in range(people)}

    # Customers 0 and 1 bought with the offer, and show it (three times each, at once, on every server).
    purchases = customers.bought([0, 1], ONCE)
    answers = ask_together(servers, [promo(ONCE, purchases[index // 3]) for index in range(6)])
    assert statuses(answers) == {403: 6}
    assert_refused(answers, "per_customer_limit_reached")
    assert deployment.redemptions(ONCE) == {key(0): first[0], key(1): first[1]}

    # Every signature is now older than the offer's signatureTTL: those not redeemed no longer hold a place, a
    # redemption still does. Each customer asks six times at once again, showing their latest transaction.
    deployment.age_signatures(ONCE, 2 * SHORT_TTL)
    latest = purchases + lapsed[2:]
    answers = ask_together(servers, [promo(ONCE, latest[index % people]) for index in range(30)])

    assert Counter(index % people for index, answer in enumerate(answers) if answer.status == 200) == \
        {2: 1, 3: 1, 4: 1}
    assert_refused(answers, "per_customer_limit_reached")
    again = granted_nonces(answers, signing_key, ONCE)
    assert deployment.per_customer(ONCE) == {key(0): 1, key(1): 1, key(2): 2, key(3): 2, key(4): 2}
    assert deployment.redemptions(ONCE) == {key(0): first[0], key(1): first[1]}
    assert deployment.totals(ONCE) == (people + 3, 2)
    deployment.assert_recorded(list(first.values()) + again)


def test_an_idempotency_key_gets_one_signature_and_one_place(deployment, customers, signing_key):
    servers = deployment.servers
    key = {"Idempotency-Key": f"e2e-{uuid.uuid4()}"}
    first, second = customers.lapsed(range(2))
    # Twenty copies of one request under one key, at once on every server, for a budget of one.
    answers = ask_together(servers, [promo(KEYED, first)] * 20, headers=key)

    assert statuses(answers) == {200: 20}
    assert len({answer.body for answer in answers}) == 1, "the same key got different answers"
    nonce = signed_nonce(answers[0], signing_key, KEYED)
    assert deployment.rows(f"SELECT nonce, idempotency_key FROM issued_signatures WHERE offer_id = '{KEYED}'") == \
        [[nonce, key["Idempotency-Key"]]]
    assert deployment.totals(KEYED) == (1, 0)
    # The one place is taken: another customer is refused.
    assert_refused_for(servers[-1].post(PROMO_PATH, promo(KEYED, second)), "total_limit_reached")
    # The same key with another request, on every server: 422, and nothing recorded.
    for server in servers:
        reused = server.post(PROMO_PATH, promo(KEYED, second), headers=key)
        assert reused.status == 422, reused.body
        assert reused.json()["error"]["code"] == "idempotency_key_reused"
        assert reused.json()["error"]["field"] == "Idempotency-Key"
    assert deployment.nonces(KEYED) == [nonce]
    deployment.assert_recorded([nonce])


def test_sandbox_and_production_are_counted_apart(deployment, customers, signing_key):
    servers, key = deployment.servers, Customers.key
    sandbox_app = f"sandbox:{BUNDLE_ID}"
    production, sandbox = customers.lapsed(range(11)), customers.lapsed(range(11), environment="Sandbox")
    # Request i is in Production when i // 2 is even, else in Sandbox: each environment reaches every server.
    environment = [(index // 2) % 2 for index in range(20)]
    # One customer key in both environments, six requests each, at once: one place in each namespace.
    answers = ask_together(servers, [promo(NAMESPACED, (production, sandbox)[environment[index]][0])
                                     for index in range(12)])

    assert Counter(environment[index] for index, answer in enumerate(answers) if answer.status == 200) == \
        {0: 1, 1: 1}
    assert_refused(answers, "per_customer_limit_reached")
    nonces = granted_nonces(answers, signing_key, NAMESPACED)
    assert deployment.per_customer(NAMESPACED) == {key(0): 1}
    assert deployment.per_customer(NAMESPACED, sandbox_app) == {key(0): 1}

    # Ten more customers in each environment (the same keys in both) at once: each namespace's budget has two left.
    bodies = [promo(NAMESPACED, (production, sandbox)[environment[index]][1 + (index // 4) * 2 + index % 2])
              for index in range(20)]
    assert sorted(body["signedTransaction"] for body in bodies) == sorted(production[1:] + sandbox[1:])
    answers = ask_together(servers, bodies)

    assert Counter(environment[index] for index, answer in enumerate(answers) if answer.status == 200) == \
        {0: NAMESPACED_TOTAL - 1, 1: NAMESPACED_TOTAL - 1}
    assert_refused(answers, "total_limit_reached")
    nonces += granted_nonces(answers, signing_key, NAMESPACED)
    assert deployment.totals(NAMESPACED) == (NAMESPACED_TOTAL, 0)
    assert deployment.totals(NAMESPACED, sandbox_app) == (NAMESPACED_TOTAL, 0)
    assert sorted(deployment.nonces(NAMESPACED) + deployment.nonces(NAMESPACED, sandbox_app)) == sorted(nonces)

    # A Sandbox customer gets JWS only; a Production one may have a legacy signature.
    refused = servers[0].post(PROMO_PATH, promo(OFFER_OPEN, sandbox[0], format="legacy"))
    assert refused.status == 400, refused.body
    assert (refused.json()["error"]["code"], refused.json()["error"]["field"]) == ("invalid_request", "format")
    legacy = servers[-1].post(PROMO_PATH, promo(OFFER_OPEN, production[0], format="legacy"))
    assert legacy.status == 200, legacy.body
    body = legacy.json()
    assert der_signature_verifies(
        decode_standard_b64(body["signature"]),
        apple_legacy_payload(signing_key.pem, signing_key.key_id, BUNDLE_ID, PRODUCT_MONTHLY, OFFER_OPEN, None,
                             body["nonce"], body["timestamp"]),
        signing_key.public_key)
    assert deployment.nonces(OFFER_OPEN) == [body["nonce"]]
    assert deployment.nonces(OFFER_OPEN, sandbox_app) == []

    # An app with `sandbox: refuse` answers Sandbox data with 400 on every server, and records nothing for it.
    refusing_sandbox = customers.lapsed([0], environment="Sandbox", app=REFUSING_APP)[0]
    for server in servers:
        refused = server.post(PROMO_PATH, promo(OFFER_OPEN, refusing_sandbox, app=REFUSING_APP))
        assert refused.status == 400, refused.body
        error = refused.json()["error"]
        assert (error["code"], error["reason"]) == ("untrusted_signed_data", "wrong_environment"), error
    accepted = servers[0].post(PROMO_PATH, promo(OFFER_OPEN, customers.lapsed([0], app=REFUSING_APP)[0],
                                                 app=REFUSING_APP))
    nonces.append(signed_nonce(accepted, signing_key, OFFER_OPEN))
    assert deployment.nonces(OFFER_OPEN, REFUSING_APP) == [nonces[-1]]
    assert deployment.nonces(OFFER_OPEN, f"sandbox:{REFUSING_APP}") == []
    deployment.assert_recorded(nonces + [body["nonce"]])


def test_the_abuse_guard_stops_a_customer_at_the_daily_allowance(deployment, customers, signing_key):
    servers = deployment.servers
    first, second = customers.lapsed(range(2), app=GUARDED_APP)
    # Twelve requests of one customer at once, for two open offers of the app, on every server.
    bodies = [promo(GUARDED_OFFERS[(index // 2) % 2], first, app=GUARDED_APP) for index in range(12)]
    answers = ask_together(servers, bodies)

    assert statuses(answers) == {200: PER_DAY, 429: 12 - PER_DAY}
    nonces = sorted(signed_nonce(answer, signing_key, body["offerId"])
                    for answer, body in zip(answers, bodies) if answer.status == 200)
    for answer in answers:
        if answer.status == 429:
            assert answer.json()["error"]["code"] == "customer_rate_limited", answer.body
            retry_after = answer.header("Retry-After")
            assert retry_after is not None and retry_after.isdigit(), retry_after
            # The oldest of the day's signatures was issued moments ago: it leaves the window in about a day.
            assert 86_400 - 60 <= int(retry_after) <= 86_400, retry_after
    recorded = deployment.rows(f"SELECT customer_key, nonce FROM issued_signatures WHERE bundle_id = '{GUARDED_APP}'")
    assert sorted(recorded) == sorted([Customers.key(0), nonce] for nonce in nonces)
    # The allowance is the customer's: another one is not held back.
    other = servers[-1].post(PROMO_PATH, promo(GUARDED_OFFERS[0], second, app=GUARDED_APP))
    nonces.append(signed_nonce(other, signing_key, GUARDED_OFFERS[0]))
    deployment.assert_recorded(nonces)
