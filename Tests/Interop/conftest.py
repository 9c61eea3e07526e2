"""Fixtures: keys made by the binary, a configuration, and one running `offer-signer serve` per session."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from support import (
    BUNDLE_ID,
    ISSUER_ID,
    KEY_ID,
    OFFER_FIRST_COME,
    OFFER_INTRO,
    OFFER_LAPSED,
    OFFER_ONCE,
    OFFER_OPEN,
    OFFER_WB_ANY,
    OFFER_WB_GBR,
    POSTGRES_CLUSTER_SCRIPT,
    PRODUCT_MONTHLY,
    PRODUCT_YEARLY,
    ROTATED_KEY_ID,
    KeyMaterial,
    Server,
    SignedData,
    binary,
    create_postgres_database,
    drop_postgres_database,
    generate_key,
    run_cli,
    run_testkit,
    write_config,
)


@pytest.fixture(scope="session")
def bin_path() -> str:
    return binary()


@pytest.fixture(scope="session")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("offer-signer-interop")


@pytest.fixture(scope="session")
def signing_key(workdir, bin_path) -> KeyMaterial:
    path = generate_key(workdir, KEY_ID)
    assert path.stat().st_mode & 0o777 == 0o600, oct(path.stat().st_mode)
    return KeyMaterial.load(KEY_ID, path)


@pytest.fixture(scope="session")
def rotated_key(workdir, bin_path) -> KeyMaterial:
    path = generate_key(workdir, ROTATED_KEY_ID)
    assert path.stat().st_mode & 0o777 == 0o600, oct(path.stat().st_mode)
    return KeyMaterial.load(ROTATED_KEY_ID, path)


@pytest.fixture(scope="session")
def config_path(workdir, signing_key):
    return write_config(workdir / "offer-signer.json", [signing_key])


@pytest.fixture(scope="session")
def server(workdir, config_path):
    running = Server.start(config_path, workdir)
    yield running
    status = running.stop(signal.SIGTERM, timeout=5)
    assert status == 0, f"server exited with {status}; stderr: {running.stderr_path.read_text(errors='replace')}"


# Test-signed Apple data and a server that trusts it (one per test module).


@pytest.fixture(scope="module")
def testkit_dir(tmp_path_factory, bin_path) -> Path:
    directory = tmp_path_factory.mktemp("openapi-testkit")
    for name in ("ca", "stranger"):
        result = run_testkit("ca", "--out", str(directory / name))
        assert result.returncode == 0, result.stderr
    return directory


@pytest.fixture(scope="module")
def signed(testkit_dir) -> SignedData:
    return SignedData(testkit_dir)


@pytest.fixture(scope="module")
def verified_server(testkit_dir, signing_key):
    """A server that trusts the test root (Sandbox only) and has every kind of offer, limits included."""
    yield from serve_verified(testkit_dir, signing_key, ["Sandbox"], "verified.json")


@pytest.fixture(scope="module")
def verified_production_server(testkit_dir, signing_key):
    """`verified_server`'s offers, trusting the test root for Production data too."""
    yield from serve_verified(testkit_dir, signing_key, ["Production", "Sandbox"], "verified-production.json")


def serve_verified(testkit_dir, signing_key, environments: list[str], name: str):
    config = {
        "listen": {"host": "127.0.0.1", "port": 0},
        "storage": "memory",
        "trust": {"rootCertificates": [str(testkit_dir / "ca" / "root.cer")], "environments": environments},
        "apps": [{
            "bundleId": BUNDLE_ID,
            "issuerId": ISSUER_ID,
            "keys": [{"keyId": signing_key.key_id, "privateKeyFile": str(signing_key.path)}],
            "offers": [
                {"id": OFFER_OPEN, "type": "promotional", "productIds": [PRODUCT_MONTHLY, PRODUCT_YEARLY],
                 "requiresVerifiedCustomer": False},
                {"id": OFFER_LAPSED, "type": "promotional", "productIds": [PRODUCT_MONTHLY],
                 "eligibility": {"all": [{"subscriptionStatus": ["expired"]}, {"daysSinceExpiry": {"min": 30}}]}},
                {"id": OFFER_ONCE, "type": "promotional", "productIds": [PRODUCT_MONTHLY],
                 "limits": {"perCustomer": 1}},
                {"id": OFFER_FIRST_COME, "type": "promotional", "productIds": [PRODUCT_YEARLY],
                 "requiresVerifiedCustomer": False, "limits": {"total": 1}},
                {"id": OFFER_INTRO, "type": "introductoryOffer", "productIds": [PRODUCT_MONTHLY],
                 "eligibility": {"all": [{"subscriptionStatus": ["expired"]}, {"daysSinceExpiry": {"min": 30}}]}},
                {"id": OFFER_WB_ANY, "type": "winBack", "productIds": [PRODUCT_MONTHLY]},
                {"id": OFFER_WB_GBR, "type": "winBack", "productIds": [PRODUCT_MONTHLY],
                 "eligibility": {"storefronts": ["GBR"]}},
            ],
            # Retention Messaging: a message on monthly, the open offer signed on yearly.
            "retention": [
                {"productIds": [PRODUCT_MONTHLY],
                 "message": {"messages": {"*": "a1b2c3d4-e5f6-4890-a1b2-c3d4e5f67890"}}},
                {"productIds": [PRODUCT_YEARLY],
                 "promotionalOffer": {"offerId": OFFER_OPEN, "productId": PRODUCT_YEARLY,
                                      "messages": {"*": "eec08e5d-b59a-4672-b799-8cf40e919a4f"}}},
            ],
        }],
    }
    path = testkit_dir / name
    path.write_text(json.dumps(config, indent=2))
    check = run_cli("config", "check", "--config", str(path))
    assert check.returncode == 0, check.stdout + check.stderr
    running = Server.start(path, testkit_dir)
    yield running
    status = running.stop(signal.SIGTERM, timeout=5)
    assert status == 0, running.stderr_path.read_text(errors="replace")


# PostgreSQL: `make test`'s throwaway cluster, else one this session starts; a database of its own per test.


@pytest.fixture(scope="session")
def postgres_cluster():
    """The DSN of the superuser of a throwaway PostgreSQL cluster: `make test`'s (OFFER_SIGNER_TEST_POSTGRES), else
    one started here with Scripts/postgres-test-cluster.sh and stopped at the end of the session (its watchdog
    stops it too if pytest is killed). Never skipped: without PostgreSQL installed, the tests fail saying so."""
    dsn = os.environ.get("OFFER_SIGNER_TEST_POSTGRES")
    if dsn:
        yield dsn
        return
    # Under /tmp: as root the cluster runs as the postgres user, who cannot enter pytest's private folders.
    directory = tempfile.mkdtemp(prefix="offer-signer-postgres.", dir="/tmp")
    started = subprocess.run(
        ["bash", str(POSTGRES_CLUSTER_SCRIPT), "start", directory, "--owner", str(os.getpid())],
        capture_output=True, text=True, timeout=180)
    assert started.returncode == 0, f"no PostgreSQL cluster for the tests (`make deps` installs it): {started.stderr}"
    try:
        yield started.stdout.strip()
    finally:
        stopped = subprocess.run(["bash", str(POSTGRES_CLUSTER_SCRIPT), "stop", directory],
                                 capture_output=True, text=True, timeout=120)
        assert stopped.returncode == 0, stopped.stderr


@pytest.fixture
def postgres_dsn(postgres_cluster):
    """The DSN of a new, empty database for this test alone (dropped after it)."""
    name = f"interop_{uuid.uuid4().hex[:16]}"
    dsn = create_postgres_database(postgres_cluster, name)
    yield dsn
    drop_postgres_database(postgres_cluster, name)
