"""The App Attest maker (appattest_device.py) judged without the service: against Apple's published sample,
OpenSSL's chain and CMS verification, `cryptography`'s ECDSA, and Apple's list of attestation checks."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import re
import subprocess
from pathlib import Path

import cbor2
import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from appattest_device import (
    APPLE_STYLE_EXTENSIONS,
    AppAttestCA,
    Device,
    attest_headers,
    attestation_client_data_hash,
    challenge_bytes,
    parse_assertion,
    parse_attestation,
    receipt_fields,
    request_client_data_hash,
)
from support import FIXTURES

TEAM_ID = "ABCDE12345"
BUNDLE = "com.example.interop"
APP_ID = f"{TEAM_ID}.{BUNDLE}"
CLIENT_DATA_HASH = hashlib.sha256(b"a one-time challenge, hashed once by the app").digest()

# Apple's values, written out here rather than taken from the maker.
AAGUID_PRODUCTION = b"appattest\x00\x00\x00\x00\x00\x00\x00"
AAGUID_DEVELOPMENT = b"appattestdevelop"
NONCE_OID = x509.ObjectIdentifier("1.2.840.113635.100.8.2")

APPLE_SAMPLE = FIXTURES / "app-attest-attestation-sample.b64"
APPLE_APP_ID = "1234567890.com.example.myapp"
APPLE_CHALLENGE = b"example_server_challenge"
APPLE_KEY_ID = base64.b64decode("zgSY9YSD+7TaDXssY6WlOPVS1K3Lmk+pFhlcSWE+ZV0=")
APPLE_RECEIPT_TIME = "1776798000"  # 2026-04-21T19:00:00Z: inside the sample receipt signer's validity.
APPLE_RECEIPT_FIELD_TYPES = [2, 3, 4, 5, 6, 7, 12, 21]


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def point(certificate: x509.Certificate) -> bytes:
    return certificate.public_key().public_bytes(serialization.Encoding.X962,
                                                 serialization.PublicFormat.UncompressedPoint)


def der(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.DER)


def openssl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["openssl", *args], capture_output=True, timeout=30)


def write_pem(path: Path, *certificates: bytes) -> Path:
    path.write_bytes(b"".join(
        x509.load_der_x509_certificate(c).public_bytes(serialization.Encoding.PEM) for c in certificates))
    return path


def chain_verifies(tmp: Path, root_pem: Path, x5c: list[bytes]) -> subprocess.CompletedProcess:
    """`openssl verify -CAfile root -untrusted intermediate leaf`, no purpose, at the current time."""
    leaf = write_pem(tmp / "leaf.pem", x5c[0])
    untrusted = write_pem(tmp / "untrusted.pem", *x5c[1:])
    return openssl("verify", "-CAfile", str(root_pem), "-untrusted", str(untrusted), str(leaf))


def cms_content(tmp: Path, receipt: bytes, root_pem: Path, *extra: str) -> bytes | None:
    """The receipt's content if `openssl cms -verify` accepts it against `root_pem`, else None."""
    (tmp / "receipt.der").write_bytes(receipt)
    out = tmp / "content.bin"
    out.unlink(missing_ok=True)
    result = openssl("cms", "-verify", "-binary", "-inform", "DER", "-in", str(tmp / "receipt.der"),
                     "-CAfile", str(root_pem), "-purpose", "any", "-out", str(out), *extra)
    return out.read_bytes() if result.returncode == 0 else None


def attestation_failures(tmp: Path, ca: AppAttestCA, obj: bytes, client_data_hash: bytes, key_id: bytes,
                         app_id: str = APP_ID, environment: str = "production") -> set[str]:
    """The names of Apple's attestation checks (steps 1-9, then the receipt's) that `obj` fails."""
    failed = set()
    parsed = parse_attestation(obj)
    if parsed.fmt != "apple-appattest":
        failed.add("format")
    if chain_verifies(tmp, ca.write_root_pem(tmp / "root.pem"), parsed.x5c).returncode != 0:
        failed.add("chain")
    if parsed.nonce != sha256(parsed.auth_data + client_data_hash):
        failed.add("nonce")
    if sha256(point(parsed.leaf)) != key_id:
        failed.add("key_id")
    if parsed.rp_id_hash != sha256(app_id.encode()):
        failed.add("app_id")
    if parsed.counter != 0:
        failed.add("counter")
    if parsed.aaguid != (AAGUID_PRODUCTION if environment == "production" else AAGUID_DEVELOPMENT):
        failed.add("aaguid")
    if parsed.credential_id != key_id:
        failed.add("credential_id")
    if parsed.extensions and not isinstance(cbor2.loads(parsed.extensions), dict):
        failed.add("extensions")
    content = cms_content(tmp, parsed.receipt, ca.write_receipt_root_pem(tmp / "receipt-root.pem"))
    if content is None:
        failed.add("receipt_signature")
    else:
        fields = {kind: value for kind, _, value in receipt_fields(content)}
        if fields.get(2) != app_id.encode():
            failed.add("receipt_app_id")
        if fields.get(6) != b"ATTEST":
            failed.add("receipt_type")
        if fields.get(3) != parsed.x5c[0] or fields.get(4) != client_data_hash:
            failed.add("receipt_binding")
    return failed


def cbor_shape(value):
    """Types and map keys in order, with byte-string contents and text values other than keys left out."""
    if isinstance(value, dict):
        return [(key, cbor_shape(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [cbor_shape(item) for item in value]
    return type(value).__name__


@pytest.fixture(scope="module")
def ca() -> AppAttestCA:
    return AppAttestCA()


@pytest.fixture()
def device(ca) -> Device:
    return Device(ca, TEAM_ID, BUNDLE)


@pytest.fixture(scope="module")
def apple_bytes() -> bytes:
    return base64.b64decode(APPLE_SAMPLE.read_text().strip(), validate=True)


@pytest.fixture(scope="module")
def apple(apple_bytes):
    return parse_attestation(apple_bytes)


# -- Apple's sample -------------------------------------------------------------------------------------------

def test_apple_sample_nonce_covers_the_raw_challenge_not_its_hash(apple):
    assert apple.fmt == "apple-appattest"
    assert apple.nonce == sha256(apple.auth_data + APPLE_CHALLENGE)
    assert apple.nonce != sha256(apple.auth_data + sha256(APPLE_CHALLENGE))


def test_apple_sample_authenticator_data_fields(apple):
    assert apple.rp_id_hash == sha256(APPLE_APP_ID.encode())
    assert apple.flags == 0x40
    assert apple.counter == 0
    assert apple.aaguid == AAGUID_PRODUCTION
    assert apple.credential_id == APPLE_KEY_ID == sha256(point(apple.leaf))
    assert apple.cose_key_offset == 55 + 32
    assert apple.cose_key[-2] + apple.cose_key[-3] == point(apple.leaf)[1:]
    assert cbor2.loads(apple.extensions) == APPLE_STYLE_EXTENSIONS


def test_apple_sample_receipt_verifies_with_the_same_openssl_command_to_apple_root_g3(apple, tmp_path):
    g3 = x509.load_der_x509_certificate((FIXTURES / "AppleRootCA-G3.cer").read_bytes())
    root = write_pem(tmp_path / "g3.pem", der(g3))
    content = cms_content(tmp_path, apple.receipt, root, "-attime", APPLE_RECEIPT_TIME)
    assert content is not None
    fields = {kind: value for kind, _, value in receipt_fields(content)}
    assert fields[2] == APPLE_APP_ID.encode()
    assert fields[3] == apple.x5c[0]
    assert fields[4] == APPLE_CHALLENGE
    assert fields[6] == b"ATTEST"


# -- the maker has Apple's structure --------------------------------------------------------------------------

def test_maker_object_has_the_same_cbor_shape_as_apples(device, apple_bytes):
    ours = cbor2.loads(device.attestation(CLIENT_DATA_HASH))
    theirs = cbor2.loads(apple_bytes)
    assert cbor_shape(ours) == cbor_shape(theirs)
    assert ours["fmt"] == theirs["fmt"]


def test_maker_authenticator_data_has_apples_offsets_and_key_encoding(device, apple):
    ours = parse_attestation(device.attestation(CLIENT_DATA_HASH, extensions=APPLE_STYLE_EXTENSIONS))
    for parsed in (ours, apple):
        assert parsed.auth_data[53:55] == b"\x00\x20"
        assert parsed.cose_key_offset == 87
        assert len(parsed.auth_data) - len(parsed.extensions) == 87 + 77
    assert ours.flags == apple.flags
    assert ours.aaguid == apple.aaguid
    # COSE_Key heads (a5 01 02 03 26 20 01 21 58 20 ... 22 58 20 ...) byte for byte.
    assert ours.auth_data[87:97] == apple.auth_data[87:97]
    assert ours.auth_data[129:132] == apple.auth_data[129:132]
    assert list(ours.cose_key) == list(apple.cose_key)
    assert ours.extensions == apple.extensions


def test_maker_leaf_encodes_the_nonce_extension_as_apple_does(device, apple):
    ours = parse_attestation(device.attestation(CLIENT_DATA_HASH))
    ours_ext = ours.leaf.extensions.get_extension_for_oid(NONCE_OID)
    apple_ext = apple.leaf.extensions.get_extension_for_oid(NONCE_OID)
    assert ours_ext.critical == apple_ext.critical is False
    assert ours_ext.value.value[:6] == apple_ext.value.value[:6] == bytes.fromhex("3024a1220420")
    assert len(ours_ext.value.value) == len(apple_ext.value.value) == 38
    assert ours.nonce == ours_ext.value.value[6:]


def test_maker_certificates_look_like_apples(device, apple):
    ours = parse_attestation(device.attestation(CLIENT_DATA_HASH))
    pairs = [(x509.load_der_x509_certificate(a), x509.load_der_x509_certificate(b))
             for a, b in zip(ours.x5c, apple.x5c, strict=True)]
    for mine, theirs in pairs:
        assert mine.signature_algorithm_oid == theirs.signature_algorithm_oid
        assert mine.public_key().curve.name == theirs.public_key().curve.name
        assert mine.extensions.get_extension_for_class(x509.BasicConstraints).value == \
            theirs.extensions.get_extension_for_class(x509.BasicConstraints).value
    leaf = pairs[0][0]
    assert [a.oid for a in leaf.subject] == [a.oid for a in apple.leaf.subject]
    assert leaf.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value == device.key_id.hex()
    assert leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == \
        apple.leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value


def test_maker_receipt_lists_apples_fields_in_apples_order(device, apple, tmp_path, ca):
    ours = parse_attestation(device.attestation(CLIENT_DATA_HASH))
    content = cms_content(tmp_path, ours.receipt, ca.write_receipt_root_pem(tmp_path / "receipt-root.pem"))
    theirs = cms_content(tmp_path, apple.receipt, write_pem(tmp_path / "g3.pem", (FIXTURES / "AppleRootCA-G3.cer")
                                                             .read_bytes()), "-attime", APPLE_RECEIPT_TIME)
    assert content is not None and theirs is not None
    assert [(kind, version) for kind, version, _ in receipt_fields(content)] == \
        [(kind, version) for kind, version, _ in receipt_fields(theirs)] == \
        [(kind, 1) for kind in APPLE_RECEIPT_FIELD_TYPES]
    time_text = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
    for fields in (receipt_fields(content), receipt_fields(theirs)):
        by_type = {kind: value for kind, _, value in fields}
        assert by_type[7] == b"production"
        assert time_text.fullmatch(by_type[12]) and time_text.fullmatch(by_type[21])


# -- the maker's own objects verify independently -------------------------------------------------------------

def test_maker_attestation_passes_every_check(device, ca, tmp_path):
    obj = device.attestation(CLIENT_DATA_HASH)
    assert attestation_failures(tmp_path, ca, obj, CLIENT_DATA_HASH, device.key_id) == set()


def test_development_device_writes_the_development_aaguid_and_sandbox_receipt(ca, tmp_path):
    device = Device(ca, TEAM_ID, BUNDLE, environment="development")
    obj = device.attestation(CLIENT_DATA_HASH)
    assert attestation_failures(tmp_path, ca, obj, CLIENT_DATA_HASH, device.key_id, environment="development") == set()
    assert attestation_failures(tmp_path, ca, obj, CLIENT_DATA_HASH, device.key_id) == {"aaguid"}
    content = cms_content(tmp_path, parse_attestation(obj).receipt, ca.write_receipt_root_pem(tmp_path / "r.pem"))
    assert {kind: value for kind, _, value in receipt_fields(content)}[7] == b"sandbox"


def test_leaf_chains_to_the_root_and_not_to_another(device, ca, tmp_path):
    x5c = parse_attestation(device.attestation(CLIENT_DATA_HASH)).x5c
    ok = chain_verifies(tmp_path, ca.write_root_pem(tmp_path / "root.pem"), x5c)
    assert ok.returncode == 0, ok.stderr
    assert b"OK" in ok.stdout
    stranger = AppAttestCA().write_root_pem(tmp_path / "stranger.pem")
    assert chain_verifies(tmp_path, stranger, x5c).returncode != 0


def test_receipt_verifies_to_the_receipt_root_only_and_reads_back(device, ca, tmp_path):
    obj = device.attestation(CLIENT_DATA_HASH)
    parsed = parse_attestation(obj)
    content = cms_content(tmp_path, parsed.receipt, ca.write_receipt_root_pem(tmp_path / "receipt-root.pem"))
    assert content is not None
    fields = {kind: value for kind, _, value in receipt_fields(content)}
    assert fields[2] == APP_ID.encode()
    assert fields[3] == parsed.x5c[0]
    assert fields[4] == CLIENT_DATA_HASH
    assert fields[6] == b"ATTEST"
    assert len(base64.b64decode(fields[5], validate=True)) == 64
    created = dt.datetime.strptime(fields[12].decode(), "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc)
    assert abs(dt.datetime.now(dt.timezone.utc) - created) < dt.timedelta(minutes=1)
    assert cms_content(tmp_path, parsed.receipt, ca.write_root_pem(tmp_path / "app-attest-root.pem")) is None


def test_receipt_with_one_changed_content_byte_fails_cms_verification(device, ca, tmp_path):
    receipt = parse_attestation(device.attestation(CLIENT_DATA_HASH)).receipt
    at = receipt.index(APP_ID.encode())
    tampered = receipt[:at] + b"X" + receipt[at + 1:]
    root = ca.write_receipt_root_pem(tmp_path / "receipt-root.pem")
    assert cms_content(tmp_path, receipt, root) is not None
    assert cms_content(tmp_path, tampered, root) is None


# -- each attestation knob breaks its one check ---------------------------------------------------------------

OTHER_APP_ID = "ZZZZZ99999.com.example.other"

ATTESTATION_KNOBS = [
    ({"wrong_nonce": True}, {"nonce"}),
    ({"rp_id": OTHER_APP_ID}, {"app_id"}),
    ({"aaguid": AAGUID_DEVELOPMENT}, {"aaguid"}),
    ({"counter": 1}, {"counter"}),
    ({"credential_id": bytes(32)}, {"credential_id"}),
    ({"fmt": "packed"}, {"format"}),
    ({"other_root": True}, {"chain"}),
    ({"receipt_app_id": OTHER_APP_ID}, {"receipt_app_id"}),
    ({"receipt_type": b"RECEIPT"}, {"receipt_type"}),
    ({"receipt": b"\x30\x00"}, {"receipt_signature"}),
    ({"extensions": APPLE_STYLE_EXTENSIONS}, set()),
    ({"extensions": cbor2.dumps({"apple_bundle_version_01": "7"})}, set()),
    ({"extra_leaf_extension": True}, set()),
]


@pytest.mark.parametrize(("knob", "expected"), ATTESTATION_KNOBS, ids=[next(iter(k)) for k, _ in ATTESTATION_KNOBS])
def test_attestation_knob_fails_exactly_its_check(knob, expected, device, ca, tmp_path):
    obj = device.attestation(CLIENT_DATA_HASH, **knob)
    assert attestation_failures(tmp_path, ca, obj, CLIENT_DATA_HASH, device.key_id) == expected


def test_wrong_nonce_differs_in_one_byte(device):
    parsed = parse_attestation(device.attestation(CLIENT_DATA_HASH, wrong_nonce=True))
    right = sha256(parsed.auth_data + CLIENT_DATA_HASH)
    assert sum(a != b for a, b in zip(parsed.nonce, right)) == 1


def test_extensions_follow_the_cose_key_with_the_ed_flag_clear(device):
    parsed = parse_attestation(device.attestation(CLIENT_DATA_HASH, extensions=APPLE_STYLE_EXTENSIONS))
    assert parsed.flags == 0x40
    assert cbor2.loads(parsed.extensions) == APPLE_STYLE_EXTENSIONS
    assert parsed.nonce == sha256(parsed.auth_data + CLIENT_DATA_HASH)


def test_extra_leaf_extension_is_unknown_and_not_critical(device):
    plain = parse_attestation(device.attestation(CLIENT_DATA_HASH)).leaf
    extra = parse_attestation(device.attestation(CLIENT_DATA_HASH, extra_leaf_extension=True)).leaf
    added = {e.oid for e in extra.extensions} - {e.oid for e in plain.extensions}
    assert len(added) == 1
    extension = extra.extensions.get_extension_for_oid(added.pop())
    assert not extension.critical
    assert isinstance(extension.value, x509.UnrecognizedExtension)


def test_other_root_keeps_the_intermediate_key_and_name(device, ca):
    x5c = parse_attestation(device.attestation(CLIENT_DATA_HASH, other_root=True)).x5c
    intermediate = x509.load_der_x509_certificate(x5c[1])
    assert intermediate.subject == ca.intermediate.subject
    assert intermediate.issuer == ca.root.subject
    assert point(intermediate) == point(ca.intermediate)
    assert x5c[1] != der(ca.intermediate)


# -- assertions -----------------------------------------------------------------------------------------------

def assertion_verifies(public_key: ec.EllipticCurvePublicKey, obj: bytes, client_data_hash: bytes) -> bool:
    parsed = parse_assertion(obj)
    nonce = sha256(parsed.authenticator_data + client_data_hash)
    try:
        public_key.verify(parsed.signature, nonce, ec.ECDSA(hashes.SHA256()))
        return True
    except InvalidSignature:
        return False


def test_assertion_signs_the_nonce_with_the_attested_key(device):
    obj = device.assertion(CLIENT_DATA_HASH)
    parsed = parse_assertion(obj)
    assert parsed.keys == ["signature", "authenticatorData"]
    assert len(parsed.authenticator_data) == 37
    assert parsed.rp_id_hash == sha256(APP_ID.encode())
    assert parsed.flags == 0x40
    assert assertion_verifies(device.public_key, obj, CLIENT_DATA_HASH)
    assert not assertion_verifies(device.public_key, obj, sha256(CLIENT_DATA_HASH))
    tampered = cbor2.dumps({"signature": parsed.signature,
                            "authenticatorData": parsed.authenticator_data[:36] + b"\x09"})
    assert not assertion_verifies(device.public_key, tampered, CLIENT_DATA_HASH)


def test_assertion_counter_increments_and_explicit_counter_only_moves_it_forward(device):
    assert [parse_assertion(device.assertion(CLIENT_DATA_HASH)).counter for _ in range(2)] == [1, 2]
    assert parse_assertion(device.assertion(CLIENT_DATA_HASH, counter=10)).counter == 10
    assert parse_assertion(device.assertion(CLIENT_DATA_HASH)).counter == 11
    assert parse_assertion(device.assertion(CLIENT_DATA_HASH, counter=3)).counter == 3
    assert parse_assertion(device.assertion(CLIENT_DATA_HASH)).counter == 12


def test_assertion_rp_id_knob_changes_only_the_rp_id_hash(device):
    obj = device.assertion(CLIENT_DATA_HASH, rp_id=OTHER_APP_ID)
    assert parse_assertion(obj).rp_id_hash == sha256(OTHER_APP_ID.encode())
    assert assertion_verifies(device.public_key, obj, CLIENT_DATA_HASH)


def test_assertion_sign_with_knob_uses_the_other_key(device):
    other = ec.generate_private_key(ec.SECP256R1())
    obj = device.assertion(CLIENT_DATA_HASH, sign_with=other)
    assert not assertion_verifies(device.public_key, obj, CLIENT_DATA_HASH)
    assert assertion_verifies(other.public_key(), obj, CLIENT_DATA_HASH)


def test_assertion_extensions_follow_byte_37_and_are_signed(device):
    obj = device.assertion(CLIENT_DATA_HASH, extensions=APPLE_STYLE_EXTENSIONS)
    parsed = parse_assertion(obj)
    assert parsed.flags == 0x40
    assert cbor2.loads(parsed.extensions) == APPLE_STYLE_EXTENSIONS
    assert assertion_verifies(device.public_key, obj, CLIENT_DATA_HASH)


# -- the wire helpers -----------------------------------------------------------------------------------------

CHALLENGE = base64.urlsafe_b64encode(bytes(range(250, 256)) + bytes(range(26))).rstrip(b"=").decode()


def test_challenge_bytes_decodes_unpadded_base64url_strictly():
    assert challenge_bytes(CHALLENGE) == bytes(range(250, 256)) + bytes(range(26))
    assert "-" in CHALLENGE or "_" in CHALLENGE
    for bad in (CHALLENGE + "=", CHALLENGE.replace("-", "+").replace("_", "/"), CHALLENGE[:-1] + "!", "abcde"):
        with pytest.raises(ValueError):
            challenge_bytes(bad)


def test_client_data_hashes_follow_the_wire_contract():
    raw = bytes(range(250, 256)) + bytes(range(26))
    body = b'{"productId":"p"}'
    assert attestation_client_data_hash(CHALLENGE) == hashlib.sha256(raw).digest()
    assert request_client_data_hash(CHALLENGE, body) == hashlib.sha256(raw + hashlib.sha256(body).digest()).digest()


def test_attest_headers_carry_a_verifiable_assertion_for_the_body(device):
    body = b'{"productId":"p"}'
    headers = attest_headers(device, CHALLENGE, body)
    assert set(headers) == {"X-App-Attest-Key-Id", "X-App-Attest-Challenge", "X-App-Attest-Assertion"}
    assert base64.b64decode(headers["X-App-Attest-Key-Id"], validate=True) == device.key_id
    assert headers["X-App-Attest-Challenge"] == CHALLENGE
    obj = base64.b64decode(headers["X-App-Attest-Assertion"], validate=True)
    client_data = base64.urlsafe_b64decode(CHALLENGE + "==") + hashlib.sha256(body).digest()
    assert assertion_verifies(device.public_key, obj, hashlib.sha256(client_data).digest())
    assert not assertion_verifies(device.public_key, obj, hashlib.sha256(client_data + b" ").digest())


def test_key_id_is_the_hash_of_the_uncompressed_point(device):
    raw = device.public_key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    assert len(raw) == 65 and raw[0] == 4
    assert device.key_id == hashlib.sha256(raw).digest()
    assert base64.b64decode(device.key_id_b64, validate=True) == device.key_id
    spki = device.public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert device.key_id != hashlib.sha256(spki).digest()
