"""A stand-in for an iPhone's App Attest: attestation and assertion objects in Apple's documented layout.

Built from Apple's DeviceCheck articles ("Validating apps that connect to your server", "Attestation Object
Validation Guide", "Assessing fraud risk") and Apple's published sample, never from the service's code, so the
interop tests judge the service against an independent reading of the format. A private `AppAttestCA` stands in
for Apple's App Attestation root (x5c) and for the CA behind the receipt's CMS signature.

Each keyword "knob" of `Device.attestation` and `Device.assertion` breaks exactly one check of Apple's list and
keeps every other one valid, so a refusal can only be for the intended reason.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import io
import re
import secrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import cbor2
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs7
from cryptography.x509.oid import NameOID

FORMAT = "apple-appattest"
AAGUID_PRODUCTION = b"appattest" + bytes(7)
AAGUID_DEVELOPMENT = b"appattestdevelop"
FLAG_ATTESTED = 0x40  # AT: what Apple sets in attestations and (without attested data) in assertions.
FLAG_EXTENSIONS = 0x80  # ED: Apple leaves it clear even when an extensions map follows.

NONCE_OID = x509.ObjectIdentifier("1.2.840.113635.100.8.2")
APP_ATTEST_EKU_OID = x509.ObjectIdentifier("1.2.840.113635.100.4.24")
# An OID no verifier can know: the UUID arc (X.667) with a fixed UUID.
UNKNOWN_EXTENSION_OID = x509.ObjectIdentifier("2.25." + str(uuid.UUID("6f2b7d0e-3c1a-4e55-9a0b-0d1e2f3a4b5c").int))

# Receipt field types from "Assessing fraud risk"; 7 (environment) is seen in Apple's receipts but not in the table.
RECEIPT_APP_ID = 2
RECEIPT_ATTESTED_PUBLIC_KEY = 3  # the whole credential certificate, DER
RECEIPT_CLIENT_HASH = 4
RECEIPT_TOKEN = 5
RECEIPT_TYPE = 6
RECEIPT_ENVIRONMENT = 7
RECEIPT_CREATION_TIME = 12
RECEIPT_RISK_METRIC = 17  # only in RECEIPT-type receipts
RECEIPT_NOT_BEFORE = 19  # only in RECEIPT-type receipts
RECEIPT_EXPIRATION_TIME = 21

# The authenticator-data extensions of Apple's 2026 sample, as a value for the `extensions` knob.
APPLE_STYLE_EXTENSIONS = {"apple_bundle_version_01": "1", "apple_validation_category_01": (1).to_bytes(4, "little")}

_HOUR = dt.timedelta(hours=1)
_DAY = dt.timedelta(days=1)


# -- DER: just what the receipt payload and the nonce extension need ------------------------------------------

def _der(tag: int, content: bytes) -> bytes:
    """One definite-length DER TLV with a low-number tag."""
    n = len(content)
    if n < 0x80:
        length = bytes([n])
    else:
        digits = n.to_bytes((n.bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(digits)]) + digits
    return bytes([tag]) + length + content


def _der_integer(value: int) -> bytes:
    """A non-negative INTEGER in its shortest two's-complement form."""
    if value < 0:
        raise ValueError("negative INTEGER not supported")
    return _der(0x02, value.to_bytes(value.bit_length() // 8 + 1, "big"))


def _der_read(data: bytes, pos: int = 0) -> tuple[int, bytes, int]:
    """The TLV at `pos`: (tag, content, offset after it). Rejects indefinite lengths and overruns."""
    if pos + 2 > len(data):
        raise ValueError("truncated DER")
    tag = data[pos]
    if tag & 0x1F == 0x1F:
        raise ValueError("high-number DER tags not supported")
    first = data[pos + 1]
    pos += 2
    if first == 0x80:
        raise ValueError("indefinite length is not DER")
    if first > 0x80:
        count = first & 0x7F
        if pos + count > len(data):
            raise ValueError("truncated DER length")
        length = int.from_bytes(data[pos:pos + count], "big")
        pos += count
    else:
        length = first
    if pos + length > len(data):
        raise ValueError("DER content overruns its container")
    return tag, data[pos:pos + length], pos + length


def _der_children(content: bytes) -> list[tuple[int, bytes]]:
    """The TLVs that make up a constructed value's content, as (tag, content)."""
    children, pos = [], 0
    while pos < len(content):
        tag, value, pos = _der_read(content, pos)
        children.append((tag, value))
    return children


def nonce_extension_value(nonce: bytes) -> bytes:
    """The extnValue contents of OID 1.2.840.113635.100.8.2: SEQUENCE { [1] EXPLICIT OCTET STRING nonce }."""
    return _der(0x30, _der(0xA1, _der(0x04, nonce)))


def read_nonce_extension(value: bytes) -> bytes:
    """The nonce inside an extension value made as `nonce_extension_value` describes."""
    tag, sequence, end = _der_read(value)
    if tag != 0x30 or end != len(value):
        raise ValueError("nonce extension is not one SEQUENCE")
    children = _der_children(sequence)
    if len(children) != 1 or children[0][0] != 0xA1:
        raise ValueError("nonce SEQUENCE does not hold one [1] element")
    inner = _der_children(children[0][1])
    if len(inner) != 1 or inner[0][0] != 0x04:
        raise ValueError("[1] does not hold one OCTET STRING")
    return inner[0][1]


def receipt_payload(fields: list[tuple[int, bytes]]) -> bytes:
    """The receipt's signed content: SET of SEQUENCE { INTEGER type, INTEGER version (1), OCTET STRING value }.

    Elements stay in the given order (Apple's receipts list them by type, not in DER's sorted SET OF order).
    """
    return _der(0x31, b"".join(
        _der(0x30, _der_integer(kind) + _der_integer(1) + _der(0x04, value)) for kind, value in fields))


def receipt_fields(payload: bytes) -> list[tuple[int, int, bytes]]:
    """The (type, version, value) triples of a receipt's content, in order."""
    tag, content, end = _der_read(payload)
    if tag != 0x31 or end != len(payload):
        raise ValueError("receipt content is not one SET")
    out = []
    for seq_tag, seq in _der_children(content):
        parts = _der_children(seq)
        if seq_tag != 0x30 or [t for t, _ in parts] != [0x02, 0x02, 0x04]:
            raise ValueError("receipt field is not SEQUENCE { INTEGER, INTEGER, OCTET STRING }")
        out.append((int.from_bytes(parts[0][1], "big", signed=True),
                    int.from_bytes(parts[1][1], "big", signed=True), parts[2][1]))
    return out


# -- helpers on the wire contract -----------------------------------------------------------------------------

def sha256(data: bytes) -> bytes:
    """The SHA-256 digest of `data`."""
    return hashlib.sha256(data).digest()


def challenge_bytes(challenge: str) -> bytes:
    """The bytes of a challenge string: base64url without padding, decoded strictly."""
    if not re.fullmatch(r"[A-Za-z0-9_-]*", challenge) or len(challenge) % 4 == 1:
        raise ValueError(f"not unpadded base64url: {challenge!r}")
    return base64.urlsafe_b64decode(challenge + "=" * (-len(challenge) % 4))


def attestation_client_data_hash(challenge: str) -> bytes:
    """What the app passes to attestKey: SHA-256(challenge bytes)."""
    return sha256(challenge_bytes(challenge))


def request_client_data_hash(challenge: str, body: bytes) -> bytes:
    """What the app passes to generateAssertion: SHA-256(challenge bytes ‖ SHA-256(body))."""
    return sha256(challenge_bytes(challenge) + sha256(body))


def public_point(key: ec.EllipticCurvePublicKey) -> bytes:
    """The 65-byte X9.62 uncompressed point 04 ‖ X ‖ Y."""
    return key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)


def cose_key(key: ec.EllipticCurvePublicKey) -> bytes:
    """The COSE_Key map {1: 2 (EC2), 3: -7 (ES256), -1: 1 (P-256), -2: x, -3: y}, keys in Apple's order."""
    point = public_point(key)
    return cbor2.dumps({1: 2, 3: -7, -1: 1, -2: point[1:33], -3: point[33:65]})


# -- the private CAs ------------------------------------------------------------------------------------------

def _name(*parts: tuple[x509.ObjectIdentifier, str]) -> x509.Name:
    return x509.Name([x509.NameAttribute(oid, value) for oid, value in parts])


def _ca_name(common_name: str) -> x509.Name:
    return _name((NameOID.COMMON_NAME, common_name), (NameOID.ORGANIZATION_NAME, "offer-signer interop tests"),
                 (NameOID.STATE_OR_PROVINCE_NAME, "California"))


def _ca_key_usage() -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                         data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                         encipher_only=False, decipher_only=False)


def _self_signed_ca(name: x509.Name, key: ec.EllipticCurvePrivateKey, algorithm: hashes.HashAlgorithm,
                    now: dt.datetime) -> x509.Certificate:
    return (x509.CertificateBuilder()
            .subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY).not_valid_after(now + 20 * 365 * _DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(_ca_key_usage(), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, algorithm))


def _intermediate(name: x509.Name, key: ec.EllipticCurvePrivateKey, issuer: x509.Certificate,
                  issuer_key: ec.EllipticCurvePrivateKey, now: dt.datetime) -> x509.Certificate:
    return (x509.CertificateBuilder()
            .subject_name(name).issuer_name(issuer.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY).not_valid_after(now + 10 * 365 * _DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
                           critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(_ca_key_usage(), critical=True)
            .sign(issuer_key, hashes.SHA384()))


class AppAttestCA:
    """Private stand-ins for Apple's two trust anchors, created at construction.

    - App Attestation: a self-signed P-384 root ("trust.appAttestRootCertificates") and a P-384 intermediate
      (CA, pathlen 0) that issues the credential certificates, as Apple's "App Attestation CA 1" does.
    - Receipts: a self-signed P-384 root ("trust.rootCertificates") and a P-256 end-entity signer for the CMS.

    `other_intermediate` has the intermediate's name and key but is signed by a second root that carries the
    real root's name and is never exported: a chain that looks right and does not verify.
    """

    def __init__(self, now: dt.datetime | None = None) -> None:
        now = now or dt.datetime.now(dt.timezone.utc)
        self._root_key = ec.generate_private_key(ec.SECP384R1())
        self.root = _self_signed_ca(_ca_name("Interop App Attestation Root CA"), self._root_key, hashes.SHA384(), now)
        self.intermediate_key = ec.generate_private_key(ec.SECP384R1())
        self.intermediate = _intermediate(_ca_name("Interop App Attestation CA 1"), self.intermediate_key,
                                          self.root, self._root_key, now)
        other_root_key = ec.generate_private_key(ec.SECP384R1())
        other_root = _self_signed_ca(self.root.subject, other_root_key, hashes.SHA384(), now)
        self.other_intermediate = _intermediate(self.intermediate.subject, self.intermediate_key, other_root,
                                                other_root_key, now)

        self._receipt_root_key = ec.generate_private_key(ec.SECP384R1())
        self.receipt_root = _self_signed_ca(_ca_name("Interop Receipt Root CA"), self._receipt_root_key,
                                            hashes.SHA384(), now)
        self.receipt_signer_key = ec.generate_private_key(ec.SECP256R1())
        signer_key_usage = x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
            key_agreement=False, key_cert_sign=False, crl_sign=False, encipher_only=False, decipher_only=False)
        self.receipt_signer = (
            x509.CertificateBuilder()
            .subject_name(_ca_name("Interop Attestation Fraud Receipt Signing"))
            .issuer_name(self.receipt_root.subject).public_key(self.receipt_signer_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY).not_valid_after(now + 365 * _DAY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(signer_key_usage, critical=True)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._receipt_root_key.public_key()),
                           critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.receipt_signer_key.public_key()),
                           critical=False)
            .sign(self._receipt_root_key, hashes.SHA384()))

    def root_pem(self) -> bytes:
        """The App Attestation root, PEM."""
        return self.root.public_bytes(serialization.Encoding.PEM)

    def write_root_pem(self, path: str | Path) -> Path:
        """Writes the App Attestation root as PEM; returns the path."""
        path = Path(path)
        path.write_bytes(self.root_pem())
        return path

    def receipt_root_pem(self) -> bytes:
        """The receipt root, PEM."""
        return self.receipt_root.public_bytes(serialization.Encoding.PEM)

    def write_receipt_root_pem(self, path: str | Path) -> Path:
        """Writes the receipt root as PEM; returns the path."""
        path = Path(path)
        path.write_bytes(self.receipt_root_pem())
        return path

    def credential_certificate(self, key: ec.EllipticCurvePublicKey, nonce_value: bytes, now: dt.datetime, *,
                               extra_extension: bool = False) -> x509.Certificate:
        """A leaf like Apple's credCert: CN = hex key ID, valid from a day before `now` for three days.

        `nonce_value` is the whole extnValue of OID 1.2.840.113635.100.8.2. No AuthorityKeyIdentifier, as in
        Apple's leaves. Issued by the intermediate's key, so `other_intermediate` issues it too.
        """
        key_id = sha256(public_point(key))
        usage = x509.KeyUsage(digital_signature=True, content_commitment=True, key_encipherment=True,
                              data_encipherment=True, key_agreement=False, key_cert_sign=False, crl_sign=False,
                              encipher_only=False, decipher_only=False)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name((NameOID.COMMON_NAME, key_id.hex()),
                                (NameOID.ORGANIZATIONAL_UNIT_NAME, "AAA Certification"),
                                (NameOID.ORGANIZATION_NAME, "offer-signer interop tests"),
                                (NameOID.STATE_OR_PROVINCE_NAME, "California")))
            .issuer_name(self.intermediate.subject).public_key(key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY).not_valid_after(now + 2 * _DAY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(usage, critical=True)
            .add_extension(x509.ExtendedKeyUsage([APP_ATTEST_EKU_OID]), critical=False)
            .add_extension(x509.UnrecognizedExtension(NONCE_OID, nonce_value), critical=False))
        if extra_extension:
            builder = builder.add_extension(
                x509.UnrecognizedExtension(UNKNOWN_EXTENSION_OID, _der(0x0C, b"interop")), critical=False)
        return builder.sign(self.intermediate_key, hashes.SHA256())

    def sign_receipt(self, payload: bytes) -> bytes:
        """CMS SignedData (DER) embedding `payload`, SHA-256, signed by the receipt signer (its certificate only)."""
        return (pkcs7.PKCS7SignatureBuilder()
                .set_data(payload)
                .add_signer(self.receipt_signer, self.receipt_signer_key, hashes.SHA256())
                .sign(serialization.Encoding.DER, [pkcs7.PKCS7Options.Binary]))


# -- the device -----------------------------------------------------------------------------------------------

def _receipt_time(moment: dt.datetime) -> bytes:
    """Apple's receipt time text, e.g. 2026-04-21T18:13:12.153Z."""
    moment = moment.astimezone(dt.timezone.utc)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z".encode()


def _extension_bytes(extensions: bytes | Mapping | None) -> bytes:
    """Extension bytes as given, or a map CBOR-encoded."""
    if extensions is None:
        return b""
    return extensions if isinstance(extensions, bytes) else cbor2.dumps(dict(extensions))


class Device:
    """One App Attest key on one device, for the App ID "<team_id>.<bundle_id>".

    `environment` is "production" or "development" and chooses the AAGUID and the receipt's environment.
    """

    def __init__(self, ca: AppAttestCA, team_id: str, bundle_id: str, environment: str = "production") -> None:
        if environment not in ("production", "development"):
            raise ValueError(f"environment must be production or development, not {environment!r}")
        self.ca = ca
        self.team_id = team_id
        self.bundle_id = bundle_id
        self.environment = environment
        self.private_key = ec.generate_private_key(ec.SECP256R1())
        self.public_key = self.private_key.public_key()
        self.key_id = sha256(public_point(self.public_key))
        self.key_id_b64 = base64.b64encode(self.key_id).decode()
        self.counter = 0

    @property
    def app_id(self) -> str:
        """The App ID, "<team ID>.<bundle ID>"; its SHA-256 is the RP ID hash."""
        return f"{self.team_id}.{self.bundle_id}"

    def attestation(
        self,
        client_data_hash: bytes,
        *,
        now: dt.datetime | None = None,
        wrong_nonce: bool = False,
        rp_id: str | None = None,
        aaguid: bytes | None = None,
        counter: int = 0,
        credential_id: bytes | None = None,
        fmt: str = FORMAT,
        flags: int = FLAG_ATTESTED,
        extensions: bytes | Mapping | None = None,
        other_root: bool = False,
        extra_leaf_extension: bool = False,
        receipt_app_id: str | None = None,
        receipt_type: bytes = b"ATTEST",
        receipt: bytes | None = None,
    ) -> bytes:
        """The CBOR attestation object for `client_data_hash` (the bytes the app passes to attestKey).

        Knobs: `wrong_nonce` flips the nonce's first byte in the leaf; `rp_id` hashes another App ID into
        authData; `aaguid`, `counter`, `credential_id` (its length is written too), `fmt` and `flags` replace
        those fields; `extensions` (bytes, or a map CBOR-encodes) follows the COSE key with `flags` unchanged;
        `other_root` ships `ca.other_intermediate`; `extra_leaf_extension` adds a non-critical unknown
        extension to the leaf; `receipt_app_id` and `receipt_type` change receipt fields 2 and 6; `receipt`
        replaces the receipt bytes. `now` (default: the clock) sets the leaf's validity and receipt times.
        """
        now = now or dt.datetime.now(dt.timezone.utc)
        if aaguid is None:
            aaguid = AAGUID_PRODUCTION if self.environment == "production" else AAGUID_DEVELOPMENT
        credential_id = self.key_id if credential_id is None else credential_id
        auth_data = (sha256((rp_id or self.app_id).encode()) + bytes([flags]) + counter.to_bytes(4, "big")
                     + aaguid + len(credential_id).to_bytes(2, "big") + credential_id
                     + cose_key(self.public_key) + _extension_bytes(extensions))
        nonce = sha256(auth_data + client_data_hash)
        if wrong_nonce:
            nonce = bytes([nonce[0] ^ 0x01]) + nonce[1:]
        leaf = self.ca.credential_certificate(self.public_key, nonce_extension_value(nonce), now,
                                              extra_extension=extra_leaf_extension)
        leaf_der = leaf.public_bytes(serialization.Encoding.DER)
        intermediate = self.ca.other_intermediate if other_root else self.ca.intermediate
        if receipt is None:
            receipt = self.ca.sign_receipt(receipt_payload(self._receipt_fields(
                leaf_der, client_data_hash, now, receipt_app_id or self.app_id, receipt_type)))
        return cbor2.dumps({
            "fmt": fmt,
            "attStmt": {"x5c": [leaf_der, intermediate.public_bytes(serialization.Encoding.DER)],
                        "receipt": receipt},
            "authData": auth_data,
        })

    def _receipt_fields(self, leaf_der: bytes, client_data_hash: bytes, now: dt.datetime, app_id: str,
                        receipt_type: bytes) -> list[tuple[int, bytes]]:
        fields = [
            (RECEIPT_APP_ID, app_id.encode()),
            (RECEIPT_ATTESTED_PUBLIC_KEY, leaf_der),
            (RECEIPT_CLIENT_HASH, client_data_hash),
            (RECEIPT_TOKEN, base64.b64encode(secrets.token_bytes(64))),
            (RECEIPT_TYPE, receipt_type),
            (RECEIPT_ENVIRONMENT, b"production" if self.environment == "production" else b"sandbox"),
            (RECEIPT_CREATION_TIME, _receipt_time(now)),
        ]
        if receipt_type == b"RECEIPT":
            fields += [(RECEIPT_RISK_METRIC, b"1"), (RECEIPT_NOT_BEFORE, _receipt_time(now + _DAY))]
        return fields + [(RECEIPT_EXPIRATION_TIME, _receipt_time(now + 90 * _DAY))]

    def assertion(
        self,
        client_data_hash: bytes,
        counter: int | None = None,
        *,
        rp_id: str | None = None,
        sign_with: ec.EllipticCurvePrivateKey | None = None,
        flags: int = FLAG_ATTESTED,
        extensions: bytes | Mapping | None = None,
    ) -> bytes:
        """The CBOR assertion {"signature", "authenticatorData"} for `client_data_hash`.

        The counter is the device's own, incremented first; an explicit `counter` is used as given and the
        device's counter becomes the larger of the two. Knobs: `rp_id` hashes another App ID; `sign_with`
        signs with another key; `flags` replaces the flags byte; `extensions` (bytes or a map) follows byte 37.
        """
        if counter is None:
            self.counter += 1
            counter = self.counter
        else:
            self.counter = max(self.counter, counter)
        authenticator_data = (sha256((rp_id or self.app_id).encode()) + bytes([flags]) + counter.to_bytes(4, "big")
                              + _extension_bytes(extensions))
        nonce = sha256(authenticator_data + client_data_hash)
        signature = (sign_with or self.private_key).sign(nonce, ec.ECDSA(hashes.SHA256()))
        return cbor2.dumps({"signature": signature, "authenticatorData": authenticator_data})


def attest_headers(device: Device, challenge: str, body: bytes, counter: int | None = None, **knobs) -> dict[str, str]:
    """The three X-App-Attest-* headers for a request `body` under `challenge`; knobs go to `Device.assertion`."""
    assertion = device.assertion(request_client_data_hash(challenge, body), counter, **knobs)
    return {
        "X-App-Attest-Key-Id": device.key_id_b64,
        "X-App-Attest-Challenge": challenge,
        "X-App-Attest-Assertion": base64.b64encode(assertion).decode(),
    }


# -- an independent reader ------------------------------------------------------------------------------------

def _cbor_one(data: bytes) -> tuple[object, int]:
    """The first CBOR item of `data` (definite lengths, no duplicate keys) and the bytes it took."""
    stream = io.BytesIO(data)
    item = cbor2.CBORDecoder(stream, read_size=1, allow_indefinite=False, allow_duplicate_keys=False).decode()
    return item, stream.tell()


@dataclass
class ParsedAttestation:
    """An attestation object taken apart; `nonce` is read from the leaf's 1.2.840.113635.100.8.2 extension."""

    fmt: object
    keys: list
    att_stmt_keys: list
    x5c: list[bytes]
    receipt: bytes | None
    auth_data: bytes
    rp_id_hash: bytes
    flags: int
    counter: int
    aaguid: bytes
    credential_id: bytes
    cose_key: dict
    cose_key_offset: int
    extensions: bytes
    nonce: bytes | None
    leaf: x509.Certificate = field(repr=False)


def parse_attestation(obj: bytes) -> ParsedAttestation:
    """Takes an attestation object apart by the WebAuthn authenticator-data offsets. Raises ValueError."""
    top, used = _cbor_one(obj)
    if used != len(obj):
        raise ValueError("bytes after the attestation object")
    if not isinstance(top, dict) or not {"fmt", "attStmt", "authData"} <= top.keys():
        raise ValueError("not a map with fmt, attStmt and authData")
    statement, auth = top["attStmt"], top["authData"]
    if not isinstance(statement, dict) or not isinstance(auth, bytes):
        raise ValueError("attStmt must be a map and authData a byte string")
    x5c = statement.get("x5c")
    if not isinstance(x5c, list) or not x5c or not all(isinstance(c, bytes) for c in x5c):
        raise ValueError("x5c must be a non-empty array of byte strings")
    if len(auth) < 55:
        raise ValueError("authData shorter than its attested fixed part")
    length = int.from_bytes(auth[53:55], "big")
    key_offset = 55 + length
    if key_offset >= len(auth):
        raise ValueError("authData ends before the credential public key")
    key, key_length = _cbor_one(auth[key_offset:])
    if not isinstance(key, dict):
        raise ValueError("credential public key is not a map")
    leaf = x509.load_der_x509_certificate(x5c[0])
    try:
        nonce = read_nonce_extension(leaf.extensions.get_extension_for_oid(NONCE_OID).value.value)
    except x509.ExtensionNotFound:
        nonce = None
    return ParsedAttestation(
        fmt=top["fmt"], keys=list(top), att_stmt_keys=list(statement), x5c=x5c, receipt=statement.get("receipt"),
        auth_data=auth, rp_id_hash=auth[0:32], flags=auth[32], counter=int.from_bytes(auth[33:37], "big"),
        aaguid=auth[37:53], credential_id=auth[55:key_offset], cose_key=key, cose_key_offset=key_offset,
        extensions=auth[key_offset + key_length:], nonce=nonce, leaf=leaf)


@dataclass
class ParsedAssertion:
    """An assertion object taken apart."""

    keys: list
    signature: bytes
    authenticator_data: bytes
    rp_id_hash: bytes
    flags: int
    counter: int
    extensions: bytes


def parse_assertion(obj: bytes) -> ParsedAssertion:
    """Takes an assertion object apart. Raises ValueError."""
    top, used = _cbor_one(obj)
    if used != len(obj) or not isinstance(top, dict):
        raise ValueError("not exactly one CBOR map")
    signature, data = top.get("signature"), top.get("authenticatorData")
    if not isinstance(signature, bytes) or not isinstance(data, bytes) or len(data) < 37:
        raise ValueError("signature and authenticatorData (37 bytes or more) must be byte strings")
    return ParsedAssertion(keys=list(top), signature=signature, authenticator_data=data, rp_id_hash=data[0:32],
                           flags=data[32], counter=int.from_bytes(data[33:37], "big"), extensions=data[37:])
