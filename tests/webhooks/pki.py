"""A throw-away certificate authority and a server certificate, made at test time.

The receiver presents the leaf; deliveries trust the CA only through ``REFCORE_WEBHOOK_CA_BUNDLE``
(the default trust store knows nothing of it), which is exactly the path a self-hosted operator
with a private CA takes.
"""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime, timedelta
from pathlib import Path

from attrs import frozen
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: Names the leaf certificate is valid for. ``receiver.test`` never resolves in DNS (RFC 2606),
#: so a delivery to it can only succeed through an injected, pinned resolution.
LEAF_DNS_NAMES = ("localhost", "receiver.test")
LEAF_IPS = ("127.0.0.1",)


@frozen
class Pki:
    ca_path: Path
    cert_path: Path
    key_path: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_pki(directory: Path) -> Pki:
    now = datetime.now(UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("refcore test CA"))
        .issuer_name(_name("refcore test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in LEAF_DNS_NAMES]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in LEAF_IPS]
    leaf_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("localhost"))
        .issuer_name(ca_cert.subject)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pki = Pki(
        ca_path=directory / "ca.pem",
        cert_path=directory / "leaf.pem",
        key_path=directory / "leaf.key",
    )
    pki.ca_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    pki.cert_path.write_bytes(leaf_cert.public_bytes(serialization.Encoding.PEM))
    pki.key_path.write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return pki
