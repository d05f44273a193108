"""The management plane's certificate: a ``trustme`` CA created at every start.

Clients trust the emulator by passing the CA file (``caCertificatePath`` in the ready file)
as ``connection_verify``; a client without it fails certificate verification, as it would
against an impostor.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

import trustme

CA_FILE_NAME = "mgmt-ca.pem"


@dataclass(frozen=True)
class ServerTls:
    ca_path: Path
    context: ssl.SSLContext


def issue(directory: Path, hosts: list[str]) -> ServerTls:
    """Create a CA, write its certificate to ``directory``, and a server context for ``hosts``."""
    ca = trustme.CA()
    # Every name a client may use: the SDKs check the host they connect to.
    certificate = ca.issue_cert(*dict.fromkeys(hosts))
    directory.mkdir(parents=True, exist_ok=True)
    ca_path = directory / CA_FILE_NAME
    ca.cert_pem.write_to_path(str(ca_path))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    certificate.configure_cert(context)
    return ServerTls(ca_path=ca_path, context=context)
