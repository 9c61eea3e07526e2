"""nginx in front of a server, as in production: Deploy/nginx/offer-signer.conf as shipped, run by Debian's nginx
(`make deps` installs it) as the current user on loopback, with a test CA and a certificate made here.

Any test that should talk to the service the way Apple and the apps do, through HTTPS, starts one with
`nginx_in_front_of(server.port, directory)`:

    tls = TestTLS.create(directory)
    with nginx_in_front_of(server.port, directory, tls) as proxy:
        response = proxy.post("/v1/apple/notifications/com.example.app", {"signedPayload": token})

The shipped file changes only where a test must: its listen ports, the service's port, the certificate paths and
the access log's path (each replaced line must be found exactly once, so a change to the file shows here). nginx
runs in the foreground under a temporary prefix with its own pid file, logs and temporary paths, and is stopped when
the block ends, whether the test passed or not (and by the kernel if pytest itself dies).
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime
import grp
import http.client
import ipaddress
import json
import os
import pwd
import shutil
import signal
import socket
import ssl
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from support import REPO_ROOT, Response

NGINX_CONF = REPO_ROOT / "Deploy" / "nginx" / "offer-signer.conf"
# The host name the shipped file serves; the test certificate names it, and loopback.
SERVER_NAME = "offers.example.com"


def nginx_binary() -> str:
    path = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"nginx not found at {path}: `make deps` installs Debian's nginx")
    return path


# MARK: - Certificates


@dataclass(frozen=True)
class TestTLS:
    """A test CA and a server certificate it signed, for `SERVER_NAME`, localhost, 127.0.0.1 and ::1 (P-256)."""

    ca: Path
    certificate: Path
    key: Path

    __test__ = False  # not a pytest test class

    @classmethod
    def create(cls, directory: Path) -> "TestTLS":
        directory.mkdir(parents=True, exist_ok=True)
        now = datetime.datetime.now(datetime.timezone.utc)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "offer-signer interop test CA")])
        ca = (
            x509.CertificateBuilder()
            .subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        key = ec.generate_private_key(ec.SECP256R1())
        names = [x509.DNSName(SERVER_NAME), x509.DNSName("localhost"),
                 x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.IPAddress(ipaddress.ip_address("::1"))]
        leaf = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SERVER_NAME)]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        paths = cls(directory / "ca.pem", directory / "server.pem", directory / "server.key")
        paths.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        paths.certificate.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
        paths.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                serialization.NoEncryption()))
        paths.key.chmod(0o600)
        return paths

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts the test CA alone and checks the server's name."""
        context = ssl.create_default_context(cafile=str(self.ca))
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
        return context


# MARK: - The configuration


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
            return True
    except OSError:
        return False


def render_site(text: str, *, https_port: int, metrics_port: int, upstream_port: int, tls: TestTLS,
                access_log: Path) -> str:
    """The shipped server configuration with the test's ports, certificate and log (nothing else changes; the IPv6
    listener goes where the machine has no IPv6 loopback)."""
    ipv6 = f"    listen [::1]:{https_port} ssl;\n" if has_ipv6_loopback() else ""
    replacements = [
        ("    listen 443 ssl;\n", f"    listen 127.0.0.1:{https_port} ssl;\n"),
        ("    listen [::]:443 ssl;\n", ipv6),
        ("    listen 127.0.0.1:9180;\n", f"    listen 127.0.0.1:{metrics_port};\n"),
        ("    server 127.0.0.1:8080;\n", f"    server 127.0.0.1:{upstream_port};\n"),
        ("    ssl_certificate /etc/ssl/offer-signer/fullchain.pem;\n", f"    ssl_certificate {tls.certificate};\n"),
        ("    ssl_certificate_key /etc/ssl/offer-signer/privkey.pem;\n", f"    ssl_certificate_key {tls.key};\n"),
        (" /var/log/nginx/offer-signer.access.log ", f" {access_log} "),
    ]
    for old, new in replacements:
        found = text.count(old)
        assert found == 1, f"{NGINX_CONF.name}: expected {old.strip()!r} once, found it {found} times"
        text = text.replace(old, new)
    return text


def main_config(directory: Path, site: Path) -> str:
    """nginx.conf around the site file, as Debian's includes conf.d inside `http {}`: everything nginx writes lives
    in `directory`, and the processes stay the current user's (`user` counts only when started as root)."""
    if os.geteuid() == 0:
        user_line = f"user {pwd.getpwuid(os.geteuid()).pw_name} {grp.getgrgid(os.getegid()).gr_name};\n"
    else:
        user_line = ""
    temporary = "\n".join(f"    {kind}_temp_path {directory / kind};"
                          for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return f"""{user_line}daemon off;
worker_processes 1;
pid {directory / "nginx.pid"};
error_log {directory / "error.log"} info;
events {{
    worker_connections 256;
}}
http {{
    access_log off;
{temporary}
    include {site};
}}
"""


# MARK: - nginx


@dataclass
class RawResponse:
    """One response read off a connection: its status line, headers (lowercased names) and body."""

    status_line: str
    headers: dict[str, str]
    body: bytes

    @property
    def status(self) -> int:
        return int(self.status_line.split()[1])

    def json(self):
        return json.loads(self.body)


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when pytest's thread that started it ends, so nginx never outlives it."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class Nginx:
    process: subprocess.Popen
    directory: Path
    https_port: int
    metrics_port: int
    tls: TestTLS

    @property
    def access_log(self) -> Path:
        return self.directory / "access.log"

    @property
    def error_log(self) -> Path:
        return self.directory / "error.log"

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.https_port}"

    @classmethod
    def start(cls, upstream_port: int, directory: Path, tls: TestTLS, timeout: float = 10) -> "Nginx":
        """nginx serving the shipped configuration in front of 127.0.0.1:`upstream_port`, with its files in
        `directory`. Ports are chosen free; if one is taken meanwhile, it starts again on others."""
        directory.mkdir(parents=True, exist_ok=True)
        for attempt in range(3):
            https_port, metrics_port = free_port(), free_port()
            site = directory / "offer-signer.conf"
            site.write_text(render_site(NGINX_CONF.read_text(), https_port=https_port, metrics_port=metrics_port,
                                        upstream_port=upstream_port, tls=tls, access_log=directory / "access.log"))
            config = directory / "nginx.conf"
            config.write_text(main_config(directory, site))
            stderr_path = directory / "nginx.stderr"
            with open(stderr_path, "wb") as stderr:
                process = subprocess.Popen(
                    [nginx_binary(), "-p", str(directory), "-c", str(config), "-e", "stderr"],
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                    preexec_fn=_die_with_parent)
            running = cls(process, directory, https_port, metrics_port, tls)
            if running._wait_listening(timeout):
                return running
            running.stop()
            reason = stderr_path.read_text(errors="replace")
            if "Address already in use" not in reason or attempt == 2:
                raise RuntimeError(f"nginx did not start: {reason}")
        raise AssertionError("unreachable")

    def _wait_listening(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            if all(_accepts(port) for port in (self.https_port, self.metrics_port)):
                return True
            time.sleep(0.02)
        return False

    def stop(self, timeout: float = 10) -> int:
        """Stops nginx (SIGTERM: its workers stop too) and returns its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"nginx did not stop within {timeout}s of SIGTERM")

    # Talking to it.

    def connection(self, source: str = "127.0.0.1", timeout: float = 10,
                   context: ssl.SSLContext | None = None) -> http.client.HTTPSConnection:
        """An HTTPS connection from `source` (any 127.x.y.z address is this host) that trusts the test CA."""
        return http.client.HTTPSConnection("127.0.0.1", self.https_port, timeout=timeout,
                                           source_address=(source, 0), context=context or self.tls.client_context())

    def request(self, method: str, path: str, body: bytes | dict | None = None, headers: dict[str, str] | None = None,
                source: str = "127.0.0.1", timeout: float = 10) -> Response:
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        all_headers = {"Content-Type": "application/json"} if data is not None else {}
        all_headers.update(headers or {})
        connection = self.connection(source, timeout)
        try:
            connection.request(method, path, body=data, headers=all_headers)
            reply = connection.getresponse()
            return Response(reply.status, dict(reply.getheaders()), reply.read())
        finally:
            connection.close()

    def post(self, path: str, body: bytes | dict, **kwargs) -> Response:
        return self.request("POST", path, body, **kwargs)

    def tls_socket(self, source: str = "127.0.0.1", timeout: float = 10) -> ssl.SSLSocket:
        plain = socket.create_connection(("127.0.0.1", self.https_port), timeout=timeout, source_address=(source, 0))
        return self.tls.client_context().wrap_socket(plain, server_hostname=SERVER_NAME)

    def exchange(self, *parts: bytes, source: str = "127.0.0.1", pause: float = 0.05) -> RawResponse:
        """Sends `parts`, bytes as they are, over a new TLS connection, `pause` seconds apart (so nginx reads them
        apart, as from a network), and reads one response."""
        with self.tls_socket(source) as connection:
            for index, part in enumerate(parts):
                if index:
                    time.sleep(pause)
                connection.sendall(part)
            return read_response(connection)

    def log_line(self, request_id: str, timeout: float = 5) -> str:
        """nginx's access log line for `request_id` (nginx writes it just after the answer, so it is waited for)."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.access_log.read_text() if self.access_log.exists() else ""
            lines = [line for line in text.splitlines() if f" request_id={request_id} " in line]
            if lines or time.monotonic() > deadline:
                assert len(lines) == 1, f"{len(lines)} access log lines for {request_id}: {text[-2000:]}"
                return lines[0]
            time.sleep(0.02)


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def read_response(connection: socket.socket) -> RawResponse:
    """One HTTP/1.x response from `connection`, its body by Content-Length (every answer here has one)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed before a whole response: {data!r}")
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        assert name.lower() not in headers, f"header {name} twice in {head!r}"
        headers[name.lower()] = value.strip()
    length = int(headers["content-length"])
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed after {len(body)} of {length} body bytes")
        body += chunk
    assert len(body) == length, f"{len(body) - length} bytes past the body"
    return RawResponse(lines[0], headers, body)


def closed_by_peer(connection: socket.socket, timeout: float = 2) -> bool:
    """Whether the other end closes the connection (within `timeout`) without sending anything more."""
    connection.settimeout(timeout)
    try:
        return connection.recv(1) == b""
    except (TimeoutError, socket.timeout):
        return False
    except (ssl.SSLError, ConnectionResetError):
        return True


@contextlib.contextmanager
def nginx_in_front_of(upstream_port: int, directory: Path, tls: TestTLS | None = None) -> Iterator[Nginx]:
    """nginx with the shipped configuration in front of 127.0.0.1:`upstream_port` for the block; stopped at its
    end however it ends, and then required to have exited cleanly (unless the block failed already)."""
    proxy = Nginx.start(upstream_port, directory, tls or TestTLS.create(directory / "tls"))
    try:
        yield proxy
    except BaseException:
        proxy.stop()
        raise
    status = proxy.stop()
    assert status == 0, f"nginx exited with {status}: {(directory / 'nginx.stderr').read_text(errors='replace')}"
    assert not (directory / "nginx.pid").exists(), "nginx left its pid file: did it stop?"


def chunked(body: bytes, sizes: list[int]) -> bytes:
    """`body` in HTTP/1.1 chunked coding, in chunks of `sizes` (the rest in one last chunk)."""
    out, start = b"", 0
    for size in [*sizes, len(body)]:
        piece = body[start:start + size]
        if piece:
            out += b"%x\r\n" % len(piece) + piece + b"\r\n"
        start += len(piece)
    assert start == len(body)
    return out + b"0\r\n\r\n"

