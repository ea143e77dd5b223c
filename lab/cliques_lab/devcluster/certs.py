"""A private CA and a serving certificate for an add-on's webhook server on 127.0.0.1.

The `cryptography` package is not among cliques' dependencies, so the certificates are made
with the `openssl` command (OpenSSL 1.1.1 or newer): an EC P-256 CA, and a serving
certificate it signs for the loopback names (`SERVING_NAMES`: IP 127.0.0.1, IP ::1,
DNS localhost) with the serverAuth usage. The files are those controller-runtime's
webhook server reads from its cert dir (`tls.crt`, `tls.key`), plus `ca.crt`/`ca.key`;
the API server trusts the CA through the webhooks' `caBundle`. The command lines and the
extension file are pure (`ca_command`, `serving_extensions`, ...); `ensure()` runs them,
and keeps a set that is still valid for a day.
"""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cliques_lab.devcluster.errors import DevClusterError

SERVING_NAMES: Final = ("IP:127.0.0.1", "IP:::1", "DNS:localhost")
CA_DAYS: Final = 3650
SERVING_DAYS: Final = 365
_KEY_ARGS: Final = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
_MIN_VALID_SECONDS: Final = 86400


@dataclass(frozen=True)
class CertFiles:
    """The files of one certificate set, all in `directory`."""

    directory: Path

    @property
    def ca_crt(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def tls_crt(self) -> Path:
        return self.directory / "tls.crt"

    @property
    def tls_key(self) -> Path:
        return self.directory / "tls.key"

    @property
    def csr(self) -> Path:
        return self.directory / "tls.csr"

    @property
    def extensions(self) -> Path:
        return self.directory / "tls.ext"


def ca_command(files: CertFiles, common_name: str, days: int = CA_DAYS) -> list[str]:
    """A self-signed CA certificate that may sign certificates and nothing else."""
    return [
        "openssl",
        "req",
        "-x509",
        *_KEY_ARGS,
        "-keyout",
        str(files.ca_key),
        "-out",
        str(files.ca_crt),
        "-days",
        str(days),
        "-subj",
        f"/CN={common_name}",
        "-addext",
        "basicConstraints=critical,CA:TRUE,pathlen:0",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]


def request_command(files: CertFiles) -> list[str]:
    """The serving key and its signing request."""
    return [
        "openssl",
        "req",
        "-new",
        *_KEY_ARGS,
        "-keyout",
        str(files.tls_key),
        "-out",
        str(files.csr),
        "-subj",
        "/CN=127.0.0.1",
    ]


def serving_extensions(names: Sequence[str] = SERVING_NAMES) -> str:
    """The extension file of the serving certificate: its subject alternative names (the
    only names TLS clients check) and a server-only usage."""
    return (
        f"subjectAltName={','.join(names)}\n"
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=serverAuth\n"
    )


def sign_command(files: CertFiles, days: int = SERVING_DAYS) -> list[str]:
    return [
        "openssl",
        "x509",
        "-req",
        "-in",
        str(files.csr),
        "-CA",
        str(files.ca_crt),
        "-CAkey",
        str(files.ca_key),
        "-set_serial",
        "0x" + secrets.token_hex(16),
        "-days",
        str(days),
        "-extfile",
        str(files.extensions),
        "-out",
        str(files.tls_crt),
    ]


def ensure(directory: Path, common_name: str) -> CertFiles:
    """The certificate set in `directory`, made anew unless the one there is valid for at
    least a day more; DevClusterError (with openssl's words) if openssl fails."""
    files = CertFiles(directory)
    if _still_valid(files):
        return files
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    files.extensions.write_text(serving_extensions(), encoding="utf-8")
    for argv in (ca_command(files, common_name), request_command(files), sign_command(files)):
        _openssl(argv)
    files.csr.unlink(missing_ok=True)
    for key in (files.ca_key, files.tls_key):
        key.chmod(0o600)
    return files


def _still_valid(files: CertFiles) -> bool:
    paths = (files.ca_crt, files.ca_key, files.tls_crt, files.tls_key)
    if not all(p.is_file() for p in paths):
        return False
    checks = [
        ["openssl", "x509", "-noout", "-checkend", str(_MIN_VALID_SECONDS), "-in", str(crt)]
        for crt in (files.ca_crt, files.tls_crt)
    ]
    checks.append(
        ["openssl", "verify", "-CAfile", str(files.ca_crt), str(files.tls_crt)],
    )
    return all(_openssl(argv, check=False) for argv in checks)


def _openssl(argv: list[str], *, check: bool = True) -> bool:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except FileNotFoundError:
        raise DevClusterError(
            "openssl is not on PATH: the dev cluster's add-ons need it to make their webhook "
            "certificates (install it with your package manager, e.g. `apt install openssl`)"
        ) from None
    except subprocess.TimeoutExpired:
        done = subprocess.CompletedProcess(argv, 124, "", "timed out")
    if check and done.returncode != 0:
        raise DevClusterError(f"`{' '.join(argv[:2])}` failed:\n{done.stderr.strip()}")
    return done.returncode == 0


def subject_alt_names(certificate: Path) -> list[str]:
    """The subject alternative names of a PEM certificate, as openssl prints them
    (`IP Address:127.0.0.1`, `DNS:localhost`)."""
    done = subprocess.run(
        ["openssl", "x509", "-noout", "-ext", "subjectAltName", "-in", str(certificate)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = [line.strip() for line in done.stdout.splitlines()[1:] if line.strip()]
    return [name.strip() for line in lines for name in line.split(",")]
