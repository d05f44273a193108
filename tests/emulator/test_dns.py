"""Azure DNS record sets with the real ``azure-mgmt-dns`` clients (sync and async)."""

from __future__ import annotations

from typing import Any

import pytest
from azure.core.exceptions import ResourceNotFoundError
from azure.mgmt.dns import DnsManagementClient
from azure.mgmt.dns.aio import DnsManagementClient as AsyncDnsManagementClient
from azure.mgmt.dns.models import CnameRecord, RecordSet, SrvRecord

from federator_emulator.testing import AsyncEmulatorCredential, EmulatorCredential

RG, ZONE = "emulator", "federator.test"


def _dns(emu: Any) -> DnsManagementClient:
    ns = emu.namespace()
    return DnsManagementClient(
        EmulatorCredential(emu),
        ns.arm.subscription_id,
        base_url=emu.arm_endpoint,
        connection_verify=str(emu.ca_path),
    )


def test_cname_and_srv_round_trip(mgmt_emulator: Any) -> None:
    with _dns(mgmt_emulator) as dns:
        cname = dns.record_sets.create_or_update(
            RG,
            ZONE,
            "orders",
            "CNAME",
            RecordSet(ttl=60, cname_record=CnameRecord(cname="ns1.servicebus.example")),
        )
        assert cname.fqdn == "orders.federator.test."
        srv = RecordSet(
            ttl=30,
            srv_records=[
                SrvRecord(priority=0, weight=10, port=5671, target="ns1.servicebus.example"),
                SrvRecord(priority=0, weight=10, port=443, target="ns1.servicebus.example"),
            ],
        )
        dns.record_sets.create_or_update(RG, ZONE, "_amqp._tcp.orders", "SRV", srv)
        got = dns.record_sets.get(RG, ZONE, "_amqp._tcp.orders", "SRV")
        assert [r.port for r in got.srv_records or []] == [5671, 443]
        assert dns.record_sets.get(RG, ZONE, "orders", "CNAME").cname_record.cname == "ns1.servicebus.example"
        assert [r.name for r in dns.record_sets.list_by_type(RG, ZONE, "SRV")] == ["_amqp._tcp.orders"]
        dns.record_sets.delete(RG, ZONE, "orders", "CNAME")
        with pytest.raises(ResourceNotFoundError):
            dns.record_sets.get(RG, ZONE, "orders", "CNAME")


def test_undeclared_zone_is_not_found(mgmt_emulator: Any) -> None:
    record = RecordSet(ttl=60, cname_record=CnameRecord(cname="x.example"))
    with _dns(mgmt_emulator) as dns, pytest.raises(ResourceNotFoundError):
        dns.record_sets.create_or_update(RG, "other.test", "orders", "CNAME", record)


@pytest.mark.asyncio
async def test_async_client_updates_a_cname(mgmt_emulator: Any) -> None:
    ns = mgmt_emulator.namespace()
    async with AsyncDnsManagementClient(
        AsyncEmulatorCredential(mgmt_emulator),
        ns.arm.subscription_id,
        base_url=mgmt_emulator.arm_endpoint,
        connection_verify=str(mgmt_emulator.ca_path),
    ) as dns:
        for target in ("primary.example", "secondary.example"):
            await dns.record_sets.create_or_update(
                RG, ZONE, "failover", "CNAME", RecordSet(ttl=5, cname_record=CnameRecord(cname=target))
            )
        got = await dns.record_sets.get(RG, ZONE, "failover", "CNAME")
        assert got.cname_record is not None and got.cname_record.cname == "secondary.example"
