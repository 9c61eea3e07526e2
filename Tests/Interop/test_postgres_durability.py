"""Issue 8, item 9 (PostgreSQL): every signature a client received is in the ledger, whatever moment the service
is killed (SIGKILL, no chance to flush anything), and nothing is recorded twice.

test_durability.py's rounds on a PostgreSQL database of the test's own: several clients sign as fast as they can
over keep-alive connections, for an open offer (recorded without a count) and for a limited one (counted and
recorded atomically); the server is killed mid-load and, once PostgreSQL has closed its connections, the ledger is
read with `psql` (an independent reader). Every nonce a client got in a 200 answer is there, no nonce twice, the
limited offer's total equals its rows, and beyond the answered signatures there is at most one per client (the
request in flight when the server died). Then the server restarts on the same database and the round repeats."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

from support import (
    BUNDLE_ID,
    ISSUER_ID,
    OFFER_OPEN,
    PRODUCT_MONTHLY,
    Hammer,
    Server,
    psql,
)

LIMITED = "durability_limited"
ROUNDS = 4
CLIENTS = 6


def write_config(workdir: Path, signing_key, dsn: str) -> Path:
    config = {
        "listen": {"host": "127.0.0.1", "port": 0},
        "storage": dsn,
        "apps": [{
            "bundleId": BUNDLE_ID,
            "issuerId": ISSUER_ID,
            "keys": [{"keyId": signing_key.key_id, "privateKeyFile": str(signing_key.path)}],
            "offers": [
                {"id": OFFER_OPEN, "type": "promotional", "productIds": [PRODUCT_MONTHLY],
                 "requiresVerifiedCustomer": False},
                {"id": LIMITED, "type": "promotional", "productIds": [PRODUCT_MONTHLY],
                 "requiresVerifiedCustomer": False, "limits": {"total": 1_000_000}},
            ],
        }],
    }
    path = workdir / "postgres-durability.json"
    path.write_text(json.dumps(config))
    return path


def others_connected(dsn: str) -> int:
    """How many sessions other than this one are connected to the database."""
    rows = psql(dsn, "SELECT count(*) FROM pg_stat_activity "
                     "WHERE datname = current_database() AND pid <> pg_backend_pid()")
    return int(rows[0][0])


def ledger(dsn: str) -> list[str]:
    """Every nonce recorded, repeats kept."""
    return [row[0] for row in psql(dsn, "SELECT nonce FROM issued_signatures")]


def test_every_signature_received_survives_a_kill(tmp_path, signing_key, postgres_dsn):
    config = write_config(tmp_path, signing_key, postgres_dsn)
    everything: list[str] = []
    recorded_before: set[str] = set()
    for round_ in range(ROUNDS):
        server = Server.start(config, tmp_path, timeout=30)
        stop = threading.Event()
        clients = [Hammer(server, LIMITED if index % 2 else OFFER_OPEN, stop) for index in range(CLIENTS)]
        for client in clients:
            client.start()
        # Kill at a different moment each round, once the clients have had answers.
        deadline = time.monotonic() + 20
        while sum(len(client.nonces) for client in clients) < 150 * (round_ + 1) and time.monotonic() < deadline:
            time.sleep(0.01)
        server.process.send_signal(signal.SIGKILL)
        assert server.process.wait(timeout=10) == -signal.SIGKILL
        stop.set()
        for client in clients:
            client.join(timeout=10)
        refused = [client.failure for client in clients if client.refused]
        assert not refused, f"round {round_}: answers other than 200 before the kill: {refused}"
        # A COMMIT sent just before the kill may still be finishing: read once PostgreSQL let go of the server.
        deadline = time.monotonic() + 10
        while others_connected(postgres_dsn) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert others_connected(postgres_dsn) == 0, f"round {round_}: the killed server's sessions did not end"

        answered = [nonce for client in clients for nonce in client.nonces]
        assert len(answered) >= 150, f"round {round_}: only {len(answered)} signatures before the kill"
        assert len(answered) == len(set(answered)), f"round {round_}: a nonce was handed out twice"
        recorded = ledger(postgres_dsn)
        assert len(recorded) == len(set(recorded)), f"round {round_}: a nonce is recorded twice"
        recorded_set = set(recorded)
        missing = set(answered) - recorded_set
        assert not missing, f"round {round_}: {len(missing)} of {len(answered)} answered signatures are not recorded"
        assert recorded_before <= recorded_set, f"round {round_}: records of earlier rounds disappeared"
        unanswered = recorded_set - recorded_before - set(answered)
        # Each client has at most one request in flight when the server dies: at most one record it never got.
        assert len(unanswered) <= CLIENTS, f"round {round_}: {len(unanswered)} recorded signatures were never answered"
        # The count and the record commit together: a kill never leaves one without the other.
        limited = psql(postgres_dsn, f"SELECT count(*) FROM issued_signatures WHERE offer_id = '{LIMITED}'")
        total = psql(postgres_dsn, f"SELECT issued FROM offer_totals WHERE bundle_id = '{BUNDLE_ID}' "
                                   f"AND offer_id = '{LIMITED}'")
        assert total == limited, f"round {round_}: the offer's total {total} is not its {limited} records"
        everything += answered
        recorded_before = recorded_set

    # Nothing answered in an earlier round was lost by a later kill either, and the database itself refuses a
    # second record of a nonce.
    assert set(everything) <= set(ledger(postgres_dsn))
    constraint = psql(postgres_dsn, "SELECT contype, pg_get_constraintdef(oid) FROM pg_constraint "
                                    "WHERE conrelid = 'issued_signatures'::regclass AND contype = 'u'")
    assert ["u", "UNIQUE (nonce)"] in constraint, constraint
