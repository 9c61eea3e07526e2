"""Issue 8, item 10: storage faults on the real binary.

While the ledger cannot record (SQLite: a full disk, a file another process keeps locked; PostgreSQL: the server
stopped), signature requests answer 503 `storage_unavailable` and `/readyz` answers 503 `storage_unavailable`; the
answers never carry the file's path, the DSN or SQL, and the service's log says what failed. Once the fault is gone
the same process answers 200 again, with no restart. Every signature a client received in a 200 is in the ledger,
read independently (Python's `sqlite3`, `psql`). A damaged SQLite file stops `serve` at start with one line that
names the file and says what to do.

The full disk is simulated with the test-only `OFFER_SIGNER_TEST_SQLITE_MAX_PAGES` (SQLite's `max_page_count`: the
file may not grow), since file modes do not stop root; the test frees space by giving the file free pages (a table
written and dropped from outside), as an operator freeing disk space would. The PostgreSQL test starts a cluster of
its own (Scripts/postgres-test-cluster.sh) because it stops and restarts it.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import secrets
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

from support import BUNDLE_ID, ISSUER_ID, OFFER_OPEN, PRODUCT_MONTHLY, PROMO_PATH, REPO_ROOT, Server, binary

LIMITED = "faults_limited"
UNAVAILABLE_MESSAGE = "the ledger of issued signatures is unavailable; retry later"
CLUSTER_SCRIPT = REPO_ROOT / "Scripts" / "postgres-test-cluster.sh"


def write_config(path: Path, signing_key, storage: str) -> Path:
    config = {
        "listen": {"host": "127.0.0.1", "port": 0},
        "storage": storage,
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
    path.write_text(json.dumps(config))
    return path


def sign(server: Server, offer: str = OFFER_OPEN, timeout: float = 15):
    return server.post(PROMO_PATH, {"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY, "offerId": offer},
                       timeout=timeout)


def expect_storage_unavailable(response, *hidden: str) -> None:
    """A 503 `storage_unavailable` with the service's fixed words: nothing about the store in it."""
    assert response.status == 503, (response.status, response.body)
    assert response.json() == {"error": {"code": "storage_unavailable", "message": UNAVAILABLE_MESSAGE}}, response.body
    for text in hidden:
        assert text not in response.body.decode(errors="replace"), (text, response.body)


def log_lines(server: Server, message: str) -> list[str]:
    return [line for line in server.stderr_path.read_text(errors="replace").splitlines()
            if f'msg="{message}"' in line]


class Clients:
    """Clients signing as fast as they can over keep-alive connections until stopped. Keeps every nonce answered
    200; anything else must be 503 `storage_unavailable`."""

    def __init__(self, port: int, count: int = 4):
        self.port = port
        self.received: list[str] = []
        self.unavailable = 0
        self.unexpected: list[str] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(LIMITED if i % 2 else OFFER_OPEN,), daemon=True)
                        for i in range(count)]
        for thread in self.threads:
            thread.start()

    def run(self, offer: str) -> None:
        body = json.dumps({"bundleId": BUNDLE_ID, "productId": PRODUCT_MONTHLY, "offerId": offer})
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        while not self.stopping.is_set():
            try:
                connection.request("POST", PROMO_PATH, body=body, headers={"Content-Type": "application/json"})
                response = connection.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException) as error:
                with self.lock:
                    self.unexpected.append(f"connection: {error!r}")
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
                continue
            with self.lock:
                if response.status == 200:
                    self.received.append(json.loads(data)["nonce"])
                elif response.status == 503 and json.loads(data)["error"]["code"] == "storage_unavailable":
                    self.unavailable += 1
                else:
                    self.unexpected.append(f"{response.status}: {data!r}")
            time.sleep(0.005)
        connection.close()

    def count(self) -> int:
        with self.lock:
            return len(self.received)

    def stop(self) -> set[str]:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=30)
        assert not self.unexpected, self.unexpected[:5]
        return set(self.received)


def wait_for(condition, timeout: float = 15, every: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(every)
    return condition()


# MARK: - SQLite


def sqlite_nonces(path: Path) -> set[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        return {row[0] for row in connection.execute("SELECT nonce FROM issued_signatures")}


def free_pages(path: Path, size: int = 2 << 20) -> None:
    """What freeing disk space does for the simulated full disk: pages the file can grow into."""
    connection = sqlite3.connect(path, isolation_level=None, timeout=10)
    try:
        connection.execute("CREATE TABLE ballast (b BLOB)")
        connection.execute("INSERT INTO ballast VALUES (zeroblob(?))", (size,))
        connection.execute("DROP TABLE ballast")
    finally:
        connection.close()


def test_a_full_sqlite_disk_answers_503_until_space_is_freed(tmp_path, signing_key):
    config = write_config(tmp_path / "full.json", signing_key, "sqlite:ledger.sqlite")
    ledger = tmp_path / "ledger.sqlite"
    server = Server.start(config, tmp_path, env={"OFFER_SIGNER_TEST_SQLITE_MAX_PAGES": "1"})
    try:
        assert server.request("GET", "/readyz").status == 200
        warned = server.stderr_path.read_text(errors="replace")
        assert "OFFER_SIGNER_TEST_SQLITE_MAX_PAGES is set" in warned and "never set it in production" in warned

        clients = Clients(server.port)
        # The ledger fills up under the clients' load: every answer from then on is a 503.
        assert wait_for(lambda: clients.unavailable >= 20, timeout=30), (clients.count(), clients.unavailable)
        expect_storage_unavailable(sign(server), str(tmp_path), "sqlite", "INSERT")
        expect_storage_unavailable(sign(server, LIMITED), str(tmp_path))
        expect_storage_unavailable(server.request("GET", "/readyz"), str(tmp_path), "full")
        assert server.request("HEAD", "/readyz").status == 503
        assert any("kind=full" in line for line in log_lines(server, "ledger failure"))
        assert any("kind=full" in line and "is full" in line
                   for line in log_lines(server, "not ready: the ledger cannot record"))

        free_pages(ledger)
        assert wait_for(lambda: server.request("GET", "/readyz").status == 200)
        before = clients.count()
        assert wait_for(lambda: clients.count() >= before + 50, timeout=30), "signing did not resume"
        received = clients.stop()
        after = sign(server)
        assert after.status == 200, after.body
        received.add(after.json()["nonce"])
        assert server.process.poll() is None, "the server restarted or died"
    finally:
        status = server.stop(signal.SIGTERM)
    assert status == 0, server.stderr_path.read_text(errors="replace")
    missing = received - sqlite_nonces(ledger)
    assert not missing, f"{len(missing)} signatures answered 200 are not in the ledger"


def test_a_locked_sqlite_file_answers_503_while_the_lock_lasts(tmp_path, signing_key):
    config = write_config(tmp_path / "locked.json", signing_key, "sqlite:ledger.sqlite")
    ledger = tmp_path / "ledger.sqlite"
    server = Server.start(config, tmp_path)
    received: set[str] = set()
    try:
        first = sign(server)
        assert first.status == 200, first.body
        received.add(first.json()["nonce"])
        holder = sqlite3.connect(ledger, isolation_level=None)
        try:
            holder.execute("BEGIN EXCLUSIVE")
            started = time.monotonic()
            expect_storage_unavailable(sign(server), str(tmp_path), "locked")
            # A lower bound (SQLite's 5 s busy timeout, real time): a loaded machine only makes the wait longer.
            assert time.monotonic() - started >= 4.5, "the write gave up before the busy timeout"
            expect_storage_unavailable(server.request("GET", "/readyz"), str(tmp_path))
            # Reads go on: the limited offer's count is read while the file is locked for writes.
            eligibility = server.post("/v1/eligibility", {"bundleId": BUNDLE_ID})
            assert eligibility.status == 200, eligibility.body
            assert any("kind=timeout" in line and "database is locked" in line
                       for line in log_lines(server, "ledger failure"))
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert server.request("GET", "/readyz").status == 200
        for offer in (OFFER_OPEN, LIMITED):
            response = sign(server, offer)
            assert response.status == 200, response.body
            received.add(response.json()["nonce"])
    finally:
        status = server.stop(signal.SIGTERM)
    assert status == 0, server.stderr_path.read_text(errors="replace")
    assert received <= sqlite_nonces(ledger)


def damage_not_a_database(path: Path) -> str:
    path.write_bytes(b"this is not a SQLite database\n" * 300)
    return "file is not a database"


def damage_a_table_page(path: Path) -> str:
    with sqlite3.connect(path) as connection:
        page = connection.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'issued_signatures'").fetchone()[0]
        page_size = connection.execute("PRAGMA page_size").fetchone()[0]
    with open(path, "r+b") as file:
        file.seek((page - 1) * page_size)
        file.write(b"\xff" * page_size)
    return f"Page {page}: btreeInitPage() returns error code 11"


@pytest.mark.parametrize("damage", [damage_not_a_database, damage_a_table_page], ids=["not-a-database", "table-page"])
def test_a_damaged_sqlite_file_stops_serve_with_one_clear_line(tmp_path, signing_key, damage):
    config = write_config(tmp_path / "damaged.json", signing_key, "sqlite:ledger.sqlite")
    ledger = tmp_path / "ledger.sqlite"
    server = Server.start(config, tmp_path)
    try:
        for _ in range(5):
            assert sign(server).status == 200
    finally:
        assert server.stop(signal.SIGTERM) == 0
    # Everything into the file itself (nothing left in the write-ahead log, which would hide a damaged page).
    with sqlite3.connect(ledger) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    reason = damage(ledger)

    result = subprocess.run([binary(), "serve", "--config", str(config), "--port", "0", "--host", "127.0.0.1"],
                            capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert "listening" not in result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("offer-signer:")]
    assert errors == [
        f"offer-signer: the ledger {ledger} is damaged or is not a SQLite database ({reason}): stop every "
        "offer-signer using it and restore the file from a backup, or move it aside with its -wal and -shm files "
        "to start an empty ledger (its records, and the counts limits are decided on, are then lost)"
    ], result.stderr
    other = [line for line in result.stderr.splitlines()
             if not line.startswith("offer-signer:") and " level=warning " not in line]
    assert other == [], result.stderr
    for trace in ("Fatal error", "Backtrace", "Crash", "0x0000"):
        assert trace not in result.stderr


# MARK: - PostgreSQL


def postgres_binaries() -> Path:
    if os.environ.get("PG_BIN"):
        return Path(os.environ["PG_BIN"])
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda path: int(path.parent.name))
    assert found, "no PostgreSQL server in /usr/lib/postgresql: run 'make deps'"
    return found[-1]


def as_cluster_owner(*command: str) -> list[str]:
    """PostgreSQL refuses root: as root, the cluster's commands run as the `postgres` user (as the script does)."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else list(command)


class Cluster:
    """A cluster of this test's own, which it may stop and start again on the same data and port."""

    def __init__(self, directory: Path):
        self.directory = directory
        started = subprocess.run(["bash", str(CLUSTER_SCRIPT), "start", str(directory), "--owner", str(os.getpid())],
                                 capture_output=True, text=True, timeout=120)
        assert started.returncode == 0, started.stderr
        self.dsn = started.stdout.strip()
        self.port = int(re.search(r":(\d+)/", self.dsn).group(1))

    def pg_ctl(self, *arguments: str) -> None:
        result = subprocess.run(
            as_cluster_owner(str(postgres_binaries() / "pg_ctl"), f"--pgdata={self.directory}/data", *arguments),
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, result.stdout + result.stderr

    def stop(self) -> None:
        self.pg_ctl("--mode=fast", "--wait", "stop")

    def start(self) -> None:
        # The options the script starts it with (its port, its socket folder, loopback).
        self.pg_ctl(f"--log={self.directory}/log", "--wait", "--timeout=60", "-o",
                    f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c max_connections=300", "start")

    def remove(self) -> None:
        subprocess.run(["bash", str(CLUSTER_SCRIPT), "stop", str(self.directory)], timeout=120)

    def nonces(self) -> set[str]:
        result = subprocess.run([str(postgres_binaries() / "psql"), self.dsn, "-At", "-c",
                                 "SELECT nonce FROM issued_signatures"], capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, result.stderr
        return set(result.stdout.split())


@pytest.fixture
def cluster():
    running = Cluster(Path(f"/tmp/offer-signer-faults-{secrets.token_hex(4)}"))
    yield running
    running.remove()


def test_a_stopped_postgresql_answers_503_until_it_is_back(tmp_path, signing_key, cluster):
    config = write_config(tmp_path / "postgresql.json", signing_key, cluster.dsn)
    server = Server.start(config, tmp_path)
    hidden = (cluster.dsn, str(cluster.port), "127.0.0.1", "PostgreSQL", "SELECT", "LOCK")
    try:
        assert server.request("GET", "/readyz").status == 200
        clients = Clients(server.port)
        assert wait_for(lambda: clients.count() >= 50), "no signatures before the stop"

        cluster.stop()
        # Noticed as a refused connection, not by waiting out a timeout (a pool's checkout, a statement's): what
        # happened, in the log, rather than how fast. The requests' own timeouts only guard a hang.
        expect_storage_unavailable(sign(server), *hidden)
        expect_storage_unavailable(sign(server, LIMITED), *hidden)
        expect_storage_unavailable(server.request("GET", "/readyz"), *hidden)
        failures = log_lines(server, "ledger failure")
        assert any("kind=unavailable" in line and "PostgreSQL" in line for line in failures), failures[-3:]
        assert not any("kind=timeout" in line for line in failures), [l for l in failures if "kind=timeout" in l][:3]
        assert any("kind=unavailable" in line for line in log_lines(server, "not ready: the ledger cannot record"))
        # Every answer after the first refusals is a refusal too: twenty more of them and not one signature.
        stopped_count, refused = clients.count(), clients.unavailable
        assert wait_for(lambda: clients.unavailable >= refused + 20, timeout=30), (clients.count(), refused)
        assert clients.count() == stopped_count, "signatures were answered while the database was down"

        cluster.start()
        assert wait_for(lambda: server.request("GET", "/readyz").status == 200), "readiness did not come back"
        assert wait_for(lambda: clients.count() >= stopped_count + 50, timeout=30), "signing did not resume"
        received = clients.stop()
        assert clients.unavailable > 0
        assert server.process.poll() is None, "the server restarted or died"
    finally:
        status = server.stop(signal.SIGTERM)
    assert status == 0, server.stderr_path.read_text(errors="replace")
    missing = received - cluster.nonces()
    assert not missing, f"{len(missing)} signatures answered 200 are not in the ledger"
