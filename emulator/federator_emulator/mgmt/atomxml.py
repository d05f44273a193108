"""ATOM XML of ``ServiceBusAdministrationClient``: descriptions in, entries and feeds out.

Rendering is plain text with fixed prefixes (the SDK parses by namespace URI, not prefix);
parsing reads elements by local name, so the order the SDK writes them in does not matter.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from federator_contract.emulatorconfig import CorrelationFilterConfig, RuleConfig, RuleValue
from federator_emulator.mgmt import rulevalues
from federator_emulator.mgmt.mapping import (
    CORRELATION_FIELDS,
    FALSE_SQL,
    PROPERTIES,
    TRUE_SQL,
    required_sql,
)

ATOM = "http://www.w3.org/2005/Atom"
SB = "http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
XSD = "http://www.w3.org/2001/XMLSchema"
_DECLARATION = '<?xml version="1.0" encoding="utf-8"?>'


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _upper_first(name: str) -> str:
    return name[0].upper() + name[1:]


def _xsi_type(element: ET.Element) -> str:
    return element.get(f"{{{XSI}}}type", "").rsplit(":", 1)[-1]


def parse_description(body: bytes) -> tuple[str, ET.Element]:
    """The description element inside an ATOM entry, with its kind (``QueueDescription``…)."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        raise ValueError(f"the request body is not XML: {exc}") from None
    content = root.find(f"{{{ATOM}}}content")
    description = next(iter(content), None) if content is not None else None
    if description is None:
        raise ValueError("the ATOM entry has no content description")
    return _local(description.tag), description


def description_properties(description: ET.Element) -> dict[str, str]:
    """Child elements by camelCase name (``LockDuration`` -> ``lockDuration``), as text."""
    wanted = {_upper_first(prop) for prop, _, _ in PROPERTIES}
    return {
        _local(child.tag)[0].lower() + _local(child.tag)[1:]: (child.text or "")
        for child in description
        if _local(child.tag) in wanted
    }


def _key_values(element: ET.Element, container: str) -> dict[str, RuleValue]:
    """The typed ``KeyValueOfstringanyType`` items under ``container`` (Parameters, Properties)."""
    out: dict[str, RuleValue] = {}
    for item in element.iterfind(f"{{{SB}}}{container}/*"):
        key = item.findtext(f"{{{SB}}}Key") or ""
        value = item.find(f"{{{SB}}}Value")
        if value is None or value.get(f"{{{XSI}}}nil") == "true":
            raise ValueError(f"{container} {key!r}: a value is required")
        try:
            out[key] = rulevalues.from_text(_xsi_type(value) or "string", value.text or "")
        except ValueError as exc:
            raise ValueError(f"{container} {key!r}: {exc}") from None
    return out


def parse_rule(name: str, description: ET.Element) -> RuleConfig:
    """A ``RuleDescription`` to a rule config (True/False/Sql/Correlation filter, Sql action, both
    with their parameters). A SQL filter or action without an expression is refused, as on Azure."""
    fields: dict[str, Any] = {"name": name}
    rule_filter = description.find(f"{{{SB}}}Filter")
    if rule_filter is not None:
        kind = _xsi_type(rule_filter)
        if kind == "SqlFilter":
            fields["sql_filter"] = required_sql(rule_filter.findtext(f"{{{SB}}}SqlExpression"))
            fields["sql_filter_parameters"] = _key_values(rule_filter, "Parameters")
        elif kind == "FalseFilter":
            fields["sql_filter"] = FALSE_SQL
        elif kind == "CorrelationFilter":
            by_tag = {_upper_first(prop): field for prop, field in CORRELATION_FIELDS.items()}
            correlation: dict[str, Any] = {
                by_tag[_local(c.tag)]: c.text for c in rule_filter if _local(c.tag) in by_tag and c.text
            }
            correlation["properties"] = _key_values(rule_filter, "Properties")
            fields["correlation_filter"] = CorrelationFilterConfig.model_validate(correlation)
        elif kind != "TrueFilter":
            raise ValueError(f"unsupported filter type {kind!r}")
    rule_action = description.find(f"{{{SB}}}Action")
    if rule_action is not None and _xsi_type(rule_action) == "SqlRuleAction":
        fields["sql_action"] = required_sql(rule_action.findtext(f"{{{SB}}}SqlExpression"))
        fields["sql_action_parameters"] = _key_values(rule_action, "Parameters")
    return RuleConfig.model_validate(fields)


def default_rule(description: ET.Element) -> RuleConfig | None:
    """A subscription's ``DefaultRuleDescription``: the rule it is created with instead of ``$Default``
    (the JS SDK's ``defaultRuleOptions``); unnamed, it is called ``$Default`` as on Azure."""
    rule = description.find(f"{{{SB}}}DefaultRuleDescription")
    if rule is None:
        return None
    return parse_rule((rule.findtext(f"{{{SB}}}Name") or "").strip() or "$Default", rule)


# -- rendering -----------------------------------------------------------------------------------
def now_text() -> str:
    return timestamp_text(datetime.now(UTC).timestamp())


def timestamp_text(epoch_seconds: float) -> str:
    return datetime.fromtimestamp(epoch_seconds, UTC).isoformat().replace("+00:00", "Z")


def namespace_info(name: str, created: str) -> str:
    """The ``NamespaceInfo`` of ``$namespaceinfo``: what a Standard namespace reports."""
    fields = {"CreatedTime": created, "MessagingSKU": "Standard", "ModifiedTime": created, "Name": name}
    fields["NamespaceType"] = "Messaging"
    return f'<NamespaceInfo xmlns="{SB}" xmlns:i="{XSI}">{_elements(fields)}</NamespaceInfo>'


def xml_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else escape(str(value))


def _elements(values: dict[str, Any]) -> str:
    return "".join(
        f"<{_upper_first(k)}>{xml_text(v)}</{_upper_first(k)}>" for k, v in values.items() if v is not None
    )


def _key_values_xml(container: str, items: dict[str, RuleValue]) -> str:
    body = ""
    for key, value in items.items():
        kind, text = rulevalues.to_text(value)
        # .NET names guid in its serialization namespace; the others are XML Schema types.
        namespace = "http://schemas.microsoft.com/2003/10/Serialization/" if kind == "guid" else XSD
        body += (
            f"<KeyValueOfstringanyType><Key>{escape(key)}</Key>"
            f'<Value i:type="d6p1:{kind}" xmlns:d6p1="{namespace}">{escape(text)}</Value>'
            "</KeyValueOfstringanyType>"
        )
    return f"<{container}>{body}</{container}>"


def _correlation_xml(c: CorrelationFilterConfig) -> str:
    fields = {prop: getattr(c, field) for prop, field in CORRELATION_FIELDS.items()}
    properties = _key_values_xml("Properties", dict(c.properties))
    return f'<Filter i:type="CorrelationFilter">{_elements(fields)}{properties}</Filter>'


def rule_description(config: RuleConfig) -> str:
    if config.correlation_filter is not None:
        rule_filter = _correlation_xml(config.correlation_filter)
    else:
        sql = config.sql_filter or TRUE_SQL
        kind = {TRUE_SQL: "TrueFilter", FALSE_SQL: "FalseFilter"}.get(sql.replace(" ", ""), "SqlFilter")
        rule_filter = (
            f'<Filter i:type="{kind}"><SqlExpression>{escape(sql)}</SqlExpression>'
            f"{_key_values_xml('Parameters', config.sql_filter_parameters)}"
            "<CompatibilityLevel>20</CompatibilityLevel></Filter>"
        )
    if config.sql_action:
        action = (
            f'<Action i:type="SqlRuleAction"><SqlExpression>{escape(config.sql_action)}</SqlExpression>'
            f"{_key_values_xml('Parameters', config.sql_action_parameters)}"
            "<CompatibilityLevel>20</CompatibilityLevel></Action>"
        )
    else:
        action = '<Action i:type="EmptyRuleAction"/>'
    return (
        f'<RuleDescription xmlns="{SB}" xmlns:i="{XSI}">{rule_filter}{action}'
        f"<CreatedAt>{now_text()}</CreatedAt><Name>{escape(config.name)}</Name></RuleDescription>"
    )


def _entry_body(url: str, title: str, description: str) -> str:
    now = now_text()
    return (
        f'<id>{escape(url)}</id><title type="text">{escape(title)}</title>'
        f"<published>{now}</published><updated>{now}</updated>"
        f'<link rel="self" href={quoteattr(url)}/>'
        f'<content type="application/xml">{description}</content>'
    )


def entry(url: str, title: str, description: str) -> str:
    return f'{_DECLARATION}<entry xmlns="{ATOM}">{_entry_body(url, title, description)}</entry>'


def feed(url: str, title: str, entries: list[tuple[str, str, str]], next_url: str | None) -> str:
    """A feed of (url, title, description); a second ``link`` (next page) makes the SDK page on."""
    links = f'<link rel="self" href={quoteattr(url)}/>'
    if next_url is not None:
        links += f'<link rel="next" href={quoteattr(next_url)}/>'
    body = "".join(f"<entry>{_entry_body(*e)}</entry>" for e in entries)
    return (
        f'{_DECLARATION}<feed xmlns="{ATOM}"><title type="text">{escape(title)}</title>'
        f"<id>{escape(url)}</id><updated>{now_text()}</updated>{links}{body}</feed>"
    )


def error(status: int, detail: str) -> str:
    return f"<Error><Code>{status}</Code><Detail>{escape(detail)}</Detail></Error>"
