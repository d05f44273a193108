"""Writing a group's DNS record sets to Azure DNS (`azure-mgmt-dns`, async). Upserts are idempotent; what
was written is remembered so an unchanged group costs no ARM request, except a re-write every drift
interval that puts back records changed by hand."""

from __future__ import annotations

import time
from collections.abc import Sequence

from azure.core.credentials_async import AsyncTokenCredential
from azure.core.exceptions import ResourceNotFoundError
from azure.mgmt.dns.aio import DnsManagementClient
from azure.mgmt.dns.models import CnameRecord, SrvRecord
from azure.mgmt.dns.models import RecordSet as AzureRecordSet

from federator.failover.publishing import RecordSet
from federator.provision.environment import ManagementEnvironment
from federator.provision.errors import classify
from federator.provision.login import arm_login
from federator.provision.secrets import SecretSource
from federator.provision.transport import CountingTransport
from federator_contract.api.failovergroup import DnsZone

DNS_CREDENTIAL_FIELD = "spec.publishing.dns.zone.credential"


class DnsPublisher:
    """One per operator."""

    def __init__(self, env: ManagementEnvironment) -> None:
        self._env = env
        # (namespace, group) → (zone, record sets, when written)
        self._written: dict[tuple[str, str], tuple[DnsZone, tuple[RecordSet, ...], float]] = {}

    async def publish(
        self, kube: SecretSource, namespace: str, group: str, zone: DnsZone, records: Sequence[RecordSet]
    ) -> bool:
        """Writes the record sets unless they were written unchanged within the drift interval; True when
        it wrote. Raises ManagementError (auth, missing zone: permanent; outages: retryable)."""
        key, wanted = (namespace, group), tuple(records)
        previous = self._written.get(key)
        fresh = previous is not None and time.monotonic() - previous[2] < self._env.drift_interval_seconds
        if previous is not None and fresh and previous[:2] == (zone, wanted):
            return False
        self._written.pop(key, None)
        credential, client = await self._client(kube, namespace, zone)
        async with credential, client:
            for record in wanted:
                try:
                    await client.record_sets.create_or_update(
                        zone.resource_group, zone.zone_name, record.name, record.type, _azure(record)
                    )
                except Exception as err:
                    raise classify(
                        err, f"writing DNS {record.type} record {record.name} in zone {zone.zone_name}"
                    ) from None
        self._written[key] = (zone, wanted, time.monotonic())
        return True

    async def remove(
        self, kube: SecretSource, namespace: str, group: str, zone: DnsZone, records: Sequence[RecordSet]
    ) -> None:
        """Deletes the group's record sets (those already gone are fine)."""
        self._written.pop((namespace, group), None)
        credential, client = await self._client(kube, namespace, zone)
        async with credential, client:
            for record in records:
                try:
                    await client.record_sets.delete(
                        zone.resource_group, zone.zone_name, record.name, record.type
                    )
                except ResourceNotFoundError:
                    continue
                except Exception as err:
                    raise classify(err, f"deleting DNS {record.type} record {record.name}") from None

    async def _client(
        self, kube: SecretSource, namespace: str, zone: DnsZone
    ) -> tuple[AsyncTokenCredential, DnsManagementClient]:
        credential = await arm_login(
            kube, namespace, zone.credential, zone.subscription_id, self._env, DNS_CREDENTIAL_FIELD
        )
        return credential, DnsManagementClient(
            credential,
            zone.subscription_id,
            base_url=self._env.arm_endpoint,
            credential_scopes=[self._env.arm_scope],
            connection_verify=self._env.connection_verify,
            retry_total=self._env.retry_total,
            # Azure DNS is an ARM API: its requests count against the same per-subscription quota.
            transport=CountingTransport("arm", connection_verify=self._env.connection_verify),
        )


def _azure(record: RecordSet) -> AzureRecordSet:
    if record.type == "CNAME":
        return AzureRecordSet(ttl=record.ttl, cname_record=CnameRecord(cname=record.cname))
    return AzureRecordSet(
        ttl=record.ttl,
        srv_records=[SrvRecord(priority=p, weight=w, port=port, target=t) for p, w, port, t in record.srv],
    )
