"""``python -m autograder dask-certs DIR``: the course's own certificate authority for a grading cluster.

Writes, in DIR (mode 0700; every file 0600):

- ``ca.pem``, ``ca-key.pem``: a CA of the course's own (EC P-256, self-signed), used for nothing else;
- ``scheduler.pem``/``-key.pem``, ``worker.pem``/``-key.pem``, ``client.pem``/``-key.pem``: one
  certificate per party of a Dask cluster (engine.py), signed by that CA, good as server and client.

Dask's TLS is mutual (each side checks the other's certificate against the CA, not a host name), so
a certificate of this CA is the power to run code as root on the workers: hand the worker's and the
client's only to the workers and the grading Job, never to a student's server, and keep
``ca-key.pem`` off the cluster (it only signs). Made with the ``openssl`` command line, which every
Debian and container image has, so the course pins no Python package for it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from pathlib import Path

PARTIES = ("scheduler", "worker", "client")
DAYS = 825
SUBJECT = "/O=Attention, Step by Step/CN=grading {}"
EXTENSIONS = """basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth, clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = DNS:{party}, DNS:localhost, IP:127.0.0.1
"""
NEW_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]


def _openssl(*arguments: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *arguments], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {arguments[0]} failed: {done.stderr.strip()[-1000:]}")


def make(folder: Path, days: int = DAYS) -> list[Path]:
    """Make the CA and the three parties' certificates in ``folder``; the files written. Refuses a folder
    that holds a CA already (a new CA would lock out every party holding the old one's certificates)."""
    if shutil.which("openssl") is None:
        raise RuntimeError("the openssl command is needed (apt-get install openssl)")
    folder = Path(folder)
    if (folder / "ca.pem").exists():
        raise RuntimeError(f"{folder} holds a CA already (ca.pem): remove the folder to make a new one")
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    previous = os.umask(0o077)
    try:
        _openssl("req", "-x509", "-new", *NEW_KEY, "-keyout", "ca-key.pem", "-out", "ca.pem", "-days", str(days),
                 "-subj", SUBJECT.format("CA"), "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=folder)  # fmt: skip
        for party in PARTIES:
            (folder / f"{party}.ext").write_text(EXTENSIONS.format(party=party))
            _openssl("req", "-new", *NEW_KEY, "-keyout", f"{party}-key.pem", "-out", f"{party}.csr",
                     "-subj", SUBJECT.format(party), cwd=folder)  # fmt: skip
            _openssl("x509", "-req", "-in", f"{party}.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem",
                     "-set_serial", f"0x{secrets.token_hex(16)}", "-days", str(days), "-out", f"{party}.pem",
                     "-extfile", f"{party}.ext", cwd=folder)  # fmt: skip
            (folder / f"{party}.csr").unlink()
            (folder / f"{party}.ext").unlink()
    finally:
        os.umask(previous)
    written = sorted(folder.glob("*.pem"))
    for path in written:
        os.chmod(path, 0o600)
    return written
