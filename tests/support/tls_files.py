"""Certificates for tests of TLS configuration: a self-signed CA and a client certificate
and key (PEM), made once per directory by the `openssl` command line."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pems:
    """A CA certificate, and a client certificate with its key (PEM files)."""

    ca: Path
    cert: Path
    key: Path


def make(directory: Path, name: str = "client") -> Pems:
    """A self-signed CA and a self-signed client certificate and key in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = directory / "ca.crt", directory / "ca.key"
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    for crt, k, cn in ((ca, ca_key, "test-ca"), (cert, key, name)):
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-nodes", "-days", "2", "-subj", f"/CN={cn}", "-keyout", str(k), "-out", str(crt)],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
    return Pems(ca, cert, key)
