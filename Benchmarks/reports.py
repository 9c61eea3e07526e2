"""The reports scenario of `make bench` (issue 22): how long an offer's outcomes and its experiment's report take to
answer over a year of data, a million exposures, on SQLite and on PostgreSQL. The target is under one second.

A ledger is made by the service (`serve` once, so its own migrations make the tables), then filled by this script
with Python's sqlite3, or psql's COPY (`insert_sqlite` and `copy_postgresql` of `ledger_fill.py`): 1,000,000 exposures
of the measured offer spread over the last 365 days (a 20% holdout; conversions, redemptions, retention, lapses and
revenue rows in realistic shares) and 200,000 of another offer, so the reports must pick theirs out. The service is
started on it with an admin listener, and each report is asked for over HTTP (one warm-up, then five timed requests
each: JSON outcomes, the JSON experiment report, its CSV), and through `offer-signer report experiment --json`.
Standard library only; traffic to 127.0.0.1 only.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import re
import select
import signal
import statistics
import subprocess
import time
from pathlib import Path

import ledger_fill  # Benchmarks/ledger_fill.py: many rows into a ledger, the same way for every fill

EXPOSURES = 1_000_000
OTHER_EXPOSURES = 200_000
YEAR_MS = 365 * 86_400_000
TARGET_MS = 1000.0
TIMED = 5
OFFER = "bench_experiment"
OTHER = "bench_other"
EXPERIMENT = "year"
COLUMNS = ("id", "bundle_id", "offer_id", "experiment_id", "customer_key", "arm", "exposed_ms", "signed_ms",
           "redeemed_ms", "converted_ms", "converted_with_offer", "retained_ms", "lapsed_ms", "state")
REVENUE_COLUMNS = ("exposure_id", "transaction_id", "bundle_id", "offer_id", "experiment_id", "arm", "currency",
                   "milliunits", "at_ms")


class ReportsError(Exception):
    pass


def exposures(bundle_id: str, now_ms: int, seed: int = 22):
    """The rows: the measured offer's, then the other offer's; and the revenue rows of their conversions."""
    generator = random.Random(seed)
    rows = []
    revenue = []
    for offer, count in ((OFFER, EXPOSURES), (OTHER, OTHER_EXPOSURES)):
        experiment = EXPERIMENT if offer == OFFER else ""
        for index in range(count):
            arm = "holdout" if generator.random() < 0.2 else "treatment"
            exposed = now_ms - generator.randrange(YEAR_MS)
            signed = exposed if arm == "treatment" and generator.random() < 0.9 else None
            converted = exposed + 86_400_000 if generator.random() < (0.15 if arm == "treatment" else 0.12) else None
            with_offer = 1 if converted and arm == "treatment" and generator.random() < 0.7 else 0
            redeemed = converted if with_offer else None
            retained = lapsed = None
            if converted:
                if generator.random() < 0.5:
                    retained = converted + 30 * 86_400_000
                else:
                    lapsed = converted + 30 * 86_400_000
            key = f"{offer[-5:]}{index:09d}"
            identifier = len(rows) + 1
            # Exposure.State: signed 1, redeemed 2, converted 4, with the offer 8, retained 16, lapsed 32.
            state = ((1 if signed else 0) | (2 if redeemed else 0) | (4 if converted else 0)
                     | (8 if converted and with_offer else 0) | (16 if retained else 0) | (32 if lapsed else 0))
            rows.append((identifier, bundle_id, offer, experiment, key, arm, exposed, signed, redeemed, converted,
                         with_offer if converted else None, retained, lapsed, state))
            if converted:
                currency = "EUR" if index % 3 else "USD"
                revenue.append((identifier, key + "1", bundle_id, offer, experiment, arm, currency,
                                1990 if with_offer else 9990, converted))
                if retained:
                    revenue.append((identifier, key + "2", bundle_id, offer, experiment, arm, currency, 9990, retained))
    return rows, revenue


class Service:
    """`offer-signer serve` with an admin listener; both ports read from its first two stdout lines."""

    def __init__(self, binary: str, config: Path, directory: Path):
        self.stderr_path = directory / "reports-server.stderr"
        stderr = open(self.stderr_path, "wb")
        self.process = subprocess.Popen(
            [binary, "serve", "--config", str(config), "--host", "127.0.0.1", "--port", "0", "--log-level", "warning"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr)
        stderr.close()
        lines = self._lines(2, 60)
        public = re.fullmatch(r"offer-signer listening on http://127\.0\.0\.1:(\d+)", lines[0])
        admin = re.fullmatch(r"offer-signer admin listening on http://127\.0\.0\.1:(\d+)", lines[1])
        if not public or not admin:
            self.stop()
            raise ReportsError(f"unexpected first lines from the server: {lines!r}")
        self.admin_port = int(admin.group(1))

    def _lines(self, count: int, timeout: float) -> list[str]:
        fd = self.process.stdout.fileno()
        buffer = b""
        deadline = time.monotonic() + timeout
        while buffer.count(b"\n") < count:
            left = deadline - time.monotonic()
            if left <= 0 or self.process.poll() is not None:
                raise ReportsError(f"the server did not start: {self.stderr_path.read_text(errors='replace')[-2000:]}")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 4096)
                if chunk:
                    buffer += chunk
        return [line.decode().strip() for line in buffer.split(b"\n")[:count]]

    def get(self, path: str, token: str) -> tuple[int, bytes, float]:
        connection = http.client.HTTPConnection("127.0.0.1", self.admin_port, timeout=60)
        started = time.perf_counter()
        connection.request("GET", path, headers={"Authorization": f"Bearer {token}",
                                                 "Host": f"127.0.0.1:{self.admin_port}"})
        response = connection.getresponse()
        body = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        connection.close()
        return response.status, body, elapsed

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def measure_backend(binary: str, directory: Path, base_config: dict, storage: str, label: str,
                    rows: list, revenue: list, bundle_id: str) -> dict:
    config = json.loads(json.dumps(base_config))
    config["storage"] = storage
    path = directory / f"reports-{label}.json"
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    # The service makes its tables (its migrations), then the rows go in.
    Service(binary, path, directory).stop()
    started = time.perf_counter()
    tables = [ledger_fill.Table("exposures", COLUMNS, rows),
              ledger_fill.Table("exposure_revenue", REVENUE_COLUMNS, revenue)]
    if storage.startswith("sqlite:"):
        ledger_fill.insert_sqlite(directory / storage.removeprefix("sqlite:"), tables)
    else:
        ledger_fill.copy_postgresql(storage, tables)
    filled = time.perf_counter() - started
    made = subprocess.run([binary, "admin", "token", "create", "--config", str(path), "--name", "bench",
                           "--role", "viewer"], capture_output=True, text=True, timeout=60)
    if made.returncode != 0:
        raise ReportsError(f"admin token create: {made.stderr}")
    token = made.stdout.strip()
    service = Service(binary, path, directory)
    try:
        base = f"/admin/v1/apps/{bundle_id}/offers/{OFFER}"
        figures = {}
        for name, route in (("outcomes", "/outcomes"), ("experiment", f"/experiments/{EXPERIMENT}"),
                            ("experimentCsv", f"/experiments/{EXPERIMENT}?format=csv")):
            status, body, _ = service.get(base + route, token)
            if status != 200:
                raise ReportsError(f"{label} {route}: {status} {body[:300]!r}")
            if name == "experiment":
                report = json.loads(body)
                exposed = report["treatment"]["exposures"] + report["holdout"]["exposures"]
                if exposed != EXPOSURES:
                    raise ReportsError(f"{label}: the report counts {exposed} exposures, not {EXPOSURES}")
            times = []
            for _ in range(TIMED):
                status, body, elapsed = service.get(base + route, token)
                if status != 200:
                    raise ReportsError(f"{label} {route}: {status}")
                times.append(elapsed)
            figures[name] = {"medianMs": statistics.median(times), "maxMs": max(times)}
        started = time.perf_counter()
        cli = subprocess.run([binary, "report", "experiment", "--offer", OFFER, "--json", "--config", str(path)],
                             capture_output=True, text=True, timeout=120)
        if cli.returncode != 0:
            raise ReportsError(f"report experiment: {cli.stderr}")
        figures["commandLine"] = {"wallMs": (time.perf_counter() - started) * 1000}
    finally:
        service.stop()
    slowest = max(row["maxMs"] for key, row in figures.items() if key != "commandLine")
    return {"fillSeconds": filled, "reports": figures, "slowestMs": slowest, "met": slowest < TARGET_MS}


def measure_reports(binary: str, directory: Path, base_config: dict, postgres: str | None, bundle_id: str,
                    product_id: str) -> dict:
    """The reports scenario on SQLite, and on PostgreSQL when a DSN is given."""
    config = json.loads(json.dumps(base_config))
    config["admin"] = {"listen": {"host": "127.0.0.1", "port": 0}}
    app = config["apps"][0]
    app["offers"] = [
        {"id": OFFER, "type": "promotional", "productIds": [product_id],
         "experiment": {"id": EXPERIMENT, "start": "2020-01-01T00:00:00Z", "holdoutPercent": 20,
                        "metric": "conversion", "minimumDetectableEffect": 2}},
        {"id": OTHER, "type": "promotional", "productIds": [product_id]},
    ]
    print(f"reports: generating {EXPOSURES + OTHER_EXPOSURES:,} exposures over a year ...", flush=True)
    rows, revenue = exposures(bundle_id, int(time.time() * 1000))
    result = {"exposures": EXPOSURES, "otherExposures": OTHER_EXPOSURES, "revenueRows": len(revenue),
              "targetMs": TARGET_MS}
    backends = [("sqlite", "sqlite:reports.sqlite")]
    if postgres:
        backends.append(("postgresql", postgres))
    for label, storage in backends:
        print(f"reports: {label}: filling the ledger and asking ...", flush=True)
        result[label] = measure_backend(binary, directory, config, storage, label, rows, revenue, bundle_id)
        print(f"reports: {describe({**result, 'sqlite': None, 'postgresql': None, label: result[label]})[0]}",
              flush=True)
    return result


def describe(result: dict) -> list[str]:
    """Lines for the run's output and the report."""
    lines = []
    for label in ("sqlite", "postgresql"):
        if not result.get(label):
            continue
        row = result[label]
        reports = row["reports"]
        lines.append(
            f"{label}: outcomes {reports['outcomes']['medianMs']:.0f} ms (max {reports['outcomes']['maxMs']:.0f}), "
            f"experiment {reports['experiment']['medianMs']:.0f} ms (max {reports['experiment']['maxMs']:.0f}), "
            f"CSV {reports['experimentCsv']['medianMs']:.0f} ms, `report experiment --json` "
            f"{reports['commandLine']['wallMs']:.0f} ms wall: {'met' if row['met'] else 'MISSED'} "
            f"(< {result['targetMs']:.0f} ms)")
    return lines
