"""Fixtures: keys made by the binary, a configuration, and one running `offer-signer serve` per session."""

from __future__ import annotations

import signal

import pytest

from support import KEY_ID, ROTATED_KEY_ID, KeyMaterial, Server, binary, generate_key, write_config


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
