"""The installer lists, in the chart's values (`credentials.serviceAccounts`), the ServiceAccounts a mirror
member's or DNS zone's `credential.serviceAccount` may name; the chart hands the list to the operator as
`FEDERATOR_ALLOWED_CREDENTIAL_SERVICE_ACCOUNTS`, and the operator's credential scope built from that
variable is the one that refuses (validation/credential_scope.py). Entries are `name` or
`namespace/name`."""

from __future__ import annotations

from typing import Any

import pytest
from chart_support import CHART, RELEASE, Helm, Render, one

from federator.settings import OperatorSettings
from federator.validation.credential_scope import ACCOUNTS_VARIABLE, CredentialScope


def installed_scope(render: Render, values: dict[str, Any] | None = None) -> CredentialScope:
    """The scope the operator builds from the environment the chart gives its container."""
    [container] = one(render(values), "Deployment")["spec"]["template"]["spec"]["containers"]
    environ = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    return CredentialScope.from_settings(OperatorSettings.from_env(environ))


def test_by_default_any_account_of_the_resources_namespace_may_be_named(render: Render) -> None:
    scope = installed_scope(render)
    assert scope.service_accounts == ("*",)
    assert scope.account_refusal("team-a", "payments-deployer") is None


def test_the_installers_list_reaches_the_operator_and_decides(render: Render) -> None:
    values = {"credentials": {"serviceAccounts": ["*/federator-arm", "team-a/dns-*"]}}
    scope = installed_scope(render, values)
    assert scope.account_refusal("team-b", "federator-arm") is None
    assert scope.account_refusal("team-a", "dns-writer") is None
    refusal = scope.account_refusal("team-b", "dns-writer")
    assert refusal is not None
    assert f"{ACCOUNTS_VARIABLE} (*/federator-arm, team-a/dns-*), not team-b/dns-writer" in refusal


@pytest.mark.parametrize(
    "entry",
    ["federator-arm,payments-deployer", "team a/federator-arm", "team-a/arm/extra", "", "team-a/"],
)
def test_an_entry_the_list_cannot_carry_is_refused_by_the_schema(
    chart_helm: Helm, values_file: Any, entry: str
) -> None:
    path = str(values_file({"credentials": {"serviceAccounts": [entry]}}))
    template = chart_helm("template", RELEASE, str(CHART), "--values", path, check=False)
    assert template.returncode != 0, f"{entry!r}: helm template accepted it"
    assert "values don't meet the specifications of the schema" in template.stderr, template.stderr
