"""A tenant who holds one emulator namespace's credentials tries them on another namespace of the same
emulator (local mode serves every namespace its tasks name from one emulator, e.g. a mirror's regions).

On Azure each namespace has keys of its own, and a role assignment covers the namespace (or entity) it is
made on; the emulator answers as Azure does. A SAS token signed with namespace A's key is refused by B:
over AMQP the CBS put-token gets status 401 ``InvalidSignature: The token has an invalid signature.``
(what the SDKs raise as an authentication error), over HTTPS the same words with 401. A Microsoft Entra
principal whose roles are on A gets no claim on B: its links are refused with ``amqp:unauthorized-access``
and its management calls with 401. The tenant uses only what a tenant has: A's connection string (from
the ready file, as local mode hands it out), B's address, and A's service principal. Neither may A's
principal read B's event hub through its `$management` node (a read needs a role on the hub, as on
Azure), nor may a token B handed A for a few seconds keep A's link open once it expires: the link is
detached, as Azure detaches it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from azure.core.credentials import AccessToken
from azure.core.exceptions import ClientAuthenticationError
from azure.eventhub import EventData, EventHubProducerClient
from azure.eventhub.exceptions import AuthenticationError, EventHubError
from azure.identity import ClientSecretCredential
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus.exceptions import ServiceBusAuthenticationError, ServiceBusAuthorizationError
from azure.servicebus.management import ServiceBusAdministrationClient

from federator_emulator import auth
from federator_emulator.server import RunningEmulator
from federator_emulator.testing import EmulatorFactory

pytestmark = pytest.mark.timeout(120)

OWN, OTHER = "team-a", "team-b"
TEAM_A_APP = "a0a0a0a0-0000-4000-8000-00000000000a"
TEAM_A_SECRET = "team-a-client-secret"  # a throwaway emulator's placeholder, not a secret
INVALID_SIGNATURE = "InvalidSignature: The token has an invalid signature."


def namespace(name: str, roles: list[dict[str, str]]) -> dict[str, object]:
    return {
        "name": name,
        "roleAssignments": roles,
        "queues": [{"name": "orders"}],
        "eventHubs": [{"name": "events"}],
    }


TEAM_A_ROLES = [
    {"principal": "team-a-app", "role": "Azure Service Bus Data Owner"},
    {"principal": "team-a-app", "role": "Azure Event Hubs Data Owner"},
]
CONFIG = {
    "identity": {
        "applications": [{"name": "team-a-app", "clientId": TEAM_A_APP, "clientSecret": TEAM_A_SECRET}]
    },
    "namespaces": [namespace(OWN, TEAM_A_ROLES), namespace(OTHER, [])],
}


@pytest.fixture
def shared(emulator_factory: EmulatorFactory) -> RunningEmulator:
    """One emulator serving both teams' namespaces, each declared without a key (the usual config)."""
    return emulator_factory(CONFIG)


def key_in(connection_string: str) -> str:
    found = re.search(r"SharedAccessKey=([^;]+)", connection_string)
    assert found is not None, "a connection string without a key"
    return found[1]


def own_key(emu: RunningEmulator) -> str:
    """The key in the tenant's own connection string."""
    return key_in(emu.connection_string(OWN))


def signed_with_own_key(connection_string: str, emu: RunningEmulator) -> str:
    """Another namespace's connection string carrying the tenant's own key."""
    return re.sub(r"(?<=SharedAccessKey=)[^;]*", lambda _: own_key(emu), connection_string)


def own_key_part(emu: RunningEmulator) -> str:
    """``SharedAccessKeyName=…;SharedAccessKey=…`` of the tenant's connection string."""
    return ";".join(p for p in emu.connection_string(OWN).split(";") if p.startswith("SharedAccessKey"))


def arrived(emu: RunningEmulator, name: str) -> tuple[int, int]:
    """Messages sent to the namespace's queue (its sequence numbers start at 1) and events to its hub."""
    state = emu.state(name)
    return emu.call(
        lambda: (
            state.queue("orders").next_sequence_number - 1,
            sum(p.next_sequence_number for p in state.event_hub("events").partitions.values()),
        )
    )


def send_both(connection_string: str) -> None:
    """Send one message to the queue and one event to the event hub, failing at the first refusal."""
    with (
        ServiceBusClient.from_connection_string(connection_string, retry_total=0) as client,
        client.get_queue_sender("orders") as sender,
    ):
        sender.send_messages(ServiceBusMessage("from team a"))
    with EventHubProducerClient.from_connection_string(
        connection_string, eventhub_name="events", retry_total=0
    ) as producer:
        producer.send_batch([EventData("from team a")])


def test_each_namespace_has_a_key_of_its_own(shared: RunningEmulator) -> None:
    assert key_in(shared.connection_string(OWN)) != key_in(shared.connection_string(OTHER))


def test_a_sas_token_signed_with_another_namespaces_key_is_refused_over_amqp(shared: RunningEmulator) -> None:
    send_both(shared.connection_string(OWN))  # the key works where it belongs
    crossed = signed_with_own_key(shared.connection_string(OTHER), shared)
    with (
        ServiceBusClient.from_connection_string(crossed, retry_total=0) as client,
        pytest.raises(ServiceBusAuthenticationError) as refused,
        client.get_queue_sender("orders") as sender,
    ):
        sender.send_messages(ServiceBusMessage("into team b"))
    cbs = str(refused.value.inner_exception)
    assert "Status code: 401" in cbs and INVALID_SIGNATURE in cbs
    producer = EventHubProducerClient.from_connection_string(crossed, eventhub_name="events", retry_total=0)
    with producer, pytest.raises(AuthenticationError, match=re.escape(INVALID_SIGNATURE)):
        producer.send_batch([EventData("into team b")])
    assert arrived(shared, OTHER) == (0, 0)
    assert arrived(shared, OWN) == (1, 1)


def test_a_sas_token_signed_with_another_namespaces_key_is_refused_over_https(
    shared: RunningEmulator,
) -> None:
    other = shared.namespace(OTHER)
    crossed = f"Endpoint=sb://{other.fully_qualified_namespace};{own_key_part(shared)}"
    admin = ServiceBusAdministrationClient.from_connection_string(
        crossed, connection_verify=str(other.ca_path), retry_total=0
    )
    with admin, pytest.raises(ClientAuthenticationError) as refused:
        admin.create_queue("planted-by-team-a")
    assert refused.value.status_code == 401
    assert INVALID_SIGNATURE in str(refused.value)
    assert shared.call(lambda: shared.state(OTHER).has_entity("planted-by-team-a")) is False


@pytest.fixture
def team_a(shared: RunningEmulator) -> Iterator[ClientSecretCredential]:
    """Team A's service principal, signed in at the emulator's Microsoft Entra tenant."""
    credential = ClientSecretCredential(
        shared.tenant_id,
        TEAM_A_APP,
        TEAM_A_SECRET,
        authority=shared.authority_host,
        connection_verify=str(shared.ca_path),
        disable_instance_discovery=True,
    )
    with credential:
        yield credential


def plain(emu: RunningEmulator, name: str) -> str:
    """The namespace's plain AMQP address (an Entra token needs no TLS here)."""
    return f"localhost:{emu.namespace(name).amqp_port}"


def test_an_entra_role_on_one_namespace_gives_nothing_on_another(
    shared: RunningEmulator, team_a: ClientSecretCredential
) -> None:
    with (
        ServiceBusClient(plain(shared, OWN), team_a, use_tls=False) as client,
        client.get_queue_sender("orders") as s,
    ):
        s.send_messages(ServiceBusMessage("team a's own"))  # its role holds where it was given
    client = ServiceBusClient(plain(shared, OTHER), team_a, use_tls=False, retry_total=0)
    with (
        client,
        pytest.raises(ServiceBusAuthorizationError, match=r"'Send' claim\(s\) are required") as refused,
        client.get_queue_sender("orders") as sender,
    ):
        sender.send_messages(ServiceBusMessage("into team b"))
    assert "amqp:unauthorized-access" in str(getattr(refused.value.inner_exception, "condition", None))
    producer = EventHubProducerClient(plain(shared, OTHER), "events", team_a, use_tls=False, retry_total=0)
    with producer, pytest.raises(EventHubError, match=r"'Send' claim\(s\) are required") as detached:
        producer.send_batch([EventData("into team b")])
    assert "amqp:unauthorized-access" in str(detached.value)
    other = shared.namespace(OTHER)
    admin = ServiceBusAdministrationClient(
        other.fully_qualified_namespace, team_a, connection_verify=str(other.ca_path), retry_total=0
    )
    with admin, pytest.raises(ClientAuthenticationError, match="claims required") as denied:
        admin.create_queue("planted-by-team-a")
    assert denied.value.status_code == 401
    assert arrived(shared, OTHER) == (0, 0)


def test_an_entra_role_on_one_namespace_reads_nothing_of_another_namespaces_event_hub(
    shared: RunningEmulator, team_a: ClientSecretCredential
) -> None:
    with EventHubProducerClient(plain(shared, OWN), "events", team_a, use_tls=False) as producer:
        # Its own hub, where it has a role, reads.
        assert producer.get_eventhub_properties()["eventhub_name"] == "events"
    producer = EventHubProducerClient(plain(shared, OTHER), "events", team_a, use_tls=False, retry_total=0)
    with producer:
        with pytest.raises(AuthenticationError, match=r"'Send' or 'Listen' claim\(s\) are required"):
            producer.get_eventhub_properties()
        with pytest.raises(AuthenticationError, match=r"'Send' or 'Listen' claim\(s\) are required"):
            producer.get_partition_properties("0")


class HandedOverToken:
    """A SAS token another team signed for a few seconds and handed over: its holder cannot renew it, and
    its client, told it lasts an hour, never asks for another."""

    def __init__(self, token: str) -> None:
        self.token = token

    def get_token(self, *scopes: str, **kwargs: object) -> AccessToken:
        return AccessToken(self.token, int(time.time()) + 3600)


def test_a_link_opened_with_a_handed_over_token_is_detached_when_the_token_expires(
    shared: RunningEmulator,
) -> None:
    port, lifetime = shared.namespace(OTHER).amqp_port, 3
    key_name = re.search(r"SharedAccessKeyName=([^;]+)", shared.connection_string(OTHER))
    assert key_name is not None
    expiry = int(time.time()) + lifetime
    token = auth.generate_sas_token(
        f"sb://localhost:{port}/", key_name[1], key_in(shared.connection_string(OTHER)), expiry
    )
    client = ServiceBusClient(f"localhost:{port}", HandedOverToken(token), use_tls=False, retry_total=0)
    with client, client.get_queue_receiver("orders") as receiver:
        assert receiver.receive_messages(max_wait_time=0.5) == []  # the link is open while the token is valid
        give_up = time.monotonic() + lifetime + 15
        with pytest.raises(ServiceBusAuthorizationError, match="has expired"):
            while time.monotonic() < give_up:  # keeps receiving on the open link until it is detached
                receiver.receive_messages(max_wait_time=1)
