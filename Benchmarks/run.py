#!/usr/bin/env python3
"""HTTP benchmarks of offer-signer, reported as ratios to baselines measured in the same run.

Builds nothing: pass the release binary with --bin. Sets up a throwaway deployment with the binary's
own commands (keys generate; offer-signer-testkit's ca and sign transaction), serves it on 127.0.0.1 with a
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
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import ledger_fill  # Benchmarks/ledger_fill.py: a ledger of a million customers' signatures
import report as report_files  # Benchmarks/report.py: report.md and the charts
import reports as report_scenario  # Benchmarks/reports.py: the outcome and experiment reports over 1M exposures

HOST = "127.0.0.1"  # the only address this script ever sends traffic to
BUNDLE_ID = "com.example.bench"
PRODUCT_ID = "com.example.pro.monthly"
ISSUER_ID = "57246542-96fe-1a63-e053-0824d011072a"
KEY_ID = "BENCHKEY01"
OPEN_OFFER = "bench_open"  # promotional, requiresVerifiedCustomer false, no rules
RULE_OFFER = "bench_winback_rules"  # promotional, expired >= 30 days
LIMITED_OFFER = "bench_limited"  # promotional, no verified customer needed, a total far above any run (ledger only)
LIMITED_TOTAL = 1_000_000_000
# The PostgreSQL scenarios run this many replicas on one database, sharing the limited offer's budget (leases).
PG_REPLICAS = 3
INTRO_OFFER = "bench_intro"  # introductoryOffer, expired >= 30 days
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
        "swift": optional_output(["swift", "--version"]),
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


def make_deployment(binary: str, testkit: str, directory: Path) -> tuple[Path, Path, str]:
    """Writes key, test CA (made by `testkit`, offer-signer-testkit) and two configs to `directory` (no ledger; a
    SQLite ledger with a limited offer); returns their paths and a signed transaction."""
    key_file = directory / f"SubscriptionKey_{KEY_ID}.p8"
    run_command([binary, "keys", "generate", "--key-id", KEY_ID, "--out", str(key_file)])
    run_command([testkit, "ca", "--out", str(directory / "ca")])
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
                    {
                        "id": INTRO_OFFER,
                        "type": "introductoryOffer",
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

    signed = run_command(
        [testkit, "sign", "transaction", "--ca", str(directory / "ca"), "--payload", "-"],
        stdin=json.dumps(expired_transaction("2000000000000001", APP_TRANSACTION_ID)),
    ).strip()
    if signed.count(".") != 2:
        raise BenchError(f"offer-signer-testkit sign transaction printed no compact JWS: {signed[:200]!r}")
    return config_path, ledger_path, signed


def expired_transaction(original_transaction_id: str, app_transaction_id: str) -> dict:
    """A monthly subscription's last transaction, expired EXPIRED_DAYS_AGO days ago."""
    now = int(time.time() * 1000)
    expires = now - EXPIRED_DAYS_AGO * DAY_MS
    purchase = expires - 30 * DAY_MS
    return {
        "transactionId": original_transaction_id,
        "originalTransactionId": original_transaction_id,
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
        "appTransactionId": app_transaction_id,
    }


class Customers:
    """Distinct customers' signed transactions and renewal infos, as request bodies for the verified scenario: one
    JSON body a line in `bodies`, each a different customer (its own originalTransactionId and appTransactionId)
    whose subscription expired EXPIRED_DAYS_AGO days ago and does not renew. All are signed by the same test leaf,
    so the chain cache is warm after the first request while every request verifies and decides for another
    customer."""

    def __init__(self, testkit: str, directory: Path, count: int):
        self.count = count
        self.bodies = directory / "verified-bodies.txt"
        now = int(time.time() * 1000)
        ca = str(directory / "ca")

        def sign(kind: str, payload: dict) -> str:
            token = run_command([testkit, "sign", kind, "--ca", ca, "--payload", "-"],
                                stdin=json.dumps(payload)).strip()
            if token.count(".") != 2:
                raise BenchError(f"offer-signer-testkit sign {kind} printed no compact JWS: {token[:200]!r}")
            return token

        def customer(index: int) -> str:
            original = f"3{index:015d}"
            app_transaction = f"8{index:015d}"
            transaction = expired_transaction(original, app_transaction)
            renewal = {
                "originalTransactionId": original, "productId": PRODUCT_ID, "autoRenewProductId": PRODUCT_ID,
                "autoRenewStatus": 0, "expirationIntent": 1, "isInBillingRetryPeriod": False, "signedDate": now,
                "environment": "Sandbox", "recentSubscriptionStartDate": transaction["originalPurchaseDate"],
            }
            return json.dumps({
                "bundleId": BUNDLE_ID, "productId": PRODUCT_ID, "offerId": RULE_OFFER,
                "signedTransaction": sign("transaction", transaction),
                "signedRenewalInfo": sign("renewal-info", renewal),
            }, separators=(",", ":"))

        # One process per signature: spread over the cores.
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
            lines = list(pool.map(customer, range(count)))
        self.bodies.write_text("\n".join(lines) + "\n", encoding="utf-8")
        self.first_body = json.loads(lines[0])
        self.first_customer = f"8{0:015d}"


# ---------------------------------------------------------------------------------------------
# Server process


class ProcessFigures:
    """CPU time and peak memory of a service's processes, from /proc."""

    # Whether the service counts its answers in GET /metrics (offer-signer does; the peer does not).
    has_metrics = True

    def pids(self) -> list[int]:
        raise NotImplementedError

    def cpu_seconds(self) -> float:
        """User + system CPU time of the processes so far (all threads)."""
        return sum(self.thread_cpu_seconds().values())

    def user_system_seconds(self) -> tuple[float, float]:
        """User and system CPU time of the processes so far, apart (the whole process: every thread, ended ones
        included)."""
        ticks = os.sysconf("SC_CLK_TCK")
        user = system = 0.0
        for pid in self.pids():
            try:
                with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                user += int(fields[11]) / ticks
                system += int(fields[12]) / ticks
            except (OSError, ValueError, IndexError):
                continue
        return user, system

    def thread_cpu_seconds(self) -> dict[str, float]:
        """CPU time per thread (by "pid/tid"); threads that vanish are left out."""
        ticks = os.sysconf("SC_CLK_TCK")
        times = {}
        for pid in self.pids():
            try:
                tasks = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tasks[:4096]:
                try:
                    with open(f"/proc/{pid}/task/{tid}/stat", encoding="ascii") as stat:
                        fields = stat.read().rsplit(")", 1)[1].split()
                    times[f"{pid}/{tid}"] = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
                except (OSError, ValueError, IndexError):
                    continue
        return times

    def reset_peak_rss(self) -> bool:
        """Resets each process's VmHWM to its current RSS (`clear_refs` 5); False where the kernel refuses."""
        done = True
        for pid in self.pids():
            try:
                with open(f"/proc/{pid}/clear_refs", "w", encoding="ascii") as clear:
                    clear.write("5")
            except OSError:
                done = False
        return done

    def peak_rss_kib(self) -> int | None:
        """VmHWM, summed over the processes: the peak resident memory since start or the last reset."""
        total = 0
        for pid in self.pids():
            try:
                with open(f"/proc/{pid}/status", encoding="ascii") as status:
                    total += next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
            except (OSError, StopIteration, ValueError):
                return None
        return total


class Server(ProcessFigures):
    def __init__(self, binary: str, config: Path, directory: Path, prefix: list[str] | None = None,
                 startup_timeout: float | None = None):
        self.stderr_path = directory / "server.stderr"
        self.stderr_file = open(self.stderr_path, "wb")
        self.process = subprocess.Popen(
            [*(prefix or []), binary, "serve", "--config", str(config), "--host", HOST, "--port", "0",
             "--log-level", "warning"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self.stderr_file,
        )
        try:
            self.port = self._read_port(startup_timeout or STARTUP_TIMEOUT)
        except BaseException:
            self.kill()
            raise
        # Anything else the server prints is drained so it can never block on a full pipe.
        self.extra_stdout: list[bytes] = []
        self._drain = threading.Thread(target=self._drain_stdout, daemon=True)
        self._drain.start()

    def pids(self) -> list[int]:
        return [self.process.pid]

    def _read_port(self, timeout: float) -> int:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        buffer = b""
        deadline = time.monotonic() + timeout
        while b"\n" not in buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BenchError(f"the server printed no listening line within {timeout:.0f} s")
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

    def abort(self) -> None:
        """After a failed run: still try a graceful stop, then make sure the server is gone."""
        try:
            self.stop()
        except BenchError:
            pass
        self.kill()

    def stop_cleanly(self, what: str) -> str:
        """SIGTERM; the exit status must be 0. Returns the server's standard error."""
        status = self.stop()
        stderr = self.stderr()
        if status != 0:
            raise BenchError(f"{what} exited {status} after SIGTERM (expected 0):\n{stderr}")
        return stderr

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                pass
        if not self.stderr_file.closed:
            self.stderr_file.close()


    @property
    def ports(self) -> list[int]:
        """The ports wrk spreads its threads over, and whose /metrics are read: this server's one."""
        return [self.port]


class Replicas(ProcessFigures):
    """`count` servers of one configuration on one PostgreSQL database, as replicas: wrk gives each a thread of its
    own, their CPU is summed, and their counters are read from each and added."""

    def __init__(self, binary: str, config: Path, directory: Path, count: int, startup_timeout: float | None = None):
        self.servers: list[Server] = []
        try:
            for index in range(count):
                folder = directory / f"replica-{index}"
                folder.mkdir(exist_ok=True)
                self.servers.append(Server(binary, config, folder, startup_timeout=startup_timeout))
        except BaseException:
            for server in self.servers:
                server.kill()
            raise

    @property
    def ports(self) -> list[int]:
        return [server.port for server in self.servers]

    @property
    def port(self) -> int:
        return self.servers[0].port

    @property
    def process(self) -> subprocess.Popen:
        """A replica that exited, if one did (run_wrk checks it), else the first."""
        return next((server.process for server in self.servers if server.process.poll() is not None),
                    self.servers[0].process)

    def pids(self) -> list[int]:
        return [pid for server in self.servers for pid in server.pids()]

    def peak_rss_kib(self) -> int | None:
        """The largest replica's peak: the memory target is per process."""
        peaks = [server.peak_rss_kib() for server in self.servers]
        return None if None in peaks else max(peaks)

    def stderr(self) -> str:
        return "".join(server.stderr() for server in self.servers)

    def thread_count(self) -> int | None:
        return self.servers[0].thread_count()

    def abort(self) -> None:
        for server in self.servers:
            server.abort()

    def stop_cleanly(self, what: str) -> str:
        return "".join(server.stop_cleanly(f"{what}, replica {index}") for index, server in enumerate(self.servers))


# ---------------------------------------------------------------------------------------------
# Scenarios


class Scenario:
    def __init__(self, key: str, label: str, method: str, path: str, body: dict | None, signs: bool,
                 bodies: Path | None = None, delay_ms: int | None = None, expected_customer: str | None = None):
        self.key = key
        self.label = label
        self.method = method
        self.path = path
        self.body = json.dumps(body, separators=(",", ":")) if body is not None else None
        self.signs = signs
        # A file of request bodies, one a line, that wrk cycles through instead of sending `body` over and over (the
        # preflight still sends `body`).
        self.bodies = bodies
        # Each connection waits this long after an answer before its next request (a load below the peak).
        self.delay_ms = delay_ms
        # The appTransactionId the JWS of the preflight's `body` must name (the verified scenario).
        self.expected_customer = expected_customer
        # Statuses counted rather than failing the run (the retention deadline's 503).
        self.tolerated: set[str] = set()

    def batch_bodies(self) -> list[str]:
        """The bodies a sequential batch cycles through (callgrind's, strace's): the file's lines, or the one body,
        or none."""
        if self.bodies is not None:
            return [line for line in self.bodies.read_text(encoding="utf-8").splitlines() if line]
        return [self.body] if self.body else []

    def paced(self, key: str, label: str, delay_ms: int) -> "Scenario":
        """The same requests, each connection's spaced by `delay_ms`."""
        copy = Scenario(key, label, self.method, self.path, None, self.signs, self.bodies, delay_ms,
                        self.expected_customer)
        copy.body = self.body
        copy.tolerated = set(self.tolerated)
        return copy

    def check_response(self, data: dict) -> None:
        """Checks that a 200 response is the work this scenario means to measure."""
        if self.key.startswith("peer_"):
            # Apple's library behind uvicorn answers the JWS alone.
            parts = data.get("compactJWS", "").split(".")
            if len(parts) != 3:
                raise BenchError(f"{self.label}: no JWS in the peer's response: {data}")
            offer = RULE_OFFER if "verified" in self.key else OPEN_OFFER
            if b64url_json(parts[1]).get("offerIdentifier") != offer:
                raise BenchError(f"{self.label}: the peer's JWS is not for offer {offer}: {b64url_json(parts[1])}")
        elif (self.key in ("promotional_jws", "promotional_verified") or self.key.endswith(("_jws", "_limited"))
              or self.key in LARGE_LEDGER):
            limited = self.key.endswith("_limited") or self.key in LARGE_LEDGER
            offer = LIMITED_OFFER if limited else RULE_OFFER if self.key == "promotional_verified" else OPEN_OFFER
            parts = data.get("compactJWS", "").split(".")
            if data.get("format") != "jws" or len(parts) != 3:
                raise BenchError(f"{self.label}: no JWS in the response: {data}")
            claims = b64url_json(parts[1])
            if claims.get("offerIdentifier") != offer:
                raise BenchError(f"{self.label}: the JWS is for offer {claims.get('offerIdentifier')!r}: {claims}")
            # The service names the customer by the verified appTransactionId of the transaction.
            if self.expected_customer and claims.get("transactionId") != self.expected_customer:
                raise BenchError(f"{self.label}: the JWS does not name the verified customer: {claims}")
        elif self.key == "intro_eligibility":
            parts = data.get("compactJWS", "").split(".")
            if data.get("allowIntroductoryOffer") is not True or len(parts) != 3:
                raise BenchError(f"{self.label}: expected a signed allowIntroductoryOffer true: {data}")
            claims = b64url_json(parts[1])
            if claims.get("allowIntroductoryOffer") is not True or claims.get("transactionId") != APP_TRANSACTION_ID:
                raise BenchError(f"{self.label}: the JWS does not allow the offer to the customer: {claims}")
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


def scenarios(signed_transaction: str, customers: "Customers") -> list[Scenario]:
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
            f"POST promotional-offer verified, {customers.count} customers",
            "POST",
            "/v1/signatures/promotional-offer",
            customers.first_body,
            True,
            bodies=customers.bodies,
            expected_customer=customers.first_customer,
        ),
        Scenario(
            "eligibility",
            "POST /v1/eligibility + signedTransaction",
            "POST",
            "/v1/eligibility",
            {"bundleId": BUNDLE_ID, "signedTransaction": signed_transaction},
            False,
        ),
        Scenario(
            "intro_eligibility",
            "POST introductory-offer-eligibility",
            "POST",
            "/v1/signatures/introductory-offer-eligibility",
            {"bundleId": BUNDLE_ID, "productId": PRODUCT_ID, "offerId": INTRO_OFFER,
             "signedTransaction": signed_transaction},
            True,
        ),
    ]


def ledger_scenarios(backend: str = "sqlite", name: str = "SQLite") -> list[Scenario]:
    """Against a server with a ledger: every signature recorded before it is answered (on PostgreSQL, `name` says
    how many replicas share it)."""
    return [
        Scenario(
            f"{backend}_jws",
            f"POST promotional-offer JWS, {name} ledger",
            "POST",
            "/v1/signatures/promotional-offer",
            {"bundleId": BUNDLE_ID, "productId": PRODUCT_ID, "offerId": OPEN_OFFER},
            True,
        ),
        limited_scenario(f"{backend}_limited", f"POST promotional-offer JWS, limited, {name}"),
    ]


def limited_scenario(key: str, label: str) -> Scenario:
    """A signature of the limited offer (its total far above any run, no customer): its places counted, then it is
    recorded, atomically."""
    return Scenario(key, label, "POST", "/v1/signatures/promotional-offer",
                    {"bundleId": BUNDLE_ID, "productId": PRODUCT_ID, "offerId": LIMITED_OFFER}, True)


# The limited offer again on a ledger of a million customers (issue 24, item 5), filled by ledger_fill.py: each key,
# and the scenario of the same run it is compared with (the 1k baseline, its ledger holding no customer).
LARGE_LEDGER = {"sqlite_limited_1m": "sqlite_limited", "postgresql_limited_1m": "postgresql_limited"}
# How long a server may take to start on such a ledger: SQLite's file is checked whole at open (`quick_check`).
LARGE_STARTUP_TIMEOUT = 180.0
# At a million customers over the baseline: CPU per request at most, req/s at least.
LARGE_CPU_TARGET = 1.15
LARGE_RATE_TARGET = 0.85

# Every scenario key, in the order a run measures them.
ALL_KEYS = [
    "livez", "promotional_jws", "promotional_legacy", "promotional_verified", "eligibility", "intro_eligibility",
    "sqlite_jws", "sqlite_limited", "postgresql_jws", "postgresql_limited", *LARGE_LEDGER, "retention",
    "retention_half", "reports", "attested_jws",
]
# What a run measures unless --only says: all but the million-customer ledgers (filling them takes minutes).
DEFAULT_KEYS = [key for key in ALL_KEYS if key not in LARGE_LEDGER]


# The scenarios of the first server, `"storage": "none"`.
NO_LEDGER_KEYS = ALL_KEYS[:6]

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


def check_recorded(path: Path, answered: int, in_flight: int, filled: int = 0) -> int:
    """The signatures a server recorded in the SQLite file at `path` (beyond the `filled` ones it started with), which
    must be every one it answered with 200, and at most `in_flight` more: wrk's last requests at each stop may be
    recorded and never answered (the client was gone), at most one per connection per endpoint."""
    rows = ledger_rows(path) - filled
    if not answered <= rows <= answered + in_flight:
        raise BenchError(
            f"{path.name} holds {rows} signatures for {answered} answered with 200 "
            f"(expected between {answered} and {answered + in_flight})"
        )
    return rows


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
    figures: dict = {}
    for key, name in LEDGER_COMMIT_FIGURES.items():
        values = re.findall(rf"^{name}(?:\{{[^}}]*\}})? (\S+)$", text, re.MULTILINE)
        figures[key] = sum(float(value) for value in values)
    # The commit time histogram: the cumulative count at or under each bound (seconds; inf for +Inf).
    buckets: dict[float, float] = {}
    for bound, value in re.findall(r'^offer_signer_ledger_commit_seconds_bucket\{[^}]*le="([^"]+)"\} (\S+)$', text,
                                   re.MULTILINE):
        key = float("inf") if bound == "+Inf" else float(bound)
        buckets[key] = buckets.get(key, 0.0) + float(value)
    figures["buckets"] = buckets
    return figures


def histogram_quantile(quantile: float, before: dict[float, float], after: dict[float, float]) -> float | None:
    """The `quantile` of what a cumulative histogram counted between two reads, interpolated linearly within its
    bucket as Prometheus's histogram_quantile does (the last finite bound where it falls in +Inf); None when empty."""
    bounds = sorted(after)
    counts = [after[bound] - before.get(bound, 0.0) for bound in bounds]
    if not counts or counts[-1] <= 0:
        return None
    rank = quantile * counts[-1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in zip(bounds, counts):
        if count >= rank:
            if bound == float("inf"):
                return lower_bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (count - lower_count or 1)
        lower_bound, lower_count = bound, count
    return lower_bound


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


# wrk's `--latency` report stops at the 99th percentile: every script prints the percentiles itself, in
# microseconds, on one line the report is read from.
PERCENTILES_LUA = """function done(summary, latency, requests)
  io.write(string.format("percentiles_us p50=%d p99=%d p999=%d max=%d\\n",
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max))
end
"""


def bodies_lua(bodies: Path, method: str, path: str, threads: int) -> str:
    """Every wrk thread formats its share of the request bodies in `bodies` (one a line) once, at start (so sending
    one costs wrk no more than a fixed body), and sends them in turn (thread i the lines i, i + threads, ...), again
    from its first when its share is spent."""
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
      requests[#requests + 1] = wrk.format({lua_string(method)}, {lua_string(path)}, {{["Content-Type"] = "application/json"}}, line)
    end
    line_number = line_number + 1
  end
  position = 0
end
function request()
  position = position + 1
  return requests[((position - 1) % #requests) + 1]
end
"""


def write_script(directory: Path, scenario: Scenario, threads: int, ports: list[int] | None = None) -> Path:
    """wrk's script for `scenario`: its bodies in turn or its one body, each connection paced by `delay_ms` if set,
    and the percentiles printed at the end. With `ports` (replicas), thread i sends to the i-th port (wrk's
    `thread.addr`)."""
    if scenario.bodies is not None:
        text = bodies_lua(scenario.bodies, scenario.method, scenario.path, threads)
    elif scenario.body is not None:
        text = (
            f"wrk.method = {lua_string(scenario.method)}\n"
            f'wrk.headers["Content-Type"] = "application/json"\n'
            f"wrk.body = {lua_string(scenario.body)}\n"
        )
    else:
        text = f"wrk.method = {lua_string(scenario.method)}\n"
    if scenario.delay_ms:
        text += f"function delay() return {scenario.delay_ms} end\n"
    if ports:
        if scenario.bodies is not None:
            raise BenchError(f"{scenario.label}: a scenario of bodies is not spread over replicas")
        text += (
            "local replica = 0\n"
            f"local ports = {{{', '.join(str(port) for port in ports)}}}\n"
            "function setup(thread)\n"
            f"  thread.addr = wrk.lookup({lua_string(HOST)}, tostring(ports[(replica % #ports) + 1]))[1]\n"
            "  replica = replica + 1\n"
            "end\n"
        )
    script = directory / f"{scenario.key}.lua"
    script.write_text(text + PERCENTILES_LUA, encoding="utf-8")
    return script


def parse_wrk(output: str, label: str) -> dict:
    rate = re.search(r"^Requests/sec:\s+([\d.]+)", output, re.MULTILINE)
    total = re.search(r"^\s*(\d+) requests in ([\d.]+\w+), ([\d.]+\w+) read", output, re.MULTILINE)
    percentiles = re.search(r"^percentiles_us p50=(\d+) p99=(\d+) p999=(\d+) max=(\d+)$", output, re.MULTILINE)
    if not (rate and total and percentiles):
        raise BenchError(f"{label}: cannot read wrk's report:\n{output}")
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    names = ("connect", "read", "write", "timeout")
    errors = dict(zip(names, map(int, socket_errors.groups()) if socket_errors else (0, 0, 0, 0)))
    return {
        "requestsPerSecond": float(rate.group(1)),
        "requests": int(total.group(1)),
        "p50Ms": int(percentiles.group(1)) / 1000,
        "p99Ms": int(percentiles.group(2)) / 1000,
        "p999Ms": int(percentiles.group(3)) / 1000,
        "maxMs": int(percentiles.group(4)) / 1000,
        "non2xx3xx": int(non_2xx.group(1)) if non_2xx else 0,
        "socketErrors": errors,
    }


def summed(figures: list[dict]) -> dict:
    """Counters read from several replicas, added (nested dicts, like the commit histogram's buckets, too)."""
    total: dict = {}
    for one in figures:
        for key, value in one.items():
            if isinstance(value, dict):
                total[key] = summed([total.get(key, {}), value])
            else:
                total[key] = total.get(key, 0) + value
    return total


def run_wrk(args: argparse.Namespace, port: int, scenario: Scenario, directory: Path, server: ProcessFigures) -> dict:
    # Replicas: one wrk thread each (its connections go to that replica), as many connections as one server gets.
    ports = getattr(server, "ports", [port])
    threads = len(ports) if len(ports) > 1 else args.threads
    connections = -(-args.connections // threads) * threads
    script = write_script(directory, scenario, threads, ports if len(ports) > 1 else None)
    argv = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{args.duration}s", "--latency", "-s", str(script),
            f"http://{HOST}:{port}{scenario.path}"]

    def counts(read) -> dict:
        return summed([read(each) for each in ports])

    before_counts = counts(settled_counts) if server.has_metrics else {}
    commits_before = counts(ledger_commit_figures) if server.has_metrics else {}
    rss_reset = server.reset_peak_rss()
    cpu_before = server.cpu_seconds()
    split_before = server.user_system_seconds()
    threads_before = server.thread_cpu_seconds()
    wall_before = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=args.duration + 60, check=False)
    except subprocess.TimeoutExpired as error:
        raise BenchError(f"{scenario.label}: wrk did not finish within {args.duration + 60} s") from error
    wall = time.monotonic() - wall_before
    cpu = server.cpu_seconds() - cpu_before
    split_after = server.user_system_seconds()
    threads_after = server.thread_cpu_seconds()
    if done.returncode != 0:
        raise BenchError(f"{scenario.label}: wrk exited {done.returncode}:\n{done.stderr}{done.stdout}")
    if server.process.poll() is not None:
        raise BenchError(f"{scenario.label}: the server exited ({server.process.returncode}):\n{server.stderr()}")
    result = parse_wrk(done.stdout, scenario.label)
    result["serverCores"] = cpu / wall if wall > 0 else None
    # wrk counts the answers it read; the server's CPU over them (a few more were in flight when wrk stopped).
    result["cpuPerRequestUs"] = cpu * 1e6 / result["requests"] if result["requests"] else None
    # The same apart: user space (the service's own code and libraries) and the kernel (sockets, wake-ups).
    if result["requests"]:
        result["userCpuPerRequestUs"] = (split_after[0] - split_before[0]) * 1e6 / result["requests"]
        result["systemCpuPerRequestUs"] = (split_after[1] - split_before[1]) * 1e6 / result["requests"]
    # Peak resident memory during this run (since the reset), or since the start where the reset was refused.
    result["peakRssKiB"] = server.peak_rss_kib()
    result["peakRssSince"] = "run" if rss_reset else "start"
    # Cores used by each busy server thread, busiest first: shows whether both workers share the load.
    per_thread = sorted(
        ((threads_after[tid] - threads_before.get(tid, 0.0)) / wall for tid in threads_after if wall > 0),
        reverse=True,
    )
    result["serverThreadCores"] = [round(value, 3) for value in per_thread if value >= 0.01]
    result["signs"] = scenario.signs
    if not server.has_metrics:
        # The peer: wrk's count of statuses of 400 and up is the check (it answers 200 or 403).
        if result["non2xx3xx"]:
            raise BenchError(f"{scenario.label}: {result['non2xx3xx']} answers not 2xx/3xx\n{done.stdout}")
        result["wrkOutput"] = done.stdout
        return result

    # Group commit during the run: transactions, records per transaction and the time each took (flush included).
    commits_after = counts(ledger_commit_figures)
    commits = commits_after["commits"] - commits_before["commits"]
    if commits > 0:
        result["ledgerCommits"] = {
            "commits": int(commits),
            "meanGroup": (commits_after["records"] - commits_before["records"]) / commits,
            "meanCommitMs": (commits_after["microseconds"] - commits_before["microseconds"]) / commits / 1000,
        }
        p99 = histogram_quantile(0.99, commits_before["buckets"], commits_after["buckets"])
        if p99 is not None:
            result["ledgerCommits"]["p99CommitMs"] = p99 * 1000

    # Statuses, exactly: wrk counts only >= 400, so the server's own counters are checked too.
    after_counts = counts(request_counts)
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


def retention_deployment(binary: str, testkit: str, directory: Path, ledger_config_path: Path,
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
        testkit, "sign", "notification", "--ca", str(directory / "ca"), "--type", "DID_RENEW",
        "--transaction", str(directory / "retention-transaction.json"),
        "--renewal-info", str(directory / "retention-renewal.json"),
    ]).strip()
    total = 1 + sum(counts.values())
    requests = run_command([
        testkit, "sign", "retention-request", "--ca", str(directory / "ca"),
        "--original-transaction-id", RETENTION_CUSTOMER, "--product-id", PRODUCT_ID, "--count", str(total),
    ], timeout=COMMAND_TIMEOUT * 4).split()
    if len(requests) != total or any(token.count(".") != 2 for token in requests):
        raise BenchError(f"offer-signer-testkit sign retention-request --count {total} printed no {total} JWS")
    first = 1
    for name, count in counts.items():
        (directory / f"retention-{name}.txt").write_text(
            "".join(json.dumps({"signedPayload": token}) + "\n" for token in requests[first:first + count]),
            encoding="utf-8")
        first += count
    return path, notification, requests[0]


def measure_retention(args: argparse.Namespace, binary: str, directory: Path, ledger_config_path: Path,
                      results: dict) -> tuple[list[Scenario], dict, str]:
    """Serves the retention deployment, feeds Apple's notification, then loads `POST /v1/apple/retention/{bundleId}`
    at its peak (wrk -c connections, as the other scenarios) and again at half that rate (each connection's requests
    spaced out): p50, p99 and throughput, and the p99 at half load against the 20 ms target."""
    # Enough requests for a peak of 5,000 a second, and half of it; the report says if they ran out.
    counts = {"peak": 5000 * args.duration, "half": 2500 * args.duration}
    config, notification, preflight_request = retention_deployment(binary, args.testkit_bin, directory,
                                                                   ledger_config_path, counts)
    path = f"/v1/apple/retention/{BUNDLE_ID}"
    # Every request has its own requestIdentifier until a thread's share is spent (then it starts again, and the
    # service answers Apple's "retries" from its memory of its answers: counted as repeated).
    peak = Scenario("retention", "POST retention, server-known state", "POST", path,
                    {"signedPayload": preflight_request}, False, bodies=directory / "retention-peak.txt")
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
        interval = half_interval(args, target)
        half = Scenario("retention_half", f"POST retention at half load ({target:.0f}/s)", "POST", path,
                        {"signedPayload": preflight_request}, False, bodies=directory / "retention-half.txt",
                        delay_ms=interval)
        half.tolerated = {"503"}
        print(f"{half.label} ...", flush=True)
        half_result = run_wrk(args, server.port, half, directory, server)
        results[half.key] = {"label": half.label, "method": half.method, "path": half.path, **half_result}
        repeated = retention_answers(server.port).get("repeated", 0)
    except BaseException:
        server.abort()
        raise
    stderr = server.stop_cleanly("the retention server")
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
            "p999Ms": half_result["p999Ms"],
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
# The peer: Apple's Python library (SignedDataVerifier, PromotionalOfferV2SignatureCreator) behind uvicorn

PEER_SERVER = Path(__file__).resolve().parent / "peer" / "server.py"
PEER_KEYS = ["promotional_jws", "promotional_verified"]


def python_parts_missing(script: Path, modules: tuple[str, ...]) -> str | None:
    """Why `script` (a file of this repository) cannot be used by the Python running this one: it is not there, or
    one of `modules` is not installed. None when it can."""
    import importlib.util

    if not script.exists():
        return f"{script.relative_to(Path(__file__).resolve().parent.parent)} is not there"
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        return (f"{sys.executable} has no {' or '.join(missing)} (pip install -r Benchmarks/requirements.txt into "
                "the venv that runs this script)")
    return None


def peer_missing() -> str | None:
    """Why the peer cannot run here, or None."""
    return python_parts_missing(PEER_SERVER, ("appstoreserverlibrary", "uvicorn"))


class Peer(ProcessFigures):
    """The peer service: uvicorn's parent and its workers, in a session of their own."""

    has_metrics = False

    def __init__(self, directory: Path, key_file: Path, root: Path, workers: int):
        with socket.socket() as probe:
            probe.bind((HOST, 0))
            self.port = probe.getsockname()[1]
        self.stderr_path = directory / "peer.stderr"
        self.stderr_file = open(self.stderr_path, "wb")
        self.process = subprocess.Popen(
            [sys.executable, str(PEER_SERVER), "--host", HOST, "--port", str(self.port), "--workers", str(workers),
             "--key", str(key_file), "--key-id", KEY_ID, "--issuer-id", ISSUER_ID, "--bundle-id", BUNDLE_ID,
             "--root", str(root), "--environment", "Sandbox"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.stderr_file, start_new_session=True,
        )
        try:
            self._wait_listening()
        except BaseException:
            self.stop()
            raise
        self._drain = threading.Thread(target=self._drain_stdout, daemon=True)
        self._drain.start()

    def _wait_listening(self) -> None:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        buffer = b""
        deadline = time.monotonic() + 60
        expected = f"peer listening on http://{HOST}:{self.port}".encode()
        while expected not in buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BenchError(f"the peer printed no listening line within 60 s:\n{self.stderr()}")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    raise BenchError(f"the peer exited before listening ({self.process.wait(5)}):\n{self.stderr()}")
                buffer = (buffer + chunk)[-65536:]

    def _drain_stdout(self) -> None:
        assert self.process.stdout is not None
        while self.process.stdout.read1(4096):
            pass

    def pids(self) -> list[int]:
        """The parent and every process below it (uvicorn's workers, multiprocessing's helpers)."""
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry))
        found, queue = [], [self.process.pid]
        while queue:
            pid = queue.pop()
            found.append(pid)
            queue.extend(children.get(pid, []))
        return found

    def stderr(self) -> str:
        if not self.stderr_file.closed:
            self.stderr_file.flush()
        try:
            return self.stderr_path.read_text(encoding="utf-8", errors="replace")[-3000:]
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGTERM to the peer's session (its parent and workers), then SIGKILL after 20 s."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except OSError:
                pass
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        if not self.stderr_file.closed:
            self.stderr_file.close()


def peer_preflight(port: int, scenario: Scenario) -> None:
    """Three requests: each must be 200 with a JWS for the scenario's offer."""
    connection = http.client.HTTPConnection(HOST, port, timeout=30)
    try:
        for _ in range(3):
            connection.request(scenario.method, scenario.path, body=scenario.body,
                               headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            raw = response.read()
            if response.status != 200:
                raise BenchError(f"{scenario.label}: status {response.status}: {raw[:300]!r}")
            scenario.check_response(json.loads(raw))
    finally:
        connection.close()


def measure_peer(args: argparse.Namespace, directory: Path, key_file: Path, plan: list[Scenario],
                 results: dict) -> dict:
    """The peer with as many workers as cores, on the same key and test root, loaded with the same wrk scripts as
    ours for each scenario of `plan`. Returns a summary, or the reason it was skipped."""
    reason = peer_missing()
    if reason:
        print(f"peer skipped: {reason}", flush=True)
        return {"skipped": reason}
    workers = len(os.sched_getaffinity(0))
    peer = Peer(directory, key_file, directory / "ca" / "root.cer", workers)
    try:
        peer_plan = []
        for scenario in plan:
            copy = scenario.paced(f"peer_{scenario.key}", f"peer: {scenario.label}", 0)
            copy.delay_ms = None
            peer_preflight(peer.port, copy)
            peer_plan.append(copy)
        for scenario in peer_plan:
            print(f"{scenario.label} ...", flush=True)
            result = run_wrk(args, peer.port, scenario, directory, peer)
            results[scenario.key] = {"label": scenario.label, "method": scenario.method, "path": scenario.path,
                                     **result}
    finally:
        peer.stop()
    return {"workers": workers, "command": f"python Benchmarks/peer/server.py --workers {workers} ..."}


# ---------------------------------------------------------------------------------------------
# Instructions per request (callgrind): repeatable whatever else the machine does

CALLGRIND_STARTUP_TIMEOUT = 60.0  # the server under valgrind starts slowly
CALLGRIND_BATCH = 500  # requests per scenario, on one keep-alive connection
CALLGRIND_WARMUP = 20
CALLGRIND_CRYPTO = {"sign": 100, "verify": 100}  # N; the floor runs N and 2N iterations
CALLGRIND_KEYS = ["livez", "promotional_jws", "promotional_verified"]


def callgrind_total(path: Path) -> int:
    """The total instructions (Ir) of a callgrind dump: its `totals:` line, else its `summary:` line."""
    text = path.read_text(encoding="utf-8", errors="replace")
    for name in ("totals", "summary"):
        match = re.search(rf"^{name}:\s+(\d+)", text, re.MULTILINE)
        if match:
            return int(match.group(1))
    raise BenchError(f"{path.name}: no totals or summary line in the callgrind dump")


def crypto_floor(crypto_binary: str, directory: Path, signed_transaction: str) -> dict:
    """The service's own ES256 sign and P-256 verify calls (offer-signer-bench-crypto): wall-clock operations a second
    on one core, and under callgrind the instructions of one operation, (Ir(2N) - Ir(N)) / N, start-up excluded."""
    floor: dict = {}
    for operation, count in CALLGRIND_CRYPTO.items():
        stdin = signed_transaction if operation == "verify" else None
        wall = json.loads(run_command([crypto_binary, operation, str(count * 20)], stdin=stdin))
        totals = []
        for iterations in (count, 2 * count):
            out = directory / f"callgrind.crypto.{operation}.{iterations}"
            run_command(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", crypto_binary, operation,
                         str(iterations)], timeout=COMMAND_TIMEOUT * 3, stdin=stdin)
            totals.append(callgrind_total(out))
        floor[operation] = {
            "perSecondOneCore": wall["perSecond"],
            "microseconds": 1e6 / wall["perSecond"],
            "instructions": (totals[1] - totals[0]) / count,
            "command": f"offer-signer-bench-crypto {operation} N (N = {count}, {2 * count})",
        }
    return floor


def callgrind_batch(port: int, scenario: Scenario, bodies: list[str], count: int) -> None:
    """`count` requests of `scenario` on one keep-alive connection (cycling through `bodies`), each a 200. Each
    request goes in one write, head and body together, as wrk sends it (http.client sends a body over 2 KiB apart
    from the head, which costs the server a second read and a second wait: the client's doing, not the server's)."""
    with socket.create_connection((HOST, port), timeout=60) as connection:
        for index in range(count):
            body = (bodies[index % len(bodies)] if bodies else "").encode()
            head = f"{scenario.method} {scenario.path} HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
            if body:
                head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            connection.sendall(head.encode() + b"\r\n" + body)
            response = http.client.HTTPResponse(connection, method=scenario.method)
            response.begin()
            raw = response.read()
            if response.status != 200:
                raise BenchError(f"callgrind {scenario.label}: status {response.status}: {raw[:300]!r}")
            if response.will_close:
                raise BenchError(f"callgrind {scenario.label}: the server closed the keep-alive connection")


def callgrind_server(binary: str, config: Path, directory: Path, name: str) -> Server:
    """The release server on `config` under callgrind, instrumentation off until asked; its dumps are
    `directory`/callgrind.NAME*."""
    out_base = directory / f"callgrind.{name}"
    return Server(binary, config, directory,
                  prefix=["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out_base}"],
                  startup_timeout=CALLGRIND_STARTUP_TIMEOUT)


def instrumented(server: Server, directory: Path, name: str, label: str,
                 work: Callable[[], object]) -> tuple[int, float]:
    """Instrumentation on around `work()` (requests to `server`, made under callgrind with the `name` of
    callgrind_server), then a dump: its total Ir, and the seconds `work` took."""
    pid = str(server.process.pid)
    before = set(directory.glob(f"callgrind.{name}*"))
    run_command(["callgrind_control", "-i", "on", pid])
    started = time.monotonic()
    work()
    elapsed = time.monotonic() - started
    run_command(["callgrind_control", "-i", "off", pid])
    run_command(["callgrind_control", "-d", pid])
    dumps = sorted(set(directory.glob(f"callgrind.{name}*")) - before, key=lambda path: path.stat().st_mtime)
    if not dumps:
        raise BenchError(f"callgrind {label}: callgrind_control -d wrote no dump")
    return callgrind_total(dumps[-1]), elapsed


def callgrind_requests(binary: str, config: Path, directory: Path, plan: list[Scenario]) -> dict:
    """The release server under callgrind with instrumentation off; for each scenario of `plan`: a warm-up, then
    instrumentation on around a fixed batch of CALLGRIND_BATCH requests, a dump, and its Ir over the batch: the
    user-space instructions per request, all threads (the kernel's share is not counted)."""
    server = callgrind_server(binary, config, directory, "server")
    figures: dict = {}
    try:
        for scenario in plan:
            bodies = scenario.batch_bodies()
            callgrind_batch(server.port, scenario, bodies, CALLGRIND_WARMUP)
            instructions, elapsed = instrumented(
                server, directory, "server", scenario.label,
                lambda: callgrind_batch(server.port, scenario, bodies, CALLGRIND_BATCH))
            figures[scenario.key] = {
                "requests": CALLGRIND_BATCH,
                "instructionsPerRequest": instructions / CALLGRIND_BATCH,
                "secondsUnderCallgrind": elapsed,
            }
            print(f"  {scenario.label}: {instructions / CALLGRIND_BATCH:,.0f} instructions per request", flush=True)
    except BaseException:
        server.abort()
        raise
    server.stop_cleanly("the server under callgrind")
    return figures


# ---------------------------------------------------------------------------------------------
# An attested signature (App Attest): the request's assertion checked, its challenge taken back, its counter raised

ATTESTED_TEAM_ID = "ABCDE12345"
# The independent device maker of the interop tests (cbor2 and cryptography, from Apple's documented layout).
APP_ATTEST_MAKER = Path(__file__).resolve().parent.parent / "Tests" / "Interop" / "appattest_device.py"
# A challenge lives this long (the most the config takes): run B's first challenge waits for 2N requests under
# callgrind before its assertion is sent.
ATTESTED_CHALLENGE_SECONDS = 600
CHALLENGE_PATH = "/v1/app-attest/challenge"
PROMOTIONAL_PATH = "/v1/signatures/promotional-offer"


def app_attest_missing() -> str | None:
    """Why attestations and assertions cannot be made here, or None."""
    return python_parts_missing(APP_ATTEST_MAKER, ("cbor2", "cryptography"))


def attested_deployment(binary: str, directory: Path, config_path: Path) -> tuple[Path, object]:
    """The first server's app with App Attest enforced on a SQLite ledger of its own (`attested.sqlite`: the
    challenges, the keys and their counters, and the signatures), trusting a private App Attestation root and its
    receipt root beside the test root. Returns the config and the CA (appattest_device.AppAttestCA) its devices are
    attested by."""
    if str(APP_ATTEST_MAKER.parent) not in sys.path:
        sys.path.insert(0, str(APP_ATTEST_MAKER.parent))
    from appattest_device import AppAttestCA

    ca = AppAttestCA()
    trust = directory / "app-attest"
    trust.mkdir(exist_ok=True)
    ca.write_root_pem(trust / "root.pem")
    ca.write_receipt_root_pem(trust / "receipt-root.pem")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["storage"] = "sqlite:attested.sqlite"
    config["trust"]["rootCertificates"].append("app-attest/receipt-root.pem")
    config["trust"]["appAttestRootCertificates"] = ["app-attest/root.pem"]
    config["apps"][0]["appAttest"] = {"mode": "enforce", "teamId": ATTESTED_TEAM_ID,
                                      "challengeSeconds": ATTESTED_CHALLENGE_SECONDS}
    path = directory / "offer-signer-attested.json"
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    run_command([binary, "config", "check", "--config", str(path)])
    return path, ca


class AttestedClient:
    """One device with its App Attest key, talking to the server on one keep-alive connection: challenges asked
    for, the key attested once, and promotional-offer requests for the open offer, each with its own challenge and
    an assertion whose counter is one above the last. Every answer must be the expected 200 (201 for the key)."""

    def __init__(self, port: int, ca: object):
        from appattest_device import Device

        self.connection = http.client.HTTPConnection(HOST, port, timeout=60)
        self.device = Device(ca, ATTESTED_TEAM_ID, BUNDLE_ID)
        # The body the assertion covers, byte for byte: promotional_jws's.
        self.body = json.dumps({"bundleId": BUNDLE_ID, "productId": PRODUCT_ID, "offerId": OPEN_OFFER},
                               separators=(",", ":")).encode()
        self.answered = 0  # attested requests answered with a JWS

    def post(self, path: str, body: bytes, headers: dict[str, str] | None = None, status: int = 200) -> dict:
        self.connection.request("POST", path, body=body, headers={"Content-Type": "application/json",
                                                                  **(headers or {})})
        response = self.connection.getresponse()
        raw = response.read()
        if response.status != status:
            raise BenchError(f"callgrind attested_jws: POST {path}: status {response.status} (expected {status}): "
                             f"{raw[:300]!r}")
        return json.loads(raw)

    def challenges(self, count: int) -> list[str]:
        """`count` fresh challenges, one request each."""
        body = json.dumps({"bundleId": BUNDLE_ID}).encode()
        return [self.post(CHALLENGE_PATH, body)["challenge"] for _ in range(count)]

    def attest(self) -> None:
        """The key attested over a fresh challenge (once, before any assertion)."""
        from appattest_device import attestation_client_data_hash

        challenge = self.challenges(1)[0]
        attestation = self.device.attestation(attestation_client_data_hash(challenge))
        self.post("/v1/app-attest/keys", json.dumps({
            "bundleId": BUNDLE_ID, "keyId": self.device.key_id_b64, "challenge": challenge,
            "attestation": base64.b64encode(attestation).decode()}).encode(), status=201)

    def sign(self, challenges: list[str]) -> None:
        """One attested signature request per challenge, in turn; each answer a JWS for the open offer."""
        from appattest_device import attest_headers

        for challenge in challenges:
            data = self.post(PROMOTIONAL_PATH, self.body, attest_headers(self.device, challenge, self.body))
            parts = data.get("compactJWS", "").split(".")
            if len(parts) != 3 or b64url_json(parts[1]).get("offerIdentifier") != OPEN_OFFER:
                raise BenchError(f"callgrind attested_jws: no JWS for {OPEN_OFFER} in the answer: {data}")
            self.answered += 1

    def close(self) -> None:
        self.connection.close()


def callgrind_attested(binary: str, directory: Path, config_path: Path) -> dict:
    """Instructions per attested signature request, on its own server under callgrind (App Attest enforced, SQLite).

    A challenge is a request of its own, asked for before each attested request: kept out of the figure by two runs
    that differ only in the attested requests. Both ask for 2N challenges (N = CALLGRIND_BATCH), then run A sends N
    attested requests and run B 2N: (Ir(B) - Ir(A)) / N is one attested request, start and stop of instrumentation
    excluded. A batch of N challenges alone, over N, is the challenge's own figure (as the other scenarios are
    measured). After the key's attestation and a warm-up, all on one keep-alive connection; after the stop, the
    ledger (read with Python's sqlite3) must hold one signature per attested request answered."""
    config, ca = attested_deployment(binary, directory, config_path)
    count = CALLGRIND_BATCH
    label = "attested_jws"
    server = callgrind_server(binary, config, directory, "attested")
    try:
        client = AttestedClient(server.port, ca)
        try:
            client.attest()
            client.sign(client.challenges(CALLGRIND_WARMUP))
            challenges, _ = instrumented(server, directory, "attested", label, lambda: client.challenges(count))
            run_a, _ = instrumented(server, directory, "attested", label,
                                    lambda: client.sign(client.challenges(2 * count)[:count]))
            run_b, elapsed = instrumented(server, directory, "attested", label,
                                          lambda: client.sign(client.challenges(2 * count)))
        finally:
            client.close()
    except BaseException:
        server.abort()
        raise
    server.stop_cleanly("the attested server under callgrind")
    rows = ledger_rows(directory / "attested.sqlite")
    if rows != client.answered:
        raise BenchError(f"callgrind attested_jws: the ledger holds {rows} signatures for {client.answered} "
                         "attested requests answered")
    per_request = (run_b - run_a) / count
    print(f"  POST promotional-offer JWS, App Attest, SQLite: {per_request:,.0f} instructions per attested request; "
          f"a challenge {challenges / count:,.0f}", flush=True)
    return {
        "requests": count,
        "instructionsPerRequest": per_request,
        "storage": "SQLite",
        "method": f"(Ir(2N challenges + 2N attested) - Ir(2N challenges + N attested)) / N, N = {count}",
        "secondsUnderCallgrind": elapsed,
        "challenge": {"path": CHALLENGE_PATH, "requests": count, "instructionsPerRequest": challenges / count},
    }


# ---------------------------------------------------------------------------------------------
# Where the CPU goes: perf's CPU-clock samples of the server under the same load, by library

PROFILE_KEYS = ["livez", "promotional_jws", "promotional_verified"]
PERF_FREQUENCY = 999  # samples a second per busy thread
PROFILE_GROUPS = ["libcrypto", "Swift runtime", "offer-signer", "libc", "libmicrohttpd", "other"]


def perf_missing() -> str | None:
    """Why perf cannot sample this machine's processes, or None when it can."""
    if shutil.which("perf") is None:
        return "perf is not installed (make bench installs linux-perf)"
    probe = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-o", "/dev/null", "--", "true"],
                           capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False)
    if probe.returncode != 0:
        return f"perf record failed ({probe.stderr.strip()[:300] or probe.returncode})"
    return None


def profile_group(dso: str, binary_name: str) -> str | None:
    """The library a sample's DSO belongs to (None for the kernel: the /proc system time stands for it)."""
    if dso.startswith("[kernel") or dso.startswith("[guest"):
        return None
    if dso.startswith("libcrypto"):
        return "libcrypto"
    if dso.startswith("libswift") or dso.startswith("libFoundation") or dso.startswith("libdispatch"):
        return "Swift runtime"
    if dso == binary_name:
        return "offer-signer"
    if dso.startswith("libc.so") or dso.startswith("libc-"):
        return "libc"
    if dso.startswith("libmicrohttpd"):
        return "libmicrohttpd"
    return "other"


def perf_profile(args: argparse.Namespace, binary: str, config: Path, directory: Path, plan: list[Scenario]) -> dict:
    """For each scenario of `plan`, a second closed-loop run under `perf record -e cpu-clock` (sampling slows it a
    little: its own CPU figures are not the table's). The user-space samples by library give each library's share of
    the user time; applied to that run's user CPU per request, with the system time beside it as the kernel's."""
    server = Server(binary, config, directory)
    binary_name = Path(binary).name
    figures: dict = {}
    try:
        for scenario in plan:
            preflight(server.port, scenario)
            data = directory / f"perf.{scenario.key}.data"
            recorder = subprocess.Popen(
                ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(PERF_FREQUENCY),
                 "-p", ",".join(str(pid) for pid in server.pids()), "-o", str(data), "--",
                 "sleep", str(args.duration + 1)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )
            try:
                result = run_wrk(args, server.port, scenario, directory, server)
                _, errors = recorder.communicate(timeout=args.duration + 60)
            except BaseException:
                recorder.kill()
                recorder.wait()
                raise
            if recorder.returncode != 0:
                raise BenchError(f"perf {scenario.label}: perf record exited {recorder.returncode}: {errors[:500]}")
            listing = run_command(["perf", "report", "-i", str(data), "--no-children", "--sort", "dso", "-g", "none",
                                   "-q", "--stdio"])
            shares = {group: 0.0 for group in PROFILE_GROUPS}
            for line in listing.splitlines():
                match = re.match(r"\s*([0-9.]+)%\s+(\S+)", line)
                if match:
                    group = profile_group(match.group(2), binary_name)
                    if group is not None:
                        shares[group] += float(match.group(1))
            total = sum(shares.values())
            if total <= 0:
                raise BenchError(f"perf {scenario.label}: no user-space samples of the server")
            user_us = result["userCpuPerRequestUs"]
            figures[scenario.key] = {
                "label": scenario.label,
                "userCpuPerRequestUs": user_us,
                "systemCpuPerRequestUs": result["systemCpuPerRequestUs"],
                "userShares": {group: share / total for group, share in shares.items()},
                "userUsByGroup": {group: user_us * share / total for group, share in shares.items()},
            }
            print(f"  {scenario.label}: user {user_us:.1f} us/req ("
                  + ", ".join(f"{group} {user_us * share / total:.1f}" for group, share in shares.items())
                  + f"), system {result['systemCpuPerRequestUs']:.1f} us/req", flush=True)
    except BaseException:
        server.abort()
        raise
    server.stop_cleanly("the server under perf")
    return figures


# ---------------------------------------------------------------------------------------------
# System calls per request (issue 24): what the kernel is asked for, request by request

SYSCALL_BATCH = 500


def strace_missing() -> str | None:
    """Why strace cannot count this machine's system calls, or None when it can."""
    if shutil.which("strace") is None:
        return "strace is not installed (make bench installs it)"
    probe = subprocess.run(["strace", "-c", "-o", "/dev/null", "--", "true"], capture_output=True, text=True,
                           timeout=COMMAND_TIMEOUT, check=False)
    if probe.returncode != 0:
        return f"strace failed ({probe.stderr.strip()[:300] or probe.returncode})"
    return None


def strace_counts(path: Path) -> dict[str, int]:
    """The calls per system call of an `strace -c` summary (errors included: a call is a call)."""
    counts: dict[str, int] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        fields = line.split()
        # "% time  seconds  usecs/call  calls  [errors]  syscall"; the total line's last word is "total".
        if len(fields) >= 5 and re.match(r"^[0-9.]+$", fields[0]) and fields[-1] != "total":
            counts[fields[-1]] = int(fields[3])
    return counts


def syscall_profile(binary: str, config: Path, directory: Path, plan: list[Scenario]) -> dict:
    """For each scenario of `plan`, the release server's system calls over SYSCALL_BATCH requests sent one after the
    other on one keep-alive connection (as callgrind's batch is): `strace -c -f` attached to every thread after a
    warm-up and detached after the batch, its counts over the batch. Sequential requests show each request's own
    calls (under load, one epoll wait serves several); the counts include what idle threads did meanwhile."""
    server = Server(binary, config, directory)
    figures: dict = {}
    try:
        for scenario in plan:
            bodies = scenario.batch_bodies()
            callgrind_batch(server.port, scenario, bodies, CALLGRIND_WARMUP)
            output = directory / f"strace.{scenario.key}.txt"
            tracer = subprocess.Popen(
                ["strace", "-c", "-f", "-qq", "-o", str(output), "-p", str(server.process.pid)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                time.sleep(0.5)  # strace attaches to each thread in turn
                callgrind_batch(server.port, scenario, bodies, SYSCALL_BATCH)
                tracer.send_signal(signal.SIGINT)
                _, errors = tracer.communicate(timeout=60)
            except BaseException:
                tracer.kill()
                tracer.wait()
                raise
            counts = strace_counts(output)
            if not counts:
                raise BenchError(f"strace {scenario.label}: no counts ({errors.strip()[:300]})")
            per_request = {name: calls / SYSCALL_BATCH for name, calls in sorted(
                counts.items(), key=lambda item: -item[1])}
            figures[scenario.key] = {
                "label": scenario.label, "requests": SYSCALL_BATCH,
                "perRequest": sum(counts.values()) / SYSCALL_BATCH, "bySyscall": per_request,
            }
            top = ", ".join(f"{name} {value:.2f}" for name, value in list(per_request.items())[:6])
            print(f"  {scenario.label}: {sum(counts.values()) / SYSCALL_BATCH:.2f} system calls per request ({top})",
                  flush=True)
    except BaseException:
        server.abort()
        raise
    server.stop_cleanly("the server under strace")
    return figures


def instruction_ratios(requests: dict, floor: dict) -> dict:
    """Each scenario's instructions per request over its floor: bare HTTP (`/livez`) for /livez; one ES256 signature
    + bare HTTP for the JWS; one signature + two verifications (the transaction's and the renewal info's) + bare HTTP
    for the verified request; one signature + one verification (the assertion's) + bare HTTP for the attested
    request."""
    if "livez" not in requests:
        return {}
    http_ir = requests["livez"]["instructionsPerRequest"]
    sign = floor["sign"]["instructions"]
    verify = floor["verify"]["instructions"]
    floors = {"livez": ("bare HTTP", http_ir), "promotional_jws": ("sign + bare HTTP", sign + http_ir),
              "promotional_verified": ("sign + 2 verify + bare HTTP", sign + 2 * verify + http_ir),
              "attested_jws": ("sign + verify + bare HTTP", sign + verify + http_ir)}
    ratios = {}
    for key, (name, value) in floors.items():
        if key in requests:
            ratios[key] = {"floor": name, "floorInstructions": value,
                           "ratio": requests[key]["instructionsPerRequest"] / value}
    return ratios


# ---------------------------------------------------------------------------------------------
# Report


def print_table(results: dict, baseline_sign: float) -> None:
    livez = results["livez"]["requestsPerSecond"]
    header = (
        f"{'endpoint':<60} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'p99.9':>7} {'CPU us':>7} {'RSS MiB':>7} "
        f"{'/livez':>6}  server cores (by thread)"
    )
    print(header)
    print("-" * len(header))
    for result in results.values():
        rate = result["requestsPerSecond"]
        cores = result.get("serverCores") or 0.0
        split = "+".join(f"{value:.2f}" for value in result.get("serverThreadCores", [])[:4])
        cpu = result.get("cpuPerRequestUs")
        rss = result.get("peakRssKiB")
        print(
            f"{result['label'][:60]:<60} {rate:>8.0f} {result['p50Ms']:>7.2f} {result['p99Ms']:>7.2f} "
            f"{result['p999Ms']:>7.2f} {cpu if cpu is not None else float('nan'):>7.1f} "
            f"{rss / 1024 if rss else float('nan'):>7.1f} {rate / livez:>6.3f}  {cores:.2f} ({split})"
        )
    ledger = [result for result in results.values() if "ledgerCommits" in result]
    if ledger:
        print("\ngroup commit (from the server's /metrics): transactions, signatures per transaction, time per commit")
        for result in ledger:
            figures = result["ledgerCommits"]
            print(
                f"  {result['label'][:60]:<60} {figures['commits']:>7} commits  {figures['meanGroup']:>5.1f} per group  "
                f"{figures['meanCommitMs']:>6.2f} ms each"
                + (f", p99 {figures['p99CommitMs']:.2f} ms" if "p99CommitMs" in figures else "")
            )
    for result in results.values():
        errors = {name: count for name, count in result["socketErrors"].items() if count}
        if errors:
            print(f"warning: {result['label']}: wrk socket errors {errors}")
    print(
        f"\nopenssl speed -seconds {OPENSSL_SECONDS} ecdsap256: {baseline_sign:.0f} sign/s on one core. CPU us: the "
        "server's CPU per request (all its processes and threads). Server cores: its CPU time / wall time during the "
        "run, split by thread (wrk shares the machine)."
    )


# Driven again at half their peak rate, after the peak: the latency a steady load sees.
HALF_RATE_KEYS = {"promotional_jws", "promotional_verified", "sqlite_limited"}


def half_interval(args: argparse.Namespace, target: float) -> int:
    """The wait in whole milliseconds after each answer for `target` requests a second over all the connections:
    rounded down, since the answer's own time adds to it."""
    return max(1, int(args.connections * 1000 / target)) if target > 0 else 1000


def half_load(args: argparse.Namespace, scenario: Scenario, peak: dict) -> Scenario:
    """`scenario` at half the peak rate: each of the connections waits `half_interval` ms after each answer."""
    target = peak["requestsPerSecond"] / 2
    return scenario.paced(f"{scenario.key}_half", f"{scenario.label} at half load ({target:.0f}/s)",
                          half_interval(args, target))


def serve_and_measure(
    args: argparse.Namespace, binary: str, config: Path, directory: Path, plan: list[Scenario], results: dict,
    replicas: int = 1, startup_timeout: float | None = None,
) -> tuple[int | None, dict, str]:
    """Serves `config` (on `replicas` servers, which must share a PostgreSQL ledger), preflights and loads every
    scenario of `plan` into `results`, and stops the servers (exit status 0 required). Returns the (first) server's
    thread count, the settled request counts and the stderr."""
    server = (Server(binary, config, directory, startup_timeout=startup_timeout) if replicas == 1
              else Replicas(binary, config, directory, replicas, startup_timeout))
    try:
        threads = server.thread_count()
        for scenario in plan:
            for port in server.ports:
                preflight(port, scenario)
        for scenario in plan:
            print(f"{scenario.label} ...", flush=True)
            result = run_wrk(args, server.port, scenario, directory, server)
            results[scenario.key] = {"label": scenario.label, "method": scenario.method, "path": scenario.path, **result}
            if scenario.key in HALF_RATE_KEYS:
                half = half_load(args, scenario, result)
                print(f"{half.label} ...", flush=True)
                half_result = run_wrk(args, server.port, half, directory, server)
                results[half.key] = {"label": half.label, "method": half.method, "path": half.path,
                                     "connectionIntervalMs": half.delay_ms,
                                     "targetRequestsPerSecond": result["requestsPerSecond"] / 2, **half_result}
        counts = summed([settled_counts(port) for port in server.ports])
    except BaseException:
        server.abort()
        raise
    stderr = server.stop_cleanly(f"the server ({config.name})")
    return threads, counts, stderr


# ---------------------------------------------------------------------------------------------
# A ledger of a million customers (issue 24, item 5)


def database_dsn(dsn: str, name: str) -> str:
    """`dsn` naming the database `name` instead: a URI's path, else a keyword/value string's `dbname` (libpq takes the
    last of a keyword given twice)."""
    if re.match(r"postgres(ql)?://", dsn):
        return urllib.parse.urlunsplit(urllib.parse.urlsplit(dsn)._replace(path=f"/{name}"))
    return f"{dsn} dbname={name}"


def measure_large_ledgers(args: argparse.Namespace, binary: str, directory: Path, ledger_path: Path, chosen: set[str],
                          results: dict) -> tuple[list[Scenario], dict, str]:
    """The limited offer's scenario again on ledgers of `ledger_fill.CUSTOMERS` customers: a SQLite file of its own,
    and with --postgres a database of its own on the same server (created here, dropped after), its
    `PG_REPLICAS` replicas as `postgresql_limited` has. Each ledger is made by the service (one `serve`, stopped),
    filled by ledger_fill.py (the rows generated once, for both), then served and loaded. Returns the scenarios
    measured, what was filled and how long it took, and the servers' standard error."""
    keys = [key for key in LARGE_LEDGER if key in chosen and (key.startswith("sqlite") or args.postgres)]
    if "postgresql_limited_1m" in chosen and not args.postgres:
        print("postgresql_limited_1m skipped: no PostgreSQL DSN (--postgres)", flush=True)
    if not keys:
        return [], {}, ""
    print(f"ledger of {ledger_fill.CUSTOMERS:,} customers: generating their signatures (ledger_fill.py) ...",
          flush=True)
    started = time.perf_counter()
    fill = ledger_fill.Fill.generate(ledger_fill.CUSTOMERS)
    large = {"generateSeconds": time.perf_counter() - started, **fill.summary()}
    base = json.loads(ledger_path.read_text(encoding="utf-8"))
    plan, stderr = [], ""
    for key in keys:
        sqlite = key.startswith("sqlite")
        database = None if sqlite else f"offer_signer_bench_1m_{os.getpid()}"
        if database:
            ledger_fill.psql_run(args.postgres, ["-c", f"CREATE DATABASE {database}"])
        try:
            config = {**base, "storage": "sqlite:ledger-1m.sqlite" if sqlite else database_dsn(args.postgres, database)}
            path = directory / f"offer-signer-{key}.json"
            path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
            # The service makes the tables (its migrations), then the rows go in.
            Server(binary, path, directory).stop_cleanly(f"the server making {key}'s ledger")
            print(f"{key}: filling the ledger with {fill.customers:,} customers ...", flush=True)
            started = time.perf_counter()
            if sqlite:
                # On disk when it returns: the write-ahead log checkpointed into the file and synced.
                rows = ledger_fill.fill_sqlite(directory / "ledger-1m.sqlite", fill)
            else:
                rows = ledger_fill.fill_postgresql(config["storage"], fill)
                # Its pages written out now, not by a checkpoint during the run (the copy's WAL passes max_wal_size).
                ledger_fill.psql_run(config["storage"], ["-c", "CHECKPOINT"], timeout=600)
            filled = time.perf_counter() - started
            print(f"{key}: filled in {filled:.0f} s", flush=True)
            name = "SQLite" if sqlite else f"PostgreSQL, {PG_REPLICAS} replicas"
            scenario = limited_scenario(key, f"POST promotional-offer JWS, limited, {name}, "
                                             f"{fill.customers:,} customers")
            _, counts, served = serve_and_measure(args, binary, path, directory, [scenario], results,
                                                  replicas=1 if sqlite else PG_REPLICAS,
                                                  startup_timeout=LARGE_STARTUP_TIMEOUT)
            stderr += served
            plan.append(scenario)
            if sqlite:
                check_recorded(directory / "ledger-1m.sqlite", counts.get((scenario.path, "200"), 0),
                               args.connections, filled=fill.signatures)
        finally:
            if database:
                ledger_fill.psql_run(args.postgres, ["-c", f"DROP DATABASE IF EXISTS {database} WITH (FORCE)"])
        large["sqlite" if sqlite else "postgresql"] = {"key": key, "baseline": LARGE_LEDGER[key],
                                                        "fillSeconds": filled, "rows": rows}
    return plan, large, stderr


def large_ledger_ratios(results: dict) -> dict:
    """Each million-customer scenario's req/s and CPU per request over its baseline's, measured in the same run."""
    ratios = {}
    for key, baseline in LARGE_LEDGER.items():
        if key in results and baseline in results and results[baseline].get("cpuPerRequestUs"):
            ratios[key] = {
                "baseline": baseline,
                "requestsPerSecond": results[key]["requestsPerSecond"] / results[baseline]["requestsPerSecond"],
                "cpuPerRequestUs": results[key]["cpuPerRequestUs"] / results[baseline]["cpuPerRequestUs"],
            }
    return ratios


def describe_large_ledgers(large: dict, results: dict) -> list[str]:
    """Lines for the terminal: what was filled, how long it took, and each backend's figures against its baseline."""
    places = large["places"].get(LIMITED_OFFER, 0)
    redeemed = large["totals"].get(LIMITED_OFFER, {}).get("redeemed", 0)
    lines = [f"ledger of {large['customers']:,} customers ({large['signatures']:,} signatures over "
             f"{large['days']} days, {large['redeemed']:,} redeemed; {LIMITED_OFFER} holds {places:,} unexpired "
             f"places and {redeemed:,} redemptions), generated in {large['generateSeconds']:.0f} s:"]
    ratios = large_ledger_ratios(results)
    for backend in ("sqlite", "postgresql"):
        if backend not in large:
            continue
        row = large[backend]
        key, baseline = row["key"], row["baseline"]
        text = f"  {backend}: filled in {row['fillSeconds']:.0f} s"
        if key in results:
            text += (f"; {key} {results[key]['requestsPerSecond']:,.0f} req/s, "
                     f"{results[key]['cpuPerRequestUs']:.0f} us CPU per request")
        if key in ratios:
            text += (f": {ratios[key]['requestsPerSecond']:.2f}x the req/s and {ratios[key]['cpuPerRequestUs']:.2f}x "
                     f"the CPU of {baseline} ({results[baseline]['requestsPerSecond']:,.0f} req/s, "
                     f"{results[baseline]['cpuPerRequestUs']:.0f} us)")
        else:
            text += f" ({baseline} not measured in this run: no ratio)"
        lines.append(text)
    return lines


def cpu_floor_ratios(results: dict, crypto: dict) -> dict:
    """Server CPU per request over its floor, from the wrk runs: one core's ES256 sign (`openssl speed`) + the
    server CPU of a bare `/livez` for the JWS; + two P-256 verifications (transaction and renewal info) for the
    verified request."""
    if "livez" not in results or not results["livez"].get("cpuPerRequestUs"):
        return {}
    http_us = results["livez"]["cpuPerRequestUs"]
    sign_us = 1e6 / crypto["signPerSecond"]
    verify_us = 1e6 / crypto["verifyPerSecond"]
    floors = {"promotional_jws": ("sign + bare HTTP", sign_us + http_us),
              "promotional_verified": ("sign + 2 verify + bare HTTP", sign_us + 2 * verify_us + http_us)}
    return {
        key: {"floor": name, "floorUs": value, "cpuPerRequestUs": results[key]["cpuPerRequestUs"],
              "ratio": results[key]["cpuPerRequestUs"] / value}
        for key, (name, value) in floors.items() if key in results and results[key].get("cpuPerRequestUs")
    }


# An attested request's instructions over its floor (sign + verify + bare HTTP), at most.
ATTESTED_TARGET = 1.4


# Our req/s over the peer's (Apple's library behind uvicorn) for the same scenario, at least.
PEER_TARGET = 2.0
# A limited offer on PostgreSQL (replicas sharing its budget through leases) over the same replicas' open offer.
LIMITED_SHARE_TARGET = 0.8


def targets(results: dict, cpu_floors: dict, instructions: dict, peer: dict | None = None) -> list[dict]:
    """Issue 24's targets (benchmarks, not tests; issue 11's, App Attest's), each with the figure measured in this
    run, its limit, and whether it is met: a figure at most its limit, or at least it where `at_least`."""
    rows = []

    def add(name: str, figure: float | None, limit: float, text: str, at_least: bool = False) -> None:
        if figure is not None:
            met = figure >= limit if at_least else figure <= limit
            rows.append({"target": name, "figure": figure, "limit": limit, "text": text, "met": met,
                         "atLeast": at_least})

    for key, name in (("promotional_jws", "signed JWS"), ("promotional_verified", "verified")):
        if key in cpu_floors:
            add(f"server CPU per {name} request / ({cpu_floors[key]['floor']})", cpu_floors[key]["ratio"], 1.3,
                f"{cpu_floors[key]['ratio']:.2f}x")
    for key, limit in (("promotional_jws_half", 2.0), ("promotional_verified_half", 4.0)):
        if key in results:
            add(f"p99 at half load, {results[key.removesuffix('_half')]['label']} (ms)", results[key]["p99Ms"], limit,
                f"{results[key]['p99Ms']:.2f} ms")
    if "sqlite_limited_half" in results:
        # The commits' own p99 during the same half-load run, from the server's commit time histogram.
        commit = results["sqlite_limited_half"].get("ledgerCommits", {}).get("p99CommitMs")
        if commit is not None:
            add("p99 at half load, limited offer on SQLite (ms; limit: the run's commit p99 + 2 ms)",
                results["sqlite_limited_half"]["p99Ms"], commit + 2.0,
                f"{results['sqlite_limited_half']['p99Ms']:.2f} ms (commit p99 {commit:.2f} ms)")
    if "postgresql_limited" in results and "postgresql_jws" in results:
        share = results["postgresql_limited"]["requestsPerSecond"] / results["postgresql_jws"]["requestsPerSecond"]
        add(f"req/s of a limited offer on PostgreSQL / an open one ({PG_REPLICAS} replicas sharing the budget)",
            share, LIMITED_SHARE_TARGET,
            f"{share:.2f}x ({results['postgresql_limited']['requestsPerSecond']:,.0f} / "
            f"{results['postgresql_jws']['requestsPerSecond']:,.0f})", at_least=True)
    # The cost per request must not grow with the ledger: a million customers against the same run's baseline.
    for key, ratio in large_ledger_ratios(results).items():
        baseline = ratio["baseline"]
        add(f"CPU per request at 1M customers / at 1k, {baseline}", ratio["cpuPerRequestUs"], LARGE_CPU_TARGET,
            f"{ratio['cpuPerRequestUs']:.2f}x ({results[key]['cpuPerRequestUs']:.0f} / "
            f"{results[baseline]['cpuPerRequestUs']:.0f} us)")
        add(f"req/s at 1M customers / at 1k, {baseline}", ratio["requestsPerSecond"], LARGE_RATE_TARGET,
            f"{ratio['requestsPerSecond']:.2f}x ({results[key]['requestsPerSecond']:,.0f} / "
            f"{results[baseline]['requestsPerSecond']:,.0f})", at_least=True)
    # Every scenario of ours, per process (a replica's own peak where there are several).
    peaks = {key: result["peakRssKiB"] for key, result in results.items()
             if not key.startswith("peer_") and result.get("peakRssKiB")}
    if peaks:
        largest = max(peaks, key=peaks.get)
        add("peak RSS (MiB), every scenario, the largest", peaks[largest] / 1024, 32.0,
            f"{peaks[largest] / 1024:.1f} MiB ({largest})")
    split = results.get("promotional_jws", {}).get("serverThreadCores", [])
    if len(split) >= 2 and split[0] > 0:
        add("the two busiest threads' difference, signed JWS (1 - second/first)", 1 - split[1] / split[0], 0.2,
            f"{split[0]:.2f} and {split[1]:.2f} cores ({1 - split[1] / split[0]:.0%})")
    attested = instructions.get("ratios", {}).get("attested_jws")
    if attested:
        add(f"instructions per attested request, App Attest on SQLite / ({attested['floor']})", attested["ratio"],
            ATTESTED_TARGET, f"{attested['ratio']:.2f}x")
    for key, row in (peer or {}).get("ratios", {}).items():
        add(f"req/s, ours / the peer's, {key}", row["throughput"], PEER_TARGET, f"{row['throughput']:.1f}x",
            at_least=True)
    return rows


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
    parser.add_argument("--crypto-bin", help="offer-signer-bench-crypto (default: beside --bin)")
    parser.add_argument("--testkit-bin", help="offer-signer-testkit, which signs the test data (default: beside --bin)")
    parser.add_argument("--customers", type=int, default=1000,
                        help="distinct customers of the verified scenario, each a signed transaction and renewal "
                        "info (default 1000)")
    parser.add_argument("--no-peer", action="store_true", help="leave out the peer (Benchmarks/peer)")
    parser.add_argument("--no-callgrind", action="store_true", help="leave out the instruction counts (callgrind)")
    parser.add_argument("--no-perf", action="store_true", help="leave out the CPU profile by library (perf)")
    parser.add_argument("--no-strace", action="store_true", help="leave out the system calls per request (strace)")
    parser.add_argument("--report", default=str(Path(__file__).resolve().parent / "results"),
                        help="where to write report.md, throughput.png and latency.png (default Benchmarks/results)")
    parser.add_argument(
        "--only",
        type=lambda text: [key.strip() for key in text.split(",") if key.strip()],
        help="run only these scenarios, comma-separated keys (" + ", ".join(ALL_KEYS) + "); livez, the baseline, "
        "always runs, a ledger's share needs promotional_jws in the same run, attested_jws is counted under "
        "callgrind only, and " + " and ".join(LARGE_LEDGER) + " (a ledger of a million customers, filled first: "
        "minutes) run only when named here, their ratios with " + " and ".join(LARGE_LEDGER.values()),
    )
    args = parser.parse_args(argv)
    if args.only is not None:
        unknown = [key for key in args.only if key not in ALL_KEYS]
        if unknown or not args.only:
            parser.error(f"--only: unknown scenario {', '.join(unknown) or '(none given)'}; known: {', '.join(ALL_KEYS)}")
    if not 1 <= args.customers <= 100_000:
        parser.error("--customers must be 1 to 100000")
    if args.crypto_bin is None:
        args.crypto_bin = str(Path(args.bin).resolve().parent / "offer-signer-bench-crypto")
    if args.testkit_bin is None:
        args.testkit_bin = str(Path(args.bin).resolve().parent / "offer-signer-testkit")
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
    if not os.access(args.testkit_bin, os.X_OK):
        print(f"error: {args.testkit_bin} is not an executable; build it first: swift build -c release",
              file=sys.stderr)
        return 2
    if not args.no_callgrind and not os.access(args.crypto_bin, os.X_OK):
        print(f"error: {args.crypto_bin} is not an executable; build it first: swift build -c release",
              file=sys.stderr)
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
            config_path, ledger_path, signed_transaction = make_deployment(binary, args.testkit_bin, directory)
            chosen = set(args.only or DEFAULT_KEYS) | {"livez"}
            # Only the verified scenario (and its peer and callgrind runs) sends them: one customer otherwise.
            count = args.customers if "promotional_verified" in chosen else 1
            print(f"signing {count} customers' transactions and renewal infos (offer-signer-testkit sign) ...",
                  flush=True)
            customers = Customers(args.testkit_bin, directory, count)
            every_scenario = scenarios(signed_transaction, customers)
            plan = [scenario for scenario in every_scenario if scenario.key in chosen]
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
                rows = check_recorded(directory / "ledger.sqlite", answered, args.connections * len(ledger_plan))
                recording = {"signaturesAnswered": answered, "signaturesInLedger": rows}
            pg_plan = [scenario for scenario in ledger_scenarios("postgresql", f"PostgreSQL, {PG_REPLICAS} replicas")
                       if scenario.key in chosen]
            if args.postgres and pg_plan:
                # The same on a PostgreSQL ledger (the database the DSN names; its tables are created at start).
                pg_config = json.loads(ledger_path.read_text(encoding="utf-8"))
                pg_config["storage"] = args.postgres
                pg_path = directory / "offer-signer-postgresql.json"
                pg_path.write_text(json.dumps(pg_config, indent=2) + "\n", encoding="utf-8")
                plan += pg_plan
                _, _, pg_stderr = serve_and_measure(args, binary, pg_path, directory, pg_plan, results,
                                                    replicas=PG_REPLICAS)
                server_stderr += pg_stderr
            # The limited offer on ledgers of a million customers, against the scenarios above (issue 24, item 5).
            large_plan, large, large_stderr = measure_large_ledgers(args, binary, directory, ledger_path, chosen,
                                                                    results)
            plan += large_plan
            server_stderr += large_stderr
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
            # The outcome and experiment reports over a year of data: a million exposures (issue 22).
            reports: dict = {}
            if "reports" in chosen:
                reports = report_scenario.measure_reports(
                    binary, directory, json.loads(ledger_path.read_text(encoding="utf-8")), args.postgres,
                    BUNDLE_ID, PRODUCT_ID)
            # The peer on the same key, root and requests.
            peer: dict = {"skipped": "--no-peer"} if args.no_peer else {}
            peer_plan = [scenario for scenario in every_scenario if scenario.key in PEER_KEYS and scenario.key in chosen]
            if peer_plan and not args.no_peer:
                # The peer is not ours: when it fails, the run goes on without it and says why.
                try:
                    peer = measure_peer(args, directory, directory / f"SubscriptionKey_{KEY_ID}.p8", peer_plan,
                                        results)
                except BenchError as error:
                    print(f"warning: the peer failed, left out: {error}", file=sys.stderr)
                    peer = {"skipped": f"failed: {str(error)[:2000]}"}
                    for key in [key for key in results if key.startswith("peer_")]:
                        del results[key]
            # Instructions per request and per crypto call, under callgrind.
            instructions: dict = {}
            if args.no_callgrind:
                instructions = {"skipped": "--no-callgrind"}
            elif shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
                instructions = {"skipped": "valgrind is not installed (make bench installs it)"}
                print(f"callgrind skipped: {instructions['skipped']}", flush=True)
            else:
                print(f"callgrind: {CALLGRIND_BATCH} requests per scenario, and the crypto floor ...", flush=True)
                callgrind_plan = [scenario for scenario in every_scenario
                                  if scenario.key in CALLGRIND_KEYS and scenario.key in chosen]
                # Valgrind's own failures (callgrind_control cannot reach the process, ...) leave the counts out,
                # said, rather than the whole run.
                try:
                    floor = crypto_floor(args.crypto_bin, directory, signed_transaction)
                    requests = callgrind_requests(binary, config_path, directory, callgrind_plan)
                    # An attested signature: its own server (App Attest enforced, SQLite), its own method.
                    attested_missing = app_attest_missing() if "attested_jws" in chosen else None
                    if attested_missing:
                        print(f"  attested_jws skipped: {attested_missing}", flush=True)
                    elif "attested_jws" in chosen:
                        requests["attested_jws"] = callgrind_attested(binary, directory, config_path)
                    instructions = {"floor": floor, "requests": requests,
                                    "ratios": instruction_ratios(requests, floor)}
                    if attested_missing:
                        instructions["attestedSkipped"] = attested_missing
                except BenchError as error:
                    print(f"warning: callgrind failed, instruction counts left out: {error}", file=sys.stderr)
                    instructions = {"skipped": f"failed: {str(error)[:2000]}"}
            # Where the CPU goes, by library (perf's samples), for the scenarios with instruction counts.
            profile: dict = {}
            profile_plan = [scenario for scenario in every_scenario
                            if scenario.key in PROFILE_KEYS and scenario.key in chosen]
            missing = "--no-perf" if args.no_perf else perf_missing()
            if missing:
                profile = {"skipped": missing}
                print(f"perf profile skipped: {missing}", flush=True)
            else:
                print("perf: where the server's CPU goes, by library ...", flush=True)
                try:
                    profile = perf_profile(args, binary, config_path, directory, profile_plan)
                except BenchError as error:
                    print(f"warning: perf failed, the profile left out: {error}", file=sys.stderr)
                    profile = {"skipped": f"failed: {str(error)[:2000]}"}
            # System calls per request, for the same scenarios.
            syscalls: dict = {}
            missing = "--no-strace" if args.no_strace else strace_missing()
            if missing:
                syscalls = {"skipped": missing}
                print(f"system calls skipped: {missing}", flush=True)
            else:
                print(f"strace: system calls per request over {SYSCALL_BATCH} sequential requests ...", flush=True)
                try:
                    syscalls = syscall_profile(binary, config_path, directory, profile_plan)
                except BenchError as error:
                    print(f"warning: strace failed, the system calls left out: {error}", file=sys.stderr)
                    syscalls = {"skipped": f"failed: {str(error)[:2000]}"}
    except (BenchError, report_scenario.ReportsError, ledger_fill.FillError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1

    livez = results["livez"]["requestsPerSecond"]
    sign_rate = crypto["signPerSecond"]
    for key, result in results.items():
        result["ratioToLivez"] = result["requestsPerSecond"] / livez
        result["ratioToOpensslSign"] = result["requestsPerSecond"] / sign_rate
    cpu_floors = cpu_floor_ratios(results, crypto)
    peer_ratios = {
        key: {"throughput": results[key]["requestsPerSecond"] / results[f"peer_{key}"]["requestsPerSecond"],
              "peerCpuPerRequestUs": results[f"peer_{key}"]["cpuPerRequestUs"]}
        for key in PEER_KEYS if key in results and f"peer_{key}" in results
    }
    if peer_ratios:
        peer["ratios"] = peer_ratios

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
    if large:
        large["ratios"] = large_ledger_ratios(results)
        print()
        for line in describe_large_ledgers(large, results):
            print(line)
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
    if reports:
        print(f"\nreports over {reports['exposures']:,} exposures (a year; {reports['otherExposures']:,} of another "
              f"offer beside them):")
        for line in report_scenario.describe(reports):
            print(f"  {line}")
    print_floors(crypto, cpu_floors, instructions, peer)
    target_rows = targets(results, cpu_floors, instructions, peer)
    if target_rows:
        # Beside each, the same target in the reference runs (Benchmarks/reference/run-*.json), when there are any.
        reference = []
        for path in sorted((Path(__file__).resolve().parent / "reference").glob("run-*.json")):
            try:
                reference.append({row["target"]: row for row in json.loads(path.read_text(encoding="utf-8"))
                                  .get("targets", [])})
            except (OSError, ValueError):
                continue
        print(f"\ntargets (issue 24): this run; in brackets the {len(reference)} reference runs "
              "(Benchmarks/reference/report.md)")
        for row in target_rows:
            limit = ("at least " if row["atLeast"] else "at most ") + f"{row['limit']:.3g}"
            earlier = "; ".join(run[row["target"]]["text"] if row["target"] in run else "-" for run in reference)
            print(f"  {'met   ' if row['met'] else 'MISSED'} {row['target']}: {row['text']} ({limit})"
                  + (f" [{earlier}]" if reference else ""))
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
            "scenarios": list(results),
            "customers": args.customers,
        },
        "baselines": {"openssl": crypto, "livezRequestsPerSecond": livez},
        "endpoints": results,
        "cpuFloors": cpu_floors,
        "instructions": instructions,
        "profile": profile,
        "syscalls": syscalls,
        "peer": peer,
        "targets": target_rows,
        "ledger": recording,
        "largeLedger": large,
        "retention": retention,
        "reports": reports,
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
    try:
        written = report_files.write(report, Path(args.report))
    except report_files.ReportError as error:
        print(f"warning: {error}", file=sys.stderr)
        written = []
    for path in written:
        print(f"wrote {path}")
    print(f"total time of the run: {time.time() - started:.0f} s")
    return 0


def print_floors(crypto: dict, cpu_floors: dict, instructions: dict, peer: dict) -> None:
    print(f"\nfloors: openssl speed one core: ES256 sign {1e6 / crypto['signPerSecond']:.1f} us "
          f"({crypto['signPerSecond']:.0f}/s), P-256 verify {1e6 / crypto['verifyPerSecond']:.1f} us "
          f"({crypto['verifyPerSecond']:.0f}/s)")
    for key, row in cpu_floors.items():
        print(f"  server CPU per request, {key}: {row['cpuPerRequestUs']:.1f} us = {row['ratio']:.2f}x "
              f"({row['floor']}: {row['floorUs']:.1f} us)")
    if "floor" in instructions:
        floor = instructions["floor"]
        print(f"instructions (callgrind): the service's crypto calls, sign {floor['sign']['instructions']:,.0f} "
              f"({floor['sign']['perSecondOneCore']:.0f}/s on one core), verify {floor['verify']['instructions']:,.0f} "
              f"({floor['verify']['perSecondOneCore']:.0f}/s)")
        for key, row in instructions["ratios"].items():
            measured = instructions["requests"][key]
            print(f"  {key}: {measured['instructionsPerRequest']:,.0f} per request = {row['ratio']:.2f}x "
                  f"({row['floor']}: {row['floorInstructions']:,.0f})"
                  + (f"; {measured['storage']} (the challenge taken and the counter raised in one transaction, "
                     "the signature recorded)" if "storage" in measured else ""))
            if "challenge" in measured:
                print(f"  {key}'s challenge, POST {measured['challenge']['path']} (apart, not in the figure above): "
                      f"{measured['challenge']['instructionsPerRequest']:,.0f} per request")
        if "attestedSkipped" in instructions:
            print(f"  attested_jws: skipped: {instructions['attestedSkipped']}")
    elif "skipped" in instructions:
        print(f"instructions (callgrind): skipped: {instructions['skipped']}")
    if "ratios" in peer:
        for key, row in peer["ratios"].items():
            print(f"peer ({peer['workers']} uvicorn workers), {key}: ours / peer throughput {row['throughput']:.1f}x; "
                  f"the peer's CPU per request {row['peerCpuPerRequestUs']:.0f} us")
    elif "skipped" in peer:
        print(f"peer: skipped: {peer['skipped']}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
