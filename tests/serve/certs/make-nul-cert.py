#!/usr/bin/env python3
"""Makes nulcn.pem/nulcn.key (run by make-certs.sh): a client certificate from the test CA whose
common name is "node1.example.com" followed by a NUL and more ("node1.example.com\\0.evil..."): a
server that compares only up to the NUL would take it for node1's. Needs python3-cryptography."""
import datetime, os
from cryptography import x509
from cryptography.x509.oid import NameOID, ExtendedKeyUsageOID
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa

os.chdir(os.path.dirname(os.path.abspath(__file__)))
ca_key = serialization.load_pem_private_key(open("ca.key", "rb").read(), None)
ca = x509.load_pem_x509_certificate(open("ca.pem", "rb").read())
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "node1.example.com\x00.evil.example.com")])
start = datetime.datetime(2024, 1, 1)
cert = (x509.CertificateBuilder().subject_name(name).issuer_name(ca.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=36500))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH, ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256()))
open("nulcn.pem", "wb").write(cert.public_bytes(serialization.Encoding.PEM))
open("nulcn.key", "wb").write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                                serialization.NoEncryption()))
