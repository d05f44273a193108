"""The environment variable of a Secret key (`federator_contract.taskconfig.secret_env_var`): readable,
a shell's variable name, and never the same for two (Secret, key) pairs."""

from __future__ import annotations

import itertools
import re

import pytest

from federator.planning.secrets import SecretBinding
from federator_contract.taskconfig import secret_env_var

SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@pytest.mark.parametrize(
    ("secret", "key", "variable"),
    [
        ("src", "connectionString", "FEDERATOR_SECRET_src__connectionString"),
        ("orders-weu", "connectionString", "FEDERATOR_SECRET_orders_weu__connectionString"),
        ("payments-signing-key", "hmacKey", "FEDERATOR_SECRET_payments_signing_key__hmacKey"),
        ("tls.certs", "tls.crt", "FEDERATOR_SECRET_tls_D_certs__tls_D_crt"),
        ("a--b", "my-key_2", "FEDERATOR_SECRET_a_H__b__my_H_key_U_2"),
    ],
)
def test_the_variable_spells_the_secret_and_the_key(secret: str, key: str, variable: str) -> None:
    assert secret_env_var(secret, key) == variable
    assert SecretBinding(secret, key).env_var == variable  # what planning and local mode use


def _words(alphabet: str, longest: int) -> list[str]:
    return ["".join(w) for n in range(1, longest + 1) for w in itertools.product(alphabet, repeat=n)]


def test_no_two_secret_keys_share_a_variable() -> None:
    """Every pair over alphabets that hold each escape's pieces: the escape letters in both cases,
    digits, and the characters that are escaped."""
    names = _words("hd0-.", 3) + _words("a-.", 4)
    keys = _words("HDUh0-._", 3)
    seen: dict[str, tuple[str, str]] = {}
    for secret, key in itertools.product(names, keys):
        variable = secret_env_var(secret, key)
        assert SHELL_NAME.fullmatch(variable), variable
        assert seen.setdefault(variable, (secret, key)) == (secret, key), variable


@pytest.mark.parametrize(
    ("secret", "key", "message"),
    [
        ("Orders", "k", "'Orders' is not a Secret name"),
        ("", "k", "'' is not a Secret name"),
        ("orders", "a/b", "'a/b' is not a Secret key"),
        ("orders", "ключ", "'ключ' is not a Secret key"),
    ],
)
def test_names_and_keys_kubernetes_refuses_have_no_variable(secret: str, key: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        secret_env_var(secret, key)
