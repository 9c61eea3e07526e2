"""Issue 8, item 9 (SQLite): every signature a client received is in the ledger, whatever moment the service
is killed (SIGKILL, no chance to flush anything), and the file is never corrupted.

Several clients sign as fast as they can over keep-alive connections, for open offers (recorded without a
count) and for a limited one (counted and recorded atomically); the server is killed mid-load, then the ledger
is read with Python's own `sqlite3` (an independent reader): `PRAGMA integrity_check` is `ok` and every nonce a
client got in a 200 answer is there. Then the server restarts on the same file and the round repeats."""

from __future__ import annotations

import http.client
import json
import signal
import sqlite3
import threading
import time
from pathlib import Path

from support import (
    BUNDLE_ID,
    ISSUER_ID,
    OFFER_OPEN,
    PRODUCT_MONTHLY,
    PROMO_PATH,
    Server,
)

LIMITED = "durability_limited"
ROUNDS = 4
CLIENTS = 6


def write_config(workdir: Path, signing_key) -> Path:
    config = {
        "listen": {"host": "127.0.0.1", "port": 0},
        "storage": "sqlite:ledger.sqlite",
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
    path = workdir / "durability.json"
    path.write_text(json.dumps(config))
    return path


def hammer(port: int, offer: str, received: list[str], stop: threading.Event) -> None:
    """Signs until `stop` or until the server is gone; keeps every nonce answered with 200."""
    body = json.dumps({"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY, "offerId": offer})
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        while not stop.is_set():
            connection.request("POST", PROMO_PATH, body=body, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            data = response.read()
            assert response.status == 200, data
            received.append(json.loads(data)["nonce"])
    except (OSError, http.client.HTTPException):
        return  # the server was killed
    finally:
        connection.close()


def ledger(path: Path) -> tuple[str, set[str]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        check = connection.execute("PRAGMA integrity_check").fetchone()[0]
        nonces = {row[0] for row in connection.execute("SELECT nonce FROM issued_signatures")}
    return check, nonces


def test_every_signature_received_survives_a_kill(tmp_path, signing_key):
    config = write_config(tmp_path, signing_key)
    everything: set[str] = set()
    for round_ in range(ROUNDS):
        server = Server.start(config, tmp_path)
        received: list[list[str]] = [[] for _ in range(CLIENTS)]
        stop = threading.Event()
        clients = [
            threading.Thread(target=hammer, args=(server.port, LIMITED if index % 2 else OFFER_OPEN,
                                                  received[index], stop), daemon=True)
            for index in range(CLIENTS)
        ]
        for client in clients:
            client.start()
        # Kill at a different moment each round, once every client has had answers.
        deadline = time.monotonic() + 10
        while sum(len(r) for r in received) < 200 * (round_ + 1) and time.monotonic() < deadline:
            time.sleep(0.01)
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=10)
        stop.set()
        for client in clients:
            client.join(timeout=10)
        answered = {nonce for nonces in received for nonce in nonces}
        assert len(answered) >= 200, f"round {round_}: only {len(answered)} signatures before the kill"
        check, recorded = ledger(tmp_path / "ledger.sqlite")
        assert check == "ok", f"round {round_}: integrity_check says {check}"
        missing = answered - recorded
        assert not missing, f"round {round_}: {len(missing)} answered signatures are not in the ledger"
        everything |= answered
    # Nothing answered in an earlier round was lost by a later kill either.
    _, recorded = ledger(tmp_path / "ledger.sqlite")
    assert everything <= recorded
