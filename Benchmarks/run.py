#!/usr/bin/env python3
"""HTTP benchmarks of offer-signer, reported as ratios to baselines measured in the same run.

Builds nothing: pass the release binary with --bin. Sets up a throwaway deployment with the binary's
own commands (keys generate, testkit ca, testkit sign transaction), serves it on 127.0.0.1 with a
free port, and drives it with wrk (keep-alive). Baselines: GET /livez (the HTTP layer alone) and
`openssl speed -seconds 3 ecdsap256` (one core's ES256 signing rate). See Benchmarks/README.md.

Python 3 standard library only. Sends traffic to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import platform
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HOST = "127.0.0.1"  # the only address this script ever sends traffic to
BUNDLE_ID = "com.example.bench"
PRODUCT_ID = "com.example.pro.monthly"
ISSUER_ID = "57246542-96fe-1a63-e053-0824d011072a"
KEY_ID = "BENCHKEY01"
OPEN_OFFER = "bench_open"  # promotional, requiresVerifiedCustomer false, no rules
RULE_OFFER = "bench_winback_rules"  # promotional, expired >= 30 days
LIMITED_OFFER = "bench_limited"  # promotional, no verified customer needed, a total far above any run (ledger only)
LIMITED_TOTAL = 1_000_000_000
APP_TRANSACTION_ID = "7042895723110001"
DAY_MS = 86_400_000
# Past Apple's longest billing retry (60 days): the transaction alone proves the subscription expired, so the
# verified path is measured through to a signature (a shorter lapse without renewal info is `unknown`: 403).
EXPIRED_DAYS_AGO = 70
OPENSSL_SECONDS = 3

STARTUP_TIMEOUT = 20.0  # seconds to wait for the "listening" line
STOP_TIMEOUT = 20.0  # the server's own grace period is 10 s
COMMAND_TIMEOUT = 60.0  # any one CLI call


class BenchError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Small helpers


def run_command(argv: list[str], timeout: float = COMMAND_TIMEOUT, stdin: str | None = None) -> str:
    """Runs a command to completion (bounded) and returns its stdout; raises with stderr on failure."""
    try:
        done = subprocess.run(
            argv, input=stdin, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as error:
        raise BenchError(f"{' '.join(argv)}: no answer within {timeout:.0f} s") from error
    except OSError as error:
        raise BenchError(f"{argv[0]}: {error}") from error
    if done.returncode != 0:
        raise BenchError(
            f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr.strip() or done.stdout.strip()}"
        )
    return done.stdout


def optional_output(argv: list[str]) -> str | None:
    """First line of a version-like command, or None when it is missing or fails."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0].strip() if text else None


def lua_string(text: str) -> str:
    """A Lua double-quoted string literal holding `text` exactly."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char == "\\":
            out.append("\\\\")
        elif char == '"':
            out.append('\\"')
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\{code:03d}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def b64url_json(segment: str) -> dict:
    return json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))


# ---------------------------------------------------------------------------------------------
# Machine and versions


def machine_info() -> dict:
    model = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if line.lower().startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory_kib = None
    try:
        with open("/proc/meminfo", encoding="utf-8") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    memory_kib = int(line.split()[1])
                    break
    except (OSError, ValueError):
        pass
    nproc = optional_output(["nproc"])
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "nproc": int(nproc) if nproc and nproc.isdigit() else len(os.sched_getaffinity(0)),
        "cpuCount": os.cpu_count(),
        "cpuModel": model,
        "memTotalKiB": memory_kib,
        "kernel": platform.release(),
        "loadAverageAtStart": list(load) if load else None,
    }


def versions(binary: str) -> dict:
    packages = {}
    listing = optional_output(["dpkg-query", "-W", "-f", "${Package}=${Version};", "libmicrohttpd12", "libssl3"])
    if listing:
        for item in listing.split(";"):
            if "=" in item:
                name, version = item.split("=", 1)
                packages[name] = version
    git_dir = Path(__file__).resolve().parent.parent
    commit = optional_output(["git", "-C", str(git_dir), "rev-parse", "HEAD"])
    dirty = optional_output(["git", "-C", str(git_dir), "status", "--porcelain", "--", "Sources", "Package.swift"])
    return {
        "offerSigner": optional_output([binary, "--version"]),
        "wrk": optional_output(["wrk", "-v"]),
        "openssl": optional_output(["openssl", "version"]),
        "python": platform.python_version(),
        "debianPackages": packages,
        "gitCommit": commit,
        "sourcesDirty": bool(dirty),
    }


# ---------------------------------------------------------------------------------------------
# Crypto baseline


def openssl_speed() -> dict:
    output = run_command(
        ["openssl", "speed", "-seconds", str(OPENSSL_SECONDS), "ecdsap256"], timeout=OPENSSL_SECONDS * 2 + 60
    )
    match = re.search(
        r"256 bits ecdsa \(nistp256\)\s+([\d.]+)s\s+([\d.]+)s\s+([\d.]+)\s+([\d.]+)", output
    )
    if not match:
        raise BenchError(f"cannot read `openssl speed` output:\n{output}")
    return {
        "command": f"openssl speed -seconds {OPENSSL_SECONDS} ecdsap256",
        "signPerSecond": float(match.group(3)),
        "verifyPerSecond": float(match.group(4)),
    }


# ---------------------------------------------------------------------------------------------
# Deployment


def make_deployment(binary: str, directory: Path) -> tuple[Path, Path, str]:
    """Writes key, test CA and two configs to `directory` (no ledger; a SQLite ledger with a limited offer);
    returns their paths and a signed transaction."""
    key_file = directory / f"SubscriptionKey_{KEY_ID}.p8"
    run_command([binary, "keys", "generate", "--key-id", KEY_ID, "--out", str(key_file)])
    run_command([binary, "testkit", "ca", "--out", str(directory / "ca")])
    config = {
        "storage": "none",
        "trust": {"rootCertificates": ["ca/root.cer"], "environments": ["Production", "Sandbox"]},
        "apps": [
            {
                "bundleId": BUNDLE_ID,
                "issuerId": ISSUER_ID,
                "keys": [{"keyId": KEY_ID, "privateKeyFile": key_file.name}],
                "offers": [
                    {
                        "id": OPEN_OFFER,
                        "type": "promotional",
                        "productIds": [PRODUCT_ID],
                        "requiresVerifiedCustomer": False,
                    },
                    {
                        "id": RULE_OFFER,
                        "type": "promotional",
                        "productIds": [PRODUCT_ID],
                        "eligibility": {
                            "all": [{"subscriptionStatus": ["expired"]}, {"daysSinceExpiry": {"min": 30}}]
                        },
                    },
                ],
            }
        ],
    }
    config_path = directory / "offer-signer.json"
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    run_command([binary, "config", "check", "--config", str(config_path)])
    # The same app with a SQLite ledger recording every signature, and an offer with a total limit.
    ledger_config = json.loads(json.dumps(config))
    ledger_config["storage"] = "sqlite:ledger.sqlite"
    ledger_config["apps"][0]["offers"].append(
        {
            "id": LIMITED_OFFER,
            "type": "promotional",
            "productIds": [PRODUCT_ID],
            "requiresVerifiedCustomer": False,
            "limits": {"total": LIMITED_TOTAL},
        }
    )
    ledger_path = directory / "offer-signer-sqlite.json"
    ledger_path.write_text(json.dumps(ledger_config, indent=2) + "\n", encoding="utf-8")
    run_command([binary, "config", "check", "--config", str(ledger_path)])

    now = int(time.time() * 1000)
    expires = now - EXPIRED_DAYS_AGO * DAY_MS
    purchase = expires - 30 * DAY_MS
    payload = {
        "transactionId": "2000000000000001",
        "originalTransactionId": "2000000000000001",
        "bundleId": BUNDLE_ID,
        "productId": PRODUCT_ID,
        "subscriptionGroupIdentifier": "21000001",
        "purchaseDate": purchase,
        "originalPurchaseDate": purchase,
        "expiresDate": expires,
        "quantity": 1,
        "type": "Auto-Renewable Subscription",
        "inAppOwnershipType": "PURCHASED",
        "signedDate": now,
        "environment": "Sandbox",
        "transactionReason": "PURCHASE",
        "storefront": "USA",
        "storefrontId": "143441",
        "price": 9990,
        "currency": "USD",
        "appTransactionId": APP_TRANSACTION_ID,
    }
    payload_path = directory / "transaction.json"
    payload_path.write_text(json.dumps(payload), encoding="utf-8")
    signed = run_command(
        [binary, "testkit", "sign", "transaction", "--ca", str(directory / "ca"), "--payload", str(payload_path)]
    ).strip()
    if signed.count(".") != 2:
        raise BenchError(f"testkit sign transaction printed no compact JWS: {signed[:200]!r}")
    return config_path, ledger_path, signed


# ---------------------------------------------------------------------------------------------
# Server process


class Server:
    def __init__(self, binary: str, config: Path, directory: Path):
        self.stderr_path = directory / "server.stderr"
        self.stderr_file = open(self.stderr_path, "wb")
        self.process = subprocess.Popen(
            [binary, "serve", "--config", str(config), "--host", HOST, "--port", "0", "--log-level", "warning"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self.stderr_file,
        )
        try:
            self.port = self._read_port()
        except BaseException:
            self.kill()
            raise
        # Anything else the server prints is drained so it can never block on a full pipe.
        self.extra_stdout: list[bytes] = []
        self._drain = threading.Thread(target=self._drain_stdout, daemon=True)
        self._drain.start()

    def _read_port(self) -> int:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        buffer = b""
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while b"\n" not in buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BenchError(f"the server printed no listening line within {STARTUP_TIMEOUT:.0f} s")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                status = self.process.wait(5)
                raise BenchError(f"the server exited before listening (status {status}):\n{self.stderr()}")
            buffer += chunk
            if len(buffer) > 64 * 1024:
                raise BenchError("the server's first stdout line is over 64 KiB")
        first = buffer.split(b"\n", 1)[0].decode("utf-8", "replace")
        match = re.fullmatch(r"offer-signer listening on http://127\.0\.0\.1:(\d+)", first.strip())
        if not match:
            raise BenchError(f"unexpected first line from the server: {first!r}")
        return int(match.group(1))

    def _drain_stdout(self) -> None:
        assert self.process.stdout is not None
        while True:  # ends at EOF, when the server exits
            chunk = self.process.stdout.read1(4096)
            if not chunk:
                return
            self.extra_stdout.append(chunk)

    def stderr(self) -> str:
        if not self.stderr_file.closed:
            self.stderr_file.flush()
        try:
            return self.stderr_path.read_text(encoding="utf-8", errors="replace")[-4000:]
        except OSError:
            return ""

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server so far (all threads)."""
        try:
            with open(f"/proc/{self.process.pid}/stat", encoding="ascii") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError as error:
            raise BenchError(f"cannot read the server's CPU time: {error}") from error
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime (fields 14 and 15)

    def thread_cpu_seconds(self) -> dict[str, float]:
        """CPU time per server thread (by thread id); threads that vanish are left out."""
        ticks = os.sysconf("SC_CLK_TCK")
        times = {}
        try:
            tasks = os.listdir(f"/proc/{self.process.pid}/task")
        except OSError:
            return times
        for tid in tasks[:4096]:
            try:
                with open(f"/proc/{self.process.pid}/task/{tid}/stat", encoding="ascii") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                times[tid] = (int(fields[11]) + int(fields[12])) / ticks
            except (OSError, ValueError, IndexError):
                continue
        return times

    def thread_count(self) -> int | None:
        try:
            with open(f"/proc/{self.process.pid}/status", encoding="ascii") as status:
                for line in status:
                    if line.startswith("Threads:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return None

    def stop(self) -> int:
        """SIGTERM, then waits (bounded) for the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            status = self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
            raise BenchError(f"the server did not stop within {STOP_TIMEOUT:.0f} s of SIGTERM; killed it")
        finally:
            self._drain.join(5)
            if not self.stderr_file.closed:
                self.stderr_file.close()
        return status

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                pass
        if not self.stderr_file.closed:
            self.stderr_file.close()


# ---------------------------------------------------------------------------------------------
# Scenarios


class Scenario:
    def __init__(self, key: str, label: str, method: str, path: str, body: dict | None, signs: bool,
                 lua: str | None = None):
        self.key = key
        self.label = label
        self.method = method
        self.path = path
        self.body = json.dumps(body, separators=(",", ":")) if body is not None else None
        self.signs = signs
        # wrk's script when the load is not `body` over and over (the preflight still sends `body`).
        self.lua = lua
        # Statuses counted rather than failing the run (the retention deadline's 503).
        self.tolerated: set[str] = set()

    def check_response(self, data: dict) -> None:
        """Checks that a 200 response is the work this scenario means to measure."""
        if self.key in ("promotional_jws", "promotional_verified") or self.key.endswith(("_jws", "_limited")):
            offer = LIMITED_OFFER if self.key.endswith("_limited") else RULE_OFFER if self.key == "promotional_verified" else OPEN_OFFER
            parts = data.get("compactJWS", "").split(".")
            if data.get("format") != "jws" or len(parts) != 3:
                raise BenchError(f"{self.label}: no JWS in the response: {data}")
            claims = b64url_json(parts[1])
            if claims.get("offerIdentifier") != offer:
                raise BenchError(f"{self.label}: the JWS is for offer {claims.get('offerIdentifier')!r}: {claims}")
            # The service names the customer by the verified appTransactionId of the transaction.
            if self.key == "promotional_verified" and claims.get("transactionId") != APP_TRANSACTION_ID:
                raise BenchError(f"{self.label}: the JWS does not name the verified customer: {claims}")
        elif self.key == "promotional_legacy":
            if data.get("format") != "legacy" or not data.get("signature"):
                raise BenchError(f"{self.label}: no legacy signature in the response: {data}")
        elif self.key == "eligibility":
            offers = {item.get("offerId") for item in data.get("promotionalOffers", [])}
            if offers != {OPEN_OFFER, RULE_OFFER}:
                raise BenchError(f"{self.label}: expected both promotional offers eligible, got {data}")
        elif self.key == "livez":
            if data.get("status") != "ok":
                raise BenchError(f"{self.label}: unexpected body {data}")
        elif self.key.startswith("retention"):
            if data != {"alternateProduct": {"messageIdentifier": RETENTION_MESSAGE, "productId": RETENTION_SWITCH}}:
                raise BenchError(f"{self.label}: not the answer the customer's server-known state leads to: {data}")


def scenarios(signed_transaction: str) -> list[Scenario]:
    offer = {"bundleId": BUNDLE_ID, "productId": PRODUCT_ID, "offerId": OPEN_OFFER}
    return [
        Scenario("livez", "GET /livez (HTTP baseline)", "GET", "/livez", None, False),
        Scenario(
            "promotional_jws", "POST promotional-offer JWS", "POST", "/v1/signatures/promotional-offer", offer, True
        ),
        Scenario(
            "promotional_legacy",
            "POST promotional-offer legacy",
            "POST",
            "/v1/signatures/promotional-offer",
            {**offer, "format": "legacy"},
            True,
        ),
        Scenario(
            "promotional_verified",
            "POST promotional-offer + signedTransaction",
            "POST",
            "/v1/signatures/promotional-offer",
            {
                "bundleId": BUNDLE_ID,
                "productId": PRODUCT_ID,
                "offerId": RULE_OFFER,
                "signedTransaction": signed_transaction,
            },
            True,
        ),
        Scenario(
            "eligibility",
            "POST /v1/eligibility + signedTransaction",
            "POST",
            "/v1/eligibility",
            {"bundleId": BUNDLE_ID, "signedTransaction": signed_transaction},
            False,
        ),
    ]


def ledger_scenarios(backend: str = "sqlite", name: str = "SQLite") -> list[Scenario]:
    """Against a server with a ledger: every signature recorded before it is answered."""
    return [
        Scenario(
            f"{backend}_jws",
            f"POST promotional-offer JWS, {name} ledger",
            "POST",
            "/v1/signatures/promotional-offer",
            {"bundleId": BUNDLE_ID, "productId": PRODUCT_ID, "offerId": OPEN_OFFER},
            True,
        ),
        Scenario(
            f"{backend}_limited",
            f"POST promotional-offer JWS, limited, {name}",
            "POST",
            "/v1/signatures/promotional-offer",
            {"bundleId": BUNDLE_ID, "productId": PRODUCT_ID, "offerId": LIMITED_OFFER},
            True,
        ),
    ]


# Every scenario key, in the order a run measures them.
ALL_KEYS = [
    "livez", "promotional_jws", "promotional_legacy", "promotional_verified", "eligibility",
    "sqlite_jws", "sqlite_limited", "postgresql_jws", "postgresql_limited", "retention", "retention_half",
]


# Each ledger scenario's req/s over promotional_jws's (no ledger), by its name in the JSON results.
SHARES = {
    "sqlite_jws": ("sqliteToNoLedger", "SQLite"),
    "sqlite_limited": ("limitedToNoLedger", "a limited offer on SQLite"),
    "postgresql_jws": ("postgresqlToNoLedger", "PostgreSQL"),
    "postgresql_limited": ("postgresqlLimitedToNoLedger", "a limited offer on PostgreSQL"),
}


def ledger_rows(path: Path) -> int:
    """Signatures in the ledger file, read with Python's own sqlite3 (an independent reader)."""
    import sqlite3

    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        return connection.execute("SELECT count(*) FROM issued_signatures").fetchone()[0]


def preflight(port: int, scenario: Scenario) -> None:
    """Three requests on one connection: each must be 200 with the right body, and keep-alive must hold.

    http.client talks to 127.0.0.1 directly (no proxy from the environment)."""
    connection = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        first_socket = None
        for attempt in range(3):
            headers = {"Content-Type": "application/json"} if scenario.body is not None else {}
            connection.request(scenario.method, scenario.path, body=scenario.body, headers=headers)
            response = connection.getresponse()
            raw = response.read()
            if response.status != 200:
                raise BenchError(f"{scenario.label}: status {response.status}: {raw[:500]!r}")
            try:
                data = json.loads(raw)
            except ValueError as error:
                raise BenchError(f"{scenario.label}: response is not JSON: {raw[:200]!r}") from error
            scenario.check_response(data)
            if response.will_close:
                raise BenchError(f"{scenario.label}: the server closes the connection after a 200 (no keep-alive)")
            if attempt == 0:
                first_socket = connection.sock
            elif connection.sock is not first_socket:
                raise BenchError(f"{scenario.label}: the connection was not reused")
    finally:
        connection.close()


def request_counts(port: int) -> dict[tuple[str, str], int]:
    """The server's own per-route, per-status request counters from GET /metrics."""
    connection = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        connection.request("GET", "/metrics")
        response = connection.getresponse()
        text = response.read().decode("utf-8", "replace")
        if response.status != 200:
            raise BenchError(f"GET /metrics: status {response.status}")
    finally:
        connection.close()
    counts = {}
    for match in re.finditer(
        r'^offer_signer_http_requests_total\{route="([^"]*)",status="(\d+)"\} (\d+)$', text, re.MULTILINE
    ):
        counts[(match.group(1), match.group(2))] = int(match.group(3))
    return counts


LEDGER_COMMIT_FIGURES = {
    "commits": "offer_signer_ledger_commits_total",
    "records": "offer_signer_ledger_records_total",
    "microseconds": "offer_signer_ledger_commit_microseconds_total",
}


def ledger_commit_figures(port: int) -> dict[str, float]:
    """The ledger's group commit counters from GET /metrics (all backends together; a server has one ledger)."""
    connection = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        connection.request("GET", "/metrics")
        response = connection.getresponse()
        text = response.read().decode("utf-8", "replace")
        if response.status != 200:
            raise BenchError(f"GET /metrics: status {response.status}")
    finally:
        connection.close()
    figures = {}
    for key, name in LEDGER_COMMIT_FIGURES.items():
        values = re.findall(rf"^{name}(?:\{{[^}}]*\}})? (\S+)$", text, re.MULTILINE)
        figures[key] = sum(float(value) for value in values)
    return figures


def settled_counts(port: int) -> dict:
    """The counters once the previous run's last requests are counted: wrk stops with requests still in the
    server, which finish (and are counted) after it exits. Two equal reads 50 ms apart (ignoring /metrics)."""
    def without_metrics(counts: dict) -> dict:
        return {key: n for key, n in counts.items() if key[0] != "/metrics"}

    previous = without_metrics(request_counts(port))
    for _ in range(100):
        time.sleep(0.05)
        current = without_metrics(request_counts(port))
        if current == previous:
            break
        previous = current
    return request_counts(port)


# ---------------------------------------------------------------------------------------------
# wrk


DURATION_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}


def to_ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text)
    if not match:
        raise BenchError(f"cannot read wrk latency {text!r}")
    return float(match.group(1)) * DURATION_UNITS[match.group(2)]


def write_script(directory: Path, scenario: Scenario) -> Path | None:
    if scenario.lua is not None:
        script = directory / f"{scenario.key}.lua"
        script.write_text(scenario.lua, encoding="utf-8")
        return script
    if scenario.body is None:
        return None
    script = directory / f"{scenario.key}.lua"
    script.write_text(
        f"wrk.method = {lua_string(scenario.method)}\n"
        f'wrk.headers["Content-Type"] = "application/json"\n'
        f"wrk.body = {lua_string(scenario.body)}\n",
        encoding="utf-8",
    )
    return script


def parse_wrk(output: str, label: str) -> dict:
    rate = re.search(r"^Requests/sec:\s+([\d.]+)", output, re.MULTILINE)
    total = re.search(r"^\s*(\d+) requests in ([\d.]+\w+), ([\d.]+\w+) read", output, re.MULTILINE)
    p50 = re.search(r"^\s+50%\s+(\S+)", output, re.MULTILINE)
    p99 = re.search(r"^\s+99%\s+(\S+)", output, re.MULTILINE)
    if not (rate and total and p50 and p99):
        raise BenchError(f"{label}: cannot read wrk's report:\n{output}")
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    names = ("connect", "read", "write", "timeout")
    errors = dict(zip(names, map(int, socket_errors.groups()) if socket_errors else (0, 0, 0, 0)))
    return {
        "requestsPerSecond": float(rate.group(1)),
        "requests": int(total.group(1)),
        "p50Ms": to_ms(p50.group(1)),
        "p99Ms": to_ms(p99.group(1)),
        "non2xx3xx": int(non_2xx.group(1)) if non_2xx else 0,
        "socketErrors": errors,
    }


def run_wrk(args: argparse.Namespace, port: int, scenario: Scenario, directory: Path, server: Server) -> dict:
    script = write_script(directory, scenario)
    argv = [
        "wrk",
        f"-t{args.threads}",
        f"-c{args.connections}",
        f"-d{args.duration}s",
        "--latency",
    ]
    if script is not None:
        argv += ["-s", str(script)]
    argv.append(f"http://{HOST}:{port}{scenario.path}")

    before_counts = settled_counts(port)
    commits_before = ledger_commit_figures(port)
    cpu_before = server.cpu_seconds()
    threads_before = server.thread_cpu_seconds()
    wall_before = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=args.duration + 60, check=False)
    except subprocess.TimeoutExpired as error:
        raise BenchError(f"{scenario.label}: wrk did not finish within {args.duration + 60} s") from error
    wall = time.monotonic() - wall_before
    cpu = server.cpu_seconds() - cpu_before
    threads_after = server.thread_cpu_seconds()
    if done.returncode != 0:
        raise BenchError(f"{scenario.label}: wrk exited {done.returncode}:\n{done.stderr}{done.stdout}")
    if server.process.poll() is not None:
        raise BenchError(f"{scenario.label}: the server exited ({server.process.returncode}):\n{server.stderr()}")
    result = parse_wrk(done.stdout, scenario.label)
    result["serverCores"] = cpu / wall if wall > 0 else None
    # Cores used by each busy server thread, busiest first: shows whether both workers share the load.
    per_thread = sorted(
        ((threads_after[tid] - threads_before.get(tid, 0.0)) / wall for tid in threads_after if wall > 0),
        reverse=True,
    )
    result["serverThreadCores"] = [round(value, 3) for value in per_thread if value >= 0.01]

    # Group commit during the run: transactions, records per transaction and the time each took (flush included).
    commits_after = ledger_commit_figures(port)
    commits = commits_after["commits"] - commits_before["commits"]
    if commits > 0:
        result["ledgerCommits"] = {
            "commits": int(commits),
            "meanGroup": (commits_after["records"] - commits_before["records"]) / commits,
            "meanCommitMs": (commits_after["microseconds"] - commits_before["microseconds"]) / commits / 1000,
        }

    # Statuses, exactly: wrk counts only >= 400, so the server's own counters are checked too.
    after_counts = request_counts(port)
    by_status: dict[str, int] = {}
    for (route, status), count in after_counts.items():
        moved = count - before_counts.get((route, status), 0)
        if moved and route != "/metrics":
            by_status[f"{route} {status}"] = moved
    result["serverStatuses"] = by_status
    route = RETENTION_ROUTE if scenario.key.startswith("retention") else scenario.path
    # A retention answer not ready in 300 ms is a 503 by design (Apple shows its default message): counted, not a
    # failure of the run.
    tolerated = {f"{route} {status}" for status in scenario.tolerated}
    unexpected = {key: n for key, n in by_status.items() if key != f"{route} 200" and key not in tolerated}
    tolerated_count = sum(n for key, n in by_status.items() if key in tolerated)
    result["toleratedAnswers"] = tolerated_count
    if result["non2xx3xx"] > tolerated_count or unexpected:
        raise BenchError(
            f"{scenario.label}: unexpected statuses (only 200 is expected): wrk non-2xx/3xx "
            f"{result['non2xx3xx']}, server counters {unexpected or by_status}\n{done.stdout}"
        )
    result["wrkOutput"] = done.stdout
    return result


# ---------------------------------------------------------------------------------------------
# Retention Messaging: Apple's real-time request, decided on the customer's server-known state

RETENTION_ROUTE = "/v1/apple/retention/{bundleId}"
RETENTION_CUSTOMER = "2000000000000077"
RETENTION_OFFER = "bench_retention_stay"  # promotional, for subscribers of 365 days or more: not this one
RETENTION_SWITCH = "com.example.pro.yearly"
RETENTION_MESSAGE = "6e87b843-9962-4624-a273-9064fb1c1453"
RETENTION_P99_TARGET_MS = 20.0


def retention_deployment(binary: str, directory: Path, ledger_config_path: Path,
                         counts: dict[str, int]) -> tuple[Path, str, str]:
    """The ledger deployment's app with a retention list (the offer for long subscribers, else a switch to yearly for
    those who renew automatically) on a SQLite ledger of its own; Apple's notification that makes the customer's state
    server-known; and retention requests of that customer, each with its own requestIdentifier: one for the
    preflight, then for each run of `counts` (name: how many) a file `retention-NAME.txt` of that many bodies, one per
    line. Returns the config, the notification and the preflight request."""
    config = json.loads(ledger_config_path.read_text(encoding="utf-8"))
    config["storage"] = "sqlite:retention.sqlite"
    app = config["apps"][0]
    app["offers"].append({"id": RETENTION_OFFER, "type": "promotional", "productIds": [PRODUCT_ID],
                          "eligibility": {"daysSubscribed": {"min": 365}}})
    app["retention"] = [
        {"productIds": [PRODUCT_ID], "when": {"subscriptionStatus": ["active"]},
         "promotionalOffer": {"offerId": RETENTION_OFFER, "productId": PRODUCT_ID,
                              "messages": {"en-US": "eec08e5d-b59a-4672-b799-8cf40e919a4f"}}},
        {"productIds": [PRODUCT_ID], "when": {"autoRenew": True},
         "alternateProduct": {"productId": RETENTION_SWITCH, "messages": {"*": RETENTION_MESSAGE}}},
    ]
    path = directory / "offer-signer-retention.json"
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    run_command([binary, "config", "check", "--config", str(path)])

    now = int(time.time() * 1000)
    transaction = {
        "transactionId": RETENTION_CUSTOMER + "1", "originalTransactionId": RETENTION_CUSTOMER,
        "bundleId": BUNDLE_ID, "productId": PRODUCT_ID, "subscriptionGroupIdentifier": "21000001",
        "purchaseDate": now - 10 * DAY_MS, "originalPurchaseDate": now - 100 * DAY_MS,
        "expiresDate": now + 20 * DAY_MS, "quantity": 1, "type": "Auto-Renewable Subscription",
        "inAppOwnershipType": "PURCHASED", "signedDate": now, "environment": "Sandbox",
        "transactionReason": "RENEWAL", "storefront": "USA", "storefrontId": "143441",
    }
    renewal = {
        "originalTransactionId": RETENTION_CUSTOMER, "productId": PRODUCT_ID, "autoRenewProductId": PRODUCT_ID,
        "autoRenewStatus": 1, "isInBillingRetryPeriod": False, "signedDate": now, "environment": "Sandbox",
        "recentSubscriptionStartDate": now - 100 * DAY_MS,
    }
    (directory / "retention-transaction.json").write_text(json.dumps(transaction), encoding="utf-8")
    (directory / "retention-renewal.json").write_text(json.dumps(renewal), encoding="utf-8")
    notification = run_command([
        binary, "testkit", "sign", "notification", "--ca", str(directory / "ca"), "--type", "DID_RENEW",
        "--transaction", str(directory / "retention-transaction.json"),
        "--renewal-info", str(directory / "retention-renewal.json"),
    ]).strip()
    total = 1 + sum(counts.values())
    requests = run_command([
        binary, "testkit", "sign", "retention-request", "--ca", str(directory / "ca"),
        "--original-transaction-id", RETENTION_CUSTOMER, "--product-id", PRODUCT_ID, "--count", str(total),
    ], timeout=COMMAND_TIMEOUT * 4).split()
    if len(requests) != total or any(token.count(".") != 2 for token in requests):
        raise BenchError(f"testkit sign retention-request --count {total} printed no {total} JWS")
    first = 1
    for name, count in counts.items():
        (directory / f"retention-{name}.txt").write_text(
            "".join(json.dumps({"signedPayload": token}) + "\n" for token in requests[first:first + count]),
            encoding="utf-8")
        first += count
    return path, notification, requests[0]


def retention_lua(bodies: Path, path: str, threads: int, delay_ms: int | None = None) -> str:
    """wrk's script: every thread formats its share of the request bodies in `bodies` once, at start (so sending one
    costs wrk no more than a fixed body), and sends each once (thread i the lines i, i + threads, ...): every request
    has its own requestIdentifier until the thread's share is spent (then it starts again, and the service answers
    Apple's "retries" from its memory of its answers: counted as repeated). `delay_ms` spaces each connection's
    requests out, for a load below the peak."""
    delay = f"function delay() return {delay_ms} end\n" if delay_ms else ""
    return f"""local created = 0
function setup(thread)
  thread:set("first", created)
  created = created + 1
end
function init(args)
  requests = {{}}
  local line_number = 0
  for line in io.lines({lua_string(str(bodies))}) do
    if line_number % {threads} == first then
      requests[#requests + 1] = wrk.format("POST", {lua_string(path)}, {{["Content-Type"] = "application/json"}}, line)
    end
    line_number = line_number + 1
  end
  position = 0
end
function request()
  position = position + 1
  return requests[((position - 1) % #requests) + 1]
end
{delay}"""


def measure_retention(args: argparse.Namespace, binary: str, directory: Path, ledger_config_path: Path,
                      results: dict) -> tuple[list[Scenario], dict, str]:
    """Serves the retention deployment, feeds Apple's notification, then loads `POST /v1/apple/retention/{bundleId}`
    at its peak (wrk -c connections, as the other scenarios) and again at half that rate (each connection's requests
    spaced out): p50, p99 and throughput, and the p99 at half load against the 20 ms target."""
    # Enough requests for a peak of 5,000 a second, and half of it; the report says if they ran out.
    counts = {"peak": 5000 * args.duration, "half": 2500 * args.duration}
    config, notification, preflight_request = retention_deployment(binary, directory, ledger_config_path, counts)
    path = f"/v1/apple/retention/{BUNDLE_ID}"
    peak = Scenario("retention", "POST retention, server-known state", "POST", path,
                    {"signedPayload": preflight_request}, False,
                    lua=retention_lua(directory / "retention-peak.txt", path, args.threads))
    peak.tolerated = {"503"}
    server = Server(binary, config, directory)
    try:
        connection = http.client.HTTPConnection(HOST, server.port, timeout=10)
        try:
            connection.request("POST", f"/v1/apple/notifications/{BUNDLE_ID}",
                               body=json.dumps({"signedPayload": notification}),
                               headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            answer = response.read()
            if response.status != 200:
                raise BenchError(f"the notification was not recorded: {response.status} {answer[:300]!r}")
        finally:
            connection.close()
        preflight(server.port, peak)
        print(f"{peak.label} ...", flush=True)
        result = run_wrk(args, server.port, peak, directory, server)
        results[peak.key] = {"label": peak.label, "method": peak.method, "path": peak.path, **result}
        # Half the peak rate: each of the connections sends one request every `interval` ms.
        target = result["requestsPerSecond"] / 2
        interval = max(1, round(args.connections * 1000 / target))
        half = Scenario("retention_half", f"POST retention at half load ({target:.0f}/s)", "POST", path,
                        {"signedPayload": preflight_request}, False,
                        lua=retention_lua(directory / "retention-half.txt", path, args.threads, interval))
        half.tolerated = {"503"}
        print(f"{half.label} ...", flush=True)
        half_result = run_wrk(args, server.port, half, directory, server)
        results[half.key] = {"label": half.label, "method": half.method, "path": half.path, **half_result}
        repeated = retention_answers(server.port).get("repeated", 0)
    except BaseException:
        try:
            server.stop()
        except BenchError:
            pass
        server.kill()
        raise
    status = server.stop()
    stderr = server.stderr()
    if status != 0:
        raise BenchError(f"the retention server exited {status} after SIGTERM (expected 0):\\n{stderr}")
    summary = {
        "peakRequestsPerSecond": result["requestsPerSecond"],
        "p50Ms": result["p50Ms"],
        "p99Ms": result["p99Ms"],
        "halfLoad": {
            "targetRequestsPerSecond": target,
            "achievedRequestsPerSecond": half_result["requestsPerSecond"],
            "connectionIntervalMs": interval,
            "p50Ms": half_result["p50Ms"],
            "p99Ms": half_result["p99Ms"],
            "deadlineAnswers": half_result["toleratedAnswers"],
        },
        # Answered 503 deadline_exceeded: not ready within 300 ms.
        "deadlineAnswers": result["toleratedAnswers"],
        "p99TargetMs": RETENTION_P99_TARGET_MS,
        "p99TargetMet": half_result["p99Ms"] < RETENTION_P99_TARGET_MS,
        "requestsPrepared": counts,
        # Answered from the memory of earlier answers: the prepared requests ran out (3 are the preflight's).
        "repeatedAnswers": max(0, repeated - 2),
    }
    return [peak, half], summary, stderr


def retention_answers(port: int) -> dict[str, int]:
    """offer_signer_retention_answers_total by answer, from GET /metrics."""
    connection = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        connection.request("GET", "/metrics")
        response = connection.getresponse()
        text = response.read().decode("utf-8", "replace")
    finally:
        connection.close()
    answers: dict[str, int] = {}
    for answer, value in re.findall(r'^offer_signer_retention_answers_total\{[^\n]*answer="([a-z_]+)"[^\n]*\} (\d+)$',
                                    text, re.MULTILINE):
        answers[answer] = answers.get(answer, 0) + int(value)
    return answers


# ---------------------------------------------------------------------------------------------
# Report


def print_table(results: dict, baseline_sign: float) -> None:
    livez = results["livez"]["requestsPerSecond"]
    header = (
        f"{'endpoint':<44} {'req/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'/livez':>7} {'/openssl':>9}"
        f"  server cores (by thread)"
    )
    print(header)
    print("-" * len(header))
    for result in results.values():
        rate = result["requestsPerSecond"]
        cores = result.get("serverCores")
        split = "+".join(f"{value:.2f}" for value in result.get("serverThreadCores", [])[:4])
        print(
            f"{result['label']:<44} {rate:>10.0f} {result['p50Ms']:>8.3f} {result['p99Ms']:>8.3f} "
            f"{rate / livez:>7.3f} {rate / baseline_sign:>9.3f}  {cores:.2f} ({split})"
        )
    ledger = [result for result in results.values() if "ledgerCommits" in result]
    if ledger:
        print("\ngroup commit (from the server's /metrics): transactions, signatures per transaction, time per commit")
        for result in ledger:
            figures = result["ledgerCommits"]
            print(
                f"  {result['label']:<46} {figures['commits']:>7} commits  {figures['meanGroup']:>5.1f} per group  "
                f"{figures['meanCommitMs']:>6.2f} ms each"
            )
    for result in results.values():
        errors = {name: count for name, count in result["socketErrors"].items() if count}
        if errors:
            print(f"warning: {result['label']}: wrk socket errors {errors}")
    print(
        f"\nopenssl speed -seconds {OPENSSL_SECONDS} ecdsap256: {baseline_sign:.0f} sign/s on one core. "
        "Server cores: the server's CPU time / wall time during the run, split by thread (wrk shares the machine)."
    )


def serve_and_measure(
    args: argparse.Namespace, binary: str, config: Path, directory: Path, plan: list[Scenario], results: dict
) -> tuple[int | None, dict, str]:
    """Serves `config`, preflights and loads every scenario of `plan` into `results`, and stops the server (exit
    status 0 required). Returns the server's thread count, its settled request counts and its stderr."""
    server = Server(binary, config, directory)
    try:
        threads = server.thread_count()
        for scenario in plan:
            preflight(server.port, scenario)
        for scenario in plan:
            print(f"{scenario.label} ...", flush=True)
            result = run_wrk(args, server.port, scenario, directory, server)
            results[scenario.key] = {"label": scenario.label, "method": scenario.method, "path": scenario.path, **result}
        counts = settled_counts(server.port)
    except BaseException:
        # Abort: still try a graceful stop, then make sure the server is gone.
        try:
            server.stop()
        except BenchError:
            pass
        server.kill()
        raise
    status = server.stop()
    stderr = server.stderr()
    if status != 0:
        raise BenchError(f"the server ({config.name}) exited {status} after SIGTERM (expected 0):\n{stderr}")
    return threads, counts, stderr


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="the release binary, e.g. .build/release/offer-signer")
    parser.add_argument("--duration", type=int, default=5, help="seconds per endpoint (default 5)")
    parser.add_argument("--connections", type=int, default=32, help="wrk keep-alive connections (default 32)")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads (default 2)")
    parser.add_argument(
        "--postgres",
        default=os.environ.get("OFFER_SIGNER_TEST_POSTGRES"),
        help="a PostgreSQL DSN for the PostgreSQL ledger scenarios (default: $OFFER_SIGNER_TEST_POSTGRES, which "
        "`make bench` sets to a throwaway cluster); without one they are left out",
    )
    parser.add_argument(
        "--out",
        default=str(Path(__file__).resolve().parent / "results" / "latest.json"),
        help="where to write the JSON results (default Benchmarks/results/latest.json)",
    )
    parser.add_argument(
        "--only",
        type=lambda text: [key.strip() for key in text.split(",") if key.strip()],
        help="run only these scenarios, comma-separated keys (" + ", ".join(ALL_KEYS) + "); livez, the baseline, "
        "always runs, and a ledger's share needs promotional_jws in the same run",
    )
    args = parser.parse_args(argv)
    if args.only is not None:
        unknown = [key for key in args.only if key not in ALL_KEYS]
        if unknown or not args.only:
            parser.error(f"--only: unknown scenario {', '.join(unknown) or '(none given)'}; known: {', '.join(ALL_KEYS)}")
    if not 1 <= args.duration <= 3600:
        parser.error("--duration must be 1 to 3600 seconds")
    if not 1 <= args.threads <= 256:
        parser.error("--threads must be 1 to 256")
    if not args.threads <= args.connections <= 10_000:
        parser.error("--connections must be at least --threads and at most 10000")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    binary = str(Path(args.bin).resolve())
    if not os.access(binary, os.X_OK):
        print(f"error: {args.bin} is not an executable; build it first: swift build -c release", file=sys.stderr)
        return 2
    for tool, hint in (("wrk", "apt-get install wrk (make deps)"), ("openssl", "apt-get install openssl")):
        if shutil.which(tool) is None:
            print(f"error: {tool} is not installed; {hint}", file=sys.stderr)
            return 2

    started = time.time()
    machine = machine_info()
    tool_versions = versions(binary)
    print(f"machine: {machine['nproc']} cores, {machine['cpuModel']}; {tool_versions['offerSigner']}")
    print(f"wrk -t{args.threads} -c{args.connections} -d{args.duration}s --latency (keep-alive), per endpoint\n")

    try:
        with tempfile.TemporaryDirectory(prefix="offer-signer-bench-") as temp:
            directory = Path(temp)
            print(f"openssl speed -seconds {OPENSSL_SECONDS} ecdsap256 ...", flush=True)
            crypto = openssl_speed()
            config_path, ledger_path, signed_transaction = make_deployment(binary, directory)
            chosen = set(args.only or ALL_KEYS) | {"livez"}
            plan = [scenario for scenario in scenarios(signed_transaction) if scenario.key in chosen]
            results: dict[str, dict] = {}
            threads, _, server_stderr = serve_and_measure(args, binary, config_path, directory, plan, results)

            # The same signatures with a SQLite ledger that records each one before it is answered.
            recording: dict = {}
            ledger_plan = [scenario for scenario in ledger_scenarios() if scenario.key in chosen]
            if ledger_plan:
                plan += ledger_plan
                _, counts, ledger_stderr = serve_and_measure(
                    args, binary, ledger_path, directory, ledger_plan, results
                )
                server_stderr += ledger_stderr
                answered = counts.get(("/v1/signatures/promotional-offer", "200"), 0)
                rows = ledger_rows(directory / "ledger.sqlite")
                # Every answered signature is recorded; wrk's last requests at each stop may be recorded and never
                # answered (the client was gone), at most one per connection per endpoint.
                in_flight = args.connections * len(ledger_plan)
                if not answered <= rows <= answered + in_flight:
                    raise BenchError(
                        f"the ledger holds {rows} signatures for {answered} answered with 200 "
                        f"(expected between {answered} and {answered + in_flight})"
                    )
                recording = {"signaturesAnswered": answered, "signaturesInLedger": rows}
            pg_plan = [scenario for scenario in ledger_scenarios("postgresql", "PostgreSQL") if scenario.key in chosen]
            if args.postgres and pg_plan:
                # The same on a PostgreSQL ledger (the database the DSN names; its tables are created at start).
                pg_config = json.loads(ledger_path.read_text(encoding="utf-8"))
                pg_config["storage"] = args.postgres
                pg_path = directory / "offer-signer-postgresql.json"
                pg_path.write_text(json.dumps(pg_config, indent=2) + "\n", encoding="utf-8")
                plan += pg_plan
                _, _, pg_stderr = serve_and_measure(args, binary, pg_path, directory, pg_plan, results)
                server_stderr += pg_stderr
            # What recording costs: each ledger scenario's req/s as a share of the same signatures unrecorded.
            for key, (name, _) in SHARES.items():
                if key in results and "promotional_jws" in results:
                    recording[name] = (
                        results[key]["requestsPerSecond"] / results["promotional_jws"]["requestsPerSecond"]
                    )
            # Retention Messaging on the customer's server-known state, at its peak and at half of it.
            retention: dict = {}
            if chosen & {"retention", "retention_half"}:
                retention_plan, retention, retention_stderr = measure_retention(
                    args, binary, directory, ledger_path, results)
                plan += retention_plan
                server_stderr += retention_stderr
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1

    livez = results["livez"]["requestsPerSecond"]
    sign_rate = crypto["signPerSecond"]
    for key, result in results.items():
        result["ratioToLivez"] = result["requestsPerSecond"] / livez
        result["ratioToOpensslSign"] = result["requestsPerSecond"] / sign_rate
        result["signs"] = next(s.signs for s in plan if s.key == key)

    print()
    print_table(results, sign_rate)
    if "signaturesInLedger" in recording:
        print(
            f"\nledger: {recording['signaturesInLedger']} signatures in the SQLite file for "
            f"{recording['signaturesAnswered']} answered (wrk's last requests may be recorded unanswered)"
        )
    shares = [(name, label) for name, label in SHARES.values() if name in recording]
    if shares:
        print(
            "recording every signature runs at this share of the throughput without a ledger: "
            + ", ".join(f"{label} {recording[name]:.2f}" for name, label in shares)
        )
    if retention:
        half = retention["halfLoad"]
        print(
            f"\nretention (server-known state): {retention['peakRequestsPerSecond']:.0f} req/s at peak, p50 "
            f"{retention['p50Ms']:.2f} ms, p99 {retention['p99Ms']:.2f} ms; at half load "
            f"({half['achievedRequestsPerSecond']:.0f} req/s) p50 {half['p50Ms']:.2f} ms, p99 {half['p99Ms']:.2f} ms "
            f"(target < {RETENTION_P99_TARGET_MS:.0f} ms: {'met' if retention['p99TargetMet'] else 'NOT MET'})"
            + (f"; {retention['repeatedAnswers']} repeated answers (the prepared requests ran out)"
               if retention["repeatedAnswers"] else "")
            + (f"; 503 deadline_exceeded: {retention['deadlineAnswers']} at peak, "
               f"{half['deadlineAnswers']} at half load" if retention["deadlineAnswers"] or half["deadlineAnswers"]
               else "")
        )
    if server_stderr.strip():
        print(f"\nserver stderr:\n{server_stderr.strip()[-2000:]}")

    report = {
        "schema": 1,
        "startedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "machine": machine,
        "versions": tool_versions,
        "settings": {
            "duration": args.duration,
            "connections": args.connections,
            "threads": args.threads,
            "keepAlive": True,
            "serverThreads": threads,
            "scenarios": [key for key in ALL_KEYS if key in results],
        },
        "baselines": {"openssl": crypto, "livezRequestsPerSecond": livez},
        "endpoints": results,
        "ledger": recording,
        "retention": retention,
        "ratios": {
            key: {"toLivez": result["ratioToLivez"], "toOpensslSign": result["ratioToOpensslSign"]}
            for key, result in results.items()
            if key != "livez"
        },
        "serverStoppedWithStatus": 0,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
