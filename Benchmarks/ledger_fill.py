#!/usr/bin/env python3
"""Fills an offer-signer ledger with customers' signatures, as a service would have recorded them over 90 days: the
ledger of a million customers that `run.py`'s `sqlite_limited_1m` and `postgresql_limited_1m` measure a limited offer
on (issue 24, item 5), and the shared way the benchmarks put many rows into a ledger (`insert_sqlite`,
`copy_postgresql`: `reports.py` fills its exposures with them too).

The ledger must be one the service made (`offer-signer serve` started once on it and stopped: its own migrations make
the tables) and hold no signature yet. Each customer (a 16-digit `originalTransactionId` as customer key) has one or
two signatures (half of them two), each for one of the offers at random, issued at a random moment of the last 90 days:
about 1/90 of them are still unexpired (the default `signatureTTL`, 24 hours) and hold places. 15% of the customers
came back having bought with their latest signature's offer (minutes to three days after it, and before now): about
10% of the signatures are redeemed (`redeemed_at_ms`), each with its redemption (a transaction of its own) and the
customer's subscription run. `offer_totals` holds what those rows add up to, as the service keeps it. No signature
expires within five minutes (either side) of the fill's moment, so for five minutes the places counted are the ones
it reports. Deterministic: the same seed, customers and moment give the same rows.

SQLite through Python's sqlite3 (one transaction, then ANALYZE and a checkpoint); PostgreSQL through psql's `\\copy`
(then VACUUM ANALYZE). Standard library only.

    python Benchmarks/ledger_fill.py --sqlite ledger.sqlite [--customers N] [--bundle-id ID] [--offers A,B,C]
    python Benchmarks/ledger_fill.py --postgres postgresql://postgres@127.0.0.1:5432/bench [--customers N] ...
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

CUSTOMERS = 1_000_000
SEED = 24
DAYS = 90
DAY_MS = 86_400_000
# The service's default `signatureTTL`: a signature holds a place of its offer this long unless it is redeemed.
SIGNATURE_TTL_MS = DAY_MS
# No signature expires within this of the fill's moment (either side), so its places hold that long.
GUARD_MS = 5 * 60_000
# Customers with two signatures; the others have one.
TWO_SIGNATURES = 0.5
# Customers who redeem their latest signature: with 1.5 signatures a customer, about 10% of the signatures.
REDEEMING = 0.15
# A redemption's purchase comes this long after its signature, at most (and never after the fill's moment).
REDEMPTION_DELAY_MS = 3 * DAY_MS
# `redemptions.offer_type`: Apple's `offerType` of a promotional offer.
PROMOTIONAL_OFFER_TYPE = 2
# The benchmark's deployment (run.py): its app, product, signing key and promotional offers.
BUNDLE_ID = "com.example.bench"
PRODUCT_ID = "com.example.pro.monthly"
KEY_ID = "BENCHKEY01"
OFFERS = ("bench_open", "bench_winback_rules", "bench_limited")

SIGNATURE_COLUMNS = ("bundle_id", "offer_id", "customer_key", "nonce", "key_id", "format", "issued_at_ms",
                     "product_id", "request_id", "redeemed_at_ms")
REDEMPTION_COLUMNS = ("bundle_id", "offer_id", "customer_key", "original_transaction_id", "transaction_id",
                      "redeemed_at_ms", "offer_type", "nonce")
RUN_COLUMNS = ("bundle_id", "original_transaction_id", "offer_id", "purchase_ms")
TOTAL_COLUMNS = ("bundle_id", "offer_id", "issued", "redeemed")
# What must be empty before a fill: the tables it writes.
FILLED_TABLES = ("issued_signatures", "redemptions", "subscription_runs", "offer_totals")


class FillError(Exception):
    pass


@dataclass(frozen=True)
class Table:
    """Rows for one table: its name, the columns they give (in order), and the rows (any iterable, read once)."""

    name: str
    columns: tuple[str, ...]
    rows: Iterable[tuple]


# ---------------------------------------------------------------------------------------------
# Many rows into a ledger: SQLite, PostgreSQL


# SQLite's page cache while filling (KiB).
FILL_CACHE_KIB = 512 * 1024


def insert_sqlite(path: Path, tables: list[Table]) -> dict[str, int]:
    """Inserts each table's rows into the SQLite file at `path` in one transaction (`executemany`), then ANALYZE (the
    service's statements are planned on statistics, as in production) and a checkpoint (the rows in the file, on
    disk). Returns the rows inserted per table."""
    counts: dict[str, int] = {}
    connection = sqlite3.connect(path, timeout=60)
    try:
        # Room for the indexes the rows go into in no particular order (the customers'), so they are not read back.
        connection.execute(f"PRAGMA cache_size = -{FILL_CACHE_KIB}")
        with connection:
            for table in tables:
                cursor = connection.executemany(
                    f"INSERT INTO {table.name} ({', '.join(table.columns)}) "
                    f"VALUES ({', '.join('?' * len(table.columns))})", table.rows)
                counts[table.name] = cursor.rowcount
            connection.execute("ANALYZE")
        # The file as the service leaves it: everything in the database, the write-ahead log empty.
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error as error:
        raise FillError(f"{path}: {error}") from error
    finally:
        connection.close()
    return counts


# What COPY's text format must escape in a value: the backslash, the column and row separators.
COPY_SPECIAL = re.compile(r"[\\\t\n\r]")
COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
# Rows per write to psql's standard input.
COPY_CHUNK = 20_000


def copy_value(value) -> str:
    """One value in COPY's text format: NULL as \\N, text escaped where it must be."""
    if value is None:
        return "\\N"
    text = str(value)
    return text.translate(COPY_ESCAPES) if COPY_SPECIAL.search(text) else text


def psql_binary() -> str:
    psql = shutil.which("psql")
    if psql is None:
        raise FillError("psql is not installed (Debian's postgresql-client)")
    return psql


def copy_postgresql(dsn: str, tables: list[Table]) -> dict[str, int]:
    """Streams each table's rows into the PostgreSQL database of `dsn` through psql's `\\copy ... FROM STDIN`, then
    VACUUM ANALYZE of each table (statistics, and the visibility map that lets the counts read their index alone).
    Returns the rows copied per table."""
    psql = psql_binary()
    counts: dict[str, int] = {}
    for table in tables:
        with tempfile.TemporaryFile() as stderr:
            process = subprocess.Popen(
                [psql, "--no-psqlrc", "-q", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-c",
                 f"\\copy {table.name} ({', '.join(table.columns)}) FROM STDIN"],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=stderr)
            count = 0
            try:
                chunk: list[str] = []
                for row in table.rows:
                    chunk.append("\t".join(map(copy_value, row)))
                    if len(chunk) == COPY_CHUNK:
                        process.stdin.write(("\n".join(chunk) + "\n").encode())
                        count += len(chunk)
                        chunk = []
                if chunk:
                    process.stdin.write(("\n".join(chunk) + "\n").encode())
                    count += len(chunk)
                process.stdin.close()
            except BrokenPipeError:
                pass  # psql stopped reading: its status and standard error say why
            try:
                status = process.wait(timeout=600)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                raise FillError(f"\\copy {table.name}: psql did not finish within 600 s") from None
            if status != 0:
                stderr.seek(0)
                raise FillError(f"\\copy {table.name}: psql exited {status}: {stderr.read().decode(errors='replace')}")
        counts[table.name] = count
    # Each VACUUM its own command: psql runs one -c's statements in one transaction, where VACUUM cannot run.
    vacuum = [argument for table in tables for argument in ("-c", f"VACUUM ANALYZE {table.name}")]
    psql_run(dsn, vacuum, timeout=600)
    return counts


def psql_run(dsn: str, arguments: list[str], timeout: float = 60) -> str:
    """psql on `dsn` with `arguments` (its `-c` commands); returns its standard output, unaligned, tuples only."""
    try:
        done = subprocess.run(
            [psql_binary(), "--no-psqlrc", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", dsn, *arguments],
            capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise FillError(f"psql {' '.join(arguments)}: no answer within {timeout:.0f} s") from None
    if done.returncode != 0:
        raise FillError(f"psql {' '.join(arguments)} exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


# ---------------------------------------------------------------------------------------------
# The customers' rows


def customer_key(customer: int) -> str:
    """The customer's key: an `originalTransactionId`, 16 digits (the benchmark's own customers start with 3)."""
    return f"4{customer:015d}"


def redemption_transaction(customer: int) -> str:
    """The transaction a customer bought with the offer: the one redemption a customer has."""
    return f"5{customer:015d}"


def uuid7(at_ms: int, bits: int) -> str:
    """A UUID version 7 of Unix milliseconds `at_ms` and 74 random `bits`, lowercase, as the service's nonces are."""
    value = (at_ms << 80) | (7 << 76) | ((bits >> 62) << 64) | (2 << 62) | (bits & ((1 << 62) - 1))
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


@dataclass(frozen=True)
class Fill:
    """A ledger's worth of customers' signatures at `now_ms`: `issued` holds one entry per signature, oldest first
    (its issue time, customer, the customer's signature number, offer index, redemption time or None, nonce bits);
    the rows of each table are made from it (`tables`), the same for either database."""

    bundle_id: str
    product_id: str
    key_id: str
    offers: tuple[str, ...]
    customers: int
    now_ms: int
    seed: int
    process: str
    issued: list[tuple]

    @classmethod
    def generate(cls, customers: int = CUSTOMERS, now_ms: int | None = None, bundle_id: str = BUNDLE_ID,
                 offers: tuple[str, ...] = OFFERS, product_id: str = PRODUCT_ID, key_id: str = KEY_ID,
                 seed: int = SEED) -> "Fill":
        if customers < 1:
            raise FillError("a fill needs at least one customer")
        if not offers:
            raise FillError("a fill needs at least one offer")
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        generator = random.Random(seed)
        # The service's request IDs: its process's 12 hexadecimal digits, then a sequence number.
        process = f"{generator.getrandbits(48):012x}"
        # `random()` scaled rather than `randrange`: a third of the time, for the same spread (53 bits cover it).
        uniform, bits = generator.random, generator.getrandbits
        issued = []
        for customer in range(customers):
            count = 2 if uniform() < TWO_SIGNATURES else 1
            times = sorted(cls._issue_time(uniform, now_ms) for _ in range(count))
            redeems = uniform() < REDEEMING
            for number, at in enumerate(times):
                redeemed = None
                if redeems and number == count - 1:
                    purchase = at + 60_000 + int(uniform() * (REDEMPTION_DELAY_MS - 60_000))
                    redeemed = purchase if purchase < now_ms else None
                issued.append((at, customer, number, int(uniform() * len(offers)), redeemed, bits(74)))
        issued.sort()
        return cls(bundle_id, product_id, key_id, tuple(offers), customers, now_ms, seed, process, issued)

    @staticmethod
    def _issue_time(uniform, now_ms: int) -> int:
        """A moment of the last DAYS days, at least a second ago, not within GUARD_MS of expiring at `now_ms`."""
        while True:
            age = 1000 + int(uniform() * (DAYS * DAY_MS - 1000))
            if abs(age - SIGNATURE_TTL_MS) >= GUARD_MS:
                return now_ms - age

    @property
    def signatures(self) -> int:
        return len(self.issued)

    def redeemed(self) -> list[tuple]:
        """The redeemed signatures' entries, in the order of their redemptions."""
        return sorted((entry for entry in self.issued if entry[4] is not None), key=lambda entry: (entry[4], entry[1]))

    def totals(self) -> dict[str, tuple[int, int]]:
        """Per offer: signatures issued and redemptions, as `offer_totals` keeps them."""
        issued = Counter(self.offers[entry[3]] for entry in self.issued)
        redeemed = Counter(self.offers[entry[3]] for entry in self.issued if entry[4] is not None)
        return {offer: (issued[offer], redeemed[offer]) for offer in self.offers if issued[offer]}

    def places(self, at_ms: int | None = None) -> dict[str, int]:
        """Per offer: the signatures neither redeemed nor expired at `at_ms` (default: the fill's moment), the places
        they hold (redemptions hold theirs as well: `totals`)."""
        start = (self.now_ms if at_ms is None else at_ms) - SIGNATURE_TTL_MS
        places = Counter(self.offers[entry[3]] for entry in self.issued if entry[4] is None and entry[0] > start)
        return {offer: places[offer] for offer in self.offers}

    def tables(self) -> list[Table]:
        """The rows of every table the fill writes, made as they are read."""
        redeemed = self.redeemed()
        return [
            Table("issued_signatures", SIGNATURE_COLUMNS, self._signature_rows()),
            Table("redemptions", REDEMPTION_COLUMNS, (
                (self.bundle_id, self.offers[offer], customer_key(customer), customer_key(customer),
                 redemption_transaction(customer), purchase, PROMOTIONAL_OFFER_TYPE, uuid7(at, bits))
                for at, customer, _, offer, purchase, bits in redeemed)),
            Table("subscription_runs", RUN_COLUMNS, (
                (self.bundle_id, customer_key(customer), self.offers[offer], purchase)
                for _, customer, _, offer, purchase, _ in redeemed)),
            Table("offer_totals", TOTAL_COLUMNS, (
                (self.bundle_id, offer, issued, redeemed) for offer, (issued, redeemed) in self.totals().items())),
        ]

    def _signature_rows(self):
        for position, (at, customer, _, offer, redeemed, bits) in enumerate(self.issued):
            yield (self.bundle_id, self.offers[offer], customer_key(customer), uuid7(at, bits), self.key_id, "jws", at,
                   self.product_id, f"{self.process}-{position + 1}", redeemed)

    def summary(self) -> dict:
        """What the fill holds, for the benchmark's results."""
        return {"customers": self.customers, "days": DAYS, "seed": self.seed, "signatures": self.signatures,
                "redeemed": len(self.redeemed()),
                "totals": {offer: {"issued": issued, "redeemed": redeemed}
                           for offer, (issued, redeemed) in self.totals().items()},
                "places": self.places()}


# ---------------------------------------------------------------------------------------------
# Filling a ledger the service made


def check_sqlite(path: Path) -> None:
    """Raises unless `path` is a SQLite ledger the service made that holds none of the rows a fill writes."""
    if not Path(path).exists():
        raise FillError(f"{path}: no such ledger; start `offer-signer serve` on it once first (its migrations make it)")
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as connection:
            held = [connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in FILLED_TABLES]
    except sqlite3.Error as error:
        raise FillError(f"{path}: {error}; start `offer-signer serve` on it once first (its migrations make the "
                        "tables)") from error
    refuse_filled(str(path), held)


def check_postgresql(dsn: str) -> None:
    """Raises unless `dsn` names a PostgreSQL ledger the service made that holds none of the rows a fill writes."""
    counts = psql_run(dsn, ["-c", "SELECT " + ", ".join(f"(SELECT count(*) FROM {table})" for table in FILLED_TABLES)])
    refuse_filled("the database", [int(value) for value in counts.strip().split("|")])


def refuse_filled(name: str, held: list[int]) -> None:
    """A ledger with rows in the tables a fill writes is refused: its totals would no longer add up."""
    if any(held):
        rows = ", ".join(f"{table} {count}" for table, count in zip(FILLED_TABLES, held) if count)
        raise FillError(f"{name} already holds rows ({rows}): fill a new ledger")


def fill_sqlite(path: Path, fill: Fill) -> dict[str, int]:
    """Writes `fill` into the SQLite ledger at `path` (`check_sqlite`); returns the rows per table."""
    check_sqlite(path)
    return insert_sqlite(path, fill.tables())


def fill_postgresql(dsn: str, fill: Fill) -> dict[str, int]:
    """Writes `fill` into the PostgreSQL ledger of `dsn` (`check_postgresql`); returns the rows per table."""
    check_postgresql(dsn)
    return copy_postgresql(dsn, fill.tables())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--sqlite", type=Path, help="a SQLite ledger file the service made")
    target.add_argument("--postgres", help="the DSN of a PostgreSQL ledger the service made")
    parser.add_argument("--customers", type=int, default=CUSTOMERS, help=f"customers (default {CUSTOMERS:,})")
    parser.add_argument("--bundle-id", default=BUNDLE_ID, help=f"the app (default {BUNDLE_ID})")
    parser.add_argument("--offers", default=",".join(OFFERS),
                        help=f"promotional offers, comma-separated (default {','.join(OFFERS)})")
    parser.add_argument("--product-id", default=PRODUCT_ID, help=f"the product signed for (default {PRODUCT_ID})")
    parser.add_argument("--key-id", default=KEY_ID, help=f"the signing key's ID (default {KEY_ID})")
    parser.add_argument("--seed", type=int, default=SEED, help=f"the generator's seed (default {SEED})")
    args = parser.parse_args(argv)
    offers = tuple(offer.strip() for offer in args.offers.split(",") if offer.strip())
    try:
        # The ledger first: a wrong one is said before minutes of generating.
        if args.sqlite:
            check_sqlite(args.sqlite)
        else:
            check_postgresql(args.postgres)
        started = time.perf_counter()
        fill = Fill.generate(args.customers, bundle_id=args.bundle_id, offers=offers, product_id=args.product_id,
                             key_id=args.key_id, seed=args.seed)
        generated = time.perf_counter() - started
        if args.sqlite:
            rows = fill_sqlite(args.sqlite, fill)
        else:
            rows = fill_postgresql(args.postgres, fill)
    except FillError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    elapsed = time.perf_counter() - started
    print(f"filled {args.sqlite or 'the database'} with {fill.customers:,} customers in {elapsed:.1f} s "
          f"({generated:.1f} s generating): " + ", ".join(f"{table} {count:,}" for table, count in rows.items()))
    places = fill.places()
    for offer, (issued, redeemed) in fill.totals().items():
        print(f"  {fill.bundle_id} {offer}: issued {issued:,}, redeemed {redeemed:,}, reserved {places[offer]:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
