"""The Azure DNS record-set subset ``azure-mgmt-dns`` uses (``record_sets`` on declared zones).

Zones come from the config's ``dnsZones``; a record set in an undeclared zone is refused with
404, as Azure does for a missing parent. Record sets live on the HTTP thread (they are no part
of the data plane); with a data dir they are journaled there (``dns.journal``), committed before
the answer, and replayed at start. CNAME and SRV records are checked; other types are stored as
sent.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from federator_contract.emulatorconfig import DnsZoneConfig
from federator_emulator.mgmt.arm import guarded, json_body
from federator_emulator.mgmt.common import MgmtError
from federator_emulator.state.journal import Journal, NullJournal, Record

ZONE_PATH = "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Network/dnsZones/{zone}"


RecordKey = tuple[str, str, str]  # (zone, TYPE, relative name), lower-cased except the type
RecordEntry = tuple[dict[str, Any], str]  # the record set's properties, its etag


@dataclass
class DnsStore:
    zones: list[DnsZoneConfig]
    journal: Journal = field(default_factory=NullJournal)
    record_sets: dict[RecordKey, RecordEntry] = field(default_factory=dict)

    def put(self, key: RecordKey, entry: RecordEntry) -> None:
        self.record_sets[key] = entry
        self.journal.write({"k": "dns", "put": list(key), "p": entry[0], "etag": entry[1]})
        self.journal.commit()

    def delete(self, key: RecordKey) -> bool:
        """Whether there was a record set to delete."""
        if self.record_sets.pop(key, None) is None:
            return False
        self.journal.write({"k": "dns", "delete": list(key)})
        self.journal.commit()
        return True

    def replay(self, records: Iterable[Record]) -> None:
        for meta, _ in records:
            if "put" in meta:
                zone, record_type, name = meta["put"]
                self.record_sets[(zone, record_type, name)] = (meta["p"], meta["etag"])
            else:
                zone, record_type, name = meta["delete"]
                self.record_sets.pop((zone, record_type, name), None)

    def zone(self, subscription_id: str, resource_group: str, name: str) -> DnsZoneConfig:
        for zone in self.zones:
            if (zone.subscription_id.lower(), zone.resource_group.lower(), zone.name.lower()) == (
                subscription_id.lower(),
                resource_group.lower(),
                name.lower(),
            ):
                return zone
        raise MgmtError(
            404, "ParentResourceNotFound", f"DNS zone {name!r} is not declared in the emulator config"
        )


def _check(record_type: str, properties: dict[str, Any]) -> None:
    if record_type == "CNAME":
        cname = properties.get("CNAMERecord") or {}
        if not isinstance(cname.get("cname"), str) or not cname["cname"]:
            raise MgmtError(400, "BadRequest", "a CNAME record set needs CNAMERecord.cname")
    if record_type == "SRV":
        records = properties.get("SRVRecords")
        if not isinstance(records, list) or not records:
            raise MgmtError(400, "BadRequest", "an SRV record set needs SRVRecords")
        for record in records:
            port = record.get("port")
            if not isinstance(port, int) or not 0 <= port <= 65535 or not record.get("target"):
                raise MgmtError(400, "BadRequest", f"invalid SRV record {record!r}: needs port and target")


class DnsApi:
    def __init__(self, store: DnsStore) -> None:
        self.store = store

    def routes(self) -> list[web.RouteDef]:
        item = ZONE_PATH + "/{type}/{name}"
        return [
            web.get(ZONE_PATH, guarded(self.get_zone)),
            web.get(ZONE_PATH + "/{type}", guarded(self.list_by_type)),
            web.get(item, guarded(self.get)),
            web.put(item, guarded(self.put)),
            web.delete(item, guarded(self.delete)),
        ]

    def _key(self, request: web.Request) -> tuple[DnsZoneConfig, RecordKey]:
        m = request.match_info
        zone = self.store.zone(m["sub"], m["rg"], m["zone"])
        return zone, (zone.name.lower(), m["type"].upper(), m["name"].lower())

    @staticmethod
    def _resource(path: str, zone: DnsZoneConfig, key: RecordKey, entry: RecordEntry) -> dict[str, Any]:
        properties, etag = entry
        name = key[2]
        fqdn = f"{zone.name}." if name == "@" else f"{name}.{zone.name}."
        return {
            "id": path,
            "name": name,
            "type": f"Microsoft.Network/dnszones/{key[1]}",
            "etag": etag,
            "properties": {**properties, "fqdn": fqdn, "provisioningState": "Succeeded"},
        }

    async def get_zone(self, request: web.Request) -> web.StreamResponse:
        m = request.match_info
        zone = self.store.zone(m["sub"], m["rg"], m["zone"])
        return web.json_response(
            {
                "id": request.path,
                "name": zone.name,
                "type": "Microsoft.Network/dnszones",
                "location": "global",
                "properties": {"zoneType": "Public", "nameServers": ["localhost."]},
            }
        )

    async def list_by_type(self, request: web.Request) -> web.StreamResponse:
        m = request.match_info
        zone = self.store.zone(m["sub"], m["rg"], m["zone"])
        record_type = m["type"].upper()
        value = [
            self._resource(f"{request.path}/{key[2]}", zone, key, entry)
            for key, entry in sorted(self.store.record_sets.items())
            if key[0] == zone.name.lower() and key[1] == record_type
        ]
        return web.json_response({"value": value})

    async def get(self, request: web.Request) -> web.StreamResponse:
        zone, key = self._key(request)
        entry = self.store.record_sets.get(key)
        if entry is None:
            raise MgmtError(
                404, "NotFound", f"The resource record '{key[2]}' does not exist in zone '{zone.name}'."
            )
        return web.json_response(self._resource(request.path, zone, key, entry))

    async def put(self, request: web.Request) -> web.StreamResponse:
        zone, key = self._key(request)
        properties = dict((await json_body(request)).get("properties") or {})
        properties.pop("fqdn", None)
        properties.pop("provisioningState", None)
        _check(key[1], properties)
        created = key not in self.store.record_sets
        entry = (properties, str(uuid.uuid4()))
        self.store.put(key, entry)
        return web.json_response(
            self._resource(request.path, zone, key, entry), status=201 if created else 200
        )

    async def delete(self, request: web.Request) -> web.StreamResponse:
        _, key = self._key(request)
        # Azure DNS answers 204 for a record set that does not exist.
        return web.Response(status=200 if self.store.delete(key) else 204)
