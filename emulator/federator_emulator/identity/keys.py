"""The key that signs the emulator's tokens: RSA 2048, made at the first start and kept in the data
dir, so tokens issued before a restart stay valid after it (as a tenant's keys outlive a restart)."""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

KEY_FILE_NAME = "entra-signing-key.pem"


def _b64url_uint(value: int) -> str:
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@dataclass(frozen=True)
class SigningKey:
    private: rsa.RSAPrivateKey
    kid: str  # the key id tokens name in their header (a thumbprint of the public key)

    @classmethod
    def load_or_create(cls, directory: Path) -> SigningKey:
        path = directory / KEY_FILE_NAME
        if path.exists():
            loaded = serialization.load_pem_private_key(path.read_bytes(), password=None)
            if not isinstance(loaded, rsa.RSAPrivateKey):
                raise ValueError(f"{path} does not hold an RSA private key")
            private = loaded
        else:
            private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            pem = private.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
            directory.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(pem)
            os.chmod(tmp, 0o600)
            tmp.replace(path)
        public = private.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        kid = base64.urlsafe_b64encode(hashlib.sha256(public).digest()[:20]).rstrip(b"=").decode()
        return cls(private, kid)

    @property
    def public(self) -> rsa.RSAPublicKey:
        return self.private.public_key()

    def jwk(self) -> dict[str, Any]:
        numbers = self.public.public_numbers()
        return {
            "kty": "RSA",
            "use": "sig",
            "alg": "RS256",
            "kid": self.kid,
            "n": _b64url_uint(numbers.n),
            "e": _b64url_uint(numbers.e),
        }
