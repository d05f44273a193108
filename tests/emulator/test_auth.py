"""CBS security: SAS tokens are verified (key, expiry, audience) and refusals reach the SDK."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from urllib.parse import quote, quote_plus

import pytest
from azure.core.credentials import AccessToken, AzureSasCredential
from azure.eventhub import EventHubProducerClient
from azure.eventhub.aio import EventHubProducerClient as AsyncEventHubProducerClient
from azure.eventhub.exceptions import AuthenticationError
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus.aio import ServiceBusClient as AsyncServiceBusClient
from azure.servicebus.exceptions import ServiceBusAuthenticationError, ServiceBusAuthorizationError

from federator_emulator import auth
from federator_emulator.server import RunningEmulator
from support.azure_clients import with_key

pytestmark = pytest.mark.timeout(60)

KEY = "unit-test-key"  # the tests that start an emulator use its namespace's own key (emulator.key())
KEYS = {"RootManageSharedAccessKey": KEY}
RESOURCE = "sb://localhost:5672/hub1"


def test_token_signed_with_the_key_grants_its_audience():
    token = auth.generate_sas_token(RESOURCE, "RootManageSharedAccessKey", KEY, int(time.time()) + 60)
    grant = auth.verify_sas_token(token, "sb://localhost:5672/hub1/consumergroups/$default", KEYS)
    assert grant.path == "hub1/consumergroups/$default"


@pytest.mark.parametrize(
    ("key_name", "key", "expiry_offset", "audience", "reason"),
    [
        (
            "RootManageSharedAccessKey",
            "wrong",
            60,
            RESOURCE,
            "^InvalidSignature: The token has an invalid signature.$",
        ),
        ("nobody", KEY, 60, RESOURCE, "^InvalidSignature: .* no SAS key named 'nobody'"),
        ("RootManageSharedAccessKey", KEY, -1, RESOURCE, "^ExpiredToken: The token is expired"),
        (
            "RootManageSharedAccessKey",
            KEY,
            60,
            "sb://localhost:5672/other",
            "^InvalidAudience: .* does not cover",
        ),
    ],
)
def test_bad_tokens_are_refused(key_name, key, expiry_offset, audience, reason):
    token = auth.generate_sas_token(RESOURCE, key_name, key, int(time.time()) + expiry_offset)
    with pytest.raises(auth.AuthError, match=reason):
        auth.verify_sas_token(token, audience, KEYS)


def test_grant_for_a_hub_does_not_cover_a_sibling_with_the_same_prefix():
    grants = auth.ConnectionGrants()
    grants.add(auth.Grant(path="hub1", expires_at=time.time() + 60))
    assert grants.allows("amqps://localhost:5672/hub1/ConsumerGroups/$Default/Partitions/0")
    assert not grants.allows("amqps://localhost:5672/hub10")


def test_event_hubs_client_with_a_wrong_key_gets_an_auth_error(cs):
    with (
        EventHubProducerClient.from_connection_string(
            with_key(cs, "not-the-key"), eventhub_name="hub1", retry_total=0
        ) as producer,
        pytest.raises(AuthenticationError),
    ):
        producer.get_partition_ids()


def test_service_bus_client_with_a_wrong_key_gets_an_auth_error(cs):
    client = ServiceBusClient.from_connection_string(with_key(cs, "not-the-key"), retry_total=0)
    with client, pytest.raises(ServiceBusAuthenticationError), client.get_queue_sender("q1") as sender:
        sender.send_messages(ServiceBusMessage("x"))


def test_expired_sas_credential_is_refused(emulator):
    endpoint = emulator.namespace()
    resource = f"sb://localhost:{endpoint.amqp_port}/hub1"
    expired = auth.generate_sas_token(
        resource, "RootManageSharedAccessKey", emulator.key(), int(time.time()) - 10
    )
    producer = EventHubProducerClient(
        f"localhost:{endpoint.amqp_port}", "hub1", AzureSasCredential(expired), use_tls=False, retry_total=0
    )
    with producer, pytest.raises(AuthenticationError, match="ExpiredToken"):
        producer.get_partition_ids()


def test_a_key_with_the_send_right_only_cannot_receive(emulator_factory):
    keys = [{"name": "sender", "key": "send-only", "rights": ["Send"]}]
    emu = emulator_factory({"namespaces": [{"name": "ns", "keys": keys, "queues": [{"name": "q"}]}]})
    client = ServiceBusClient.from_connection_string(emu.connection_string(), retry_total=0)
    with client:
        with client.get_queue_sender("q") as sender:
            sender.send_messages(ServiceBusMessage("x"))
        with (
            pytest.raises(ServiceBusAuthorizationError, match="'Listen' claim\\(s\\) are required"),
            client.get_queue_receiver("q") as receiver,
        ):
            receiver.receive_messages(max_wait_time=1)


class TokenThatIsNeverRenewed:
    """A client's credential that does not renew its token in time: a SAS token that expires in
    ``seconds``, said to last an hour (so the SDK does not ask for another before then)."""

    def __init__(self, resource: str, key: str, seconds: int) -> None:
        self.resource, self.key, self.seconds = resource, key, seconds

    def get_token(self, *scopes: str, **kwargs: object) -> AccessToken:
        expiry = int(time.time()) + self.seconds
        token = auth.generate_sas_token(self.resource, "RootManageSharedAccessKey", self.key, expiry)
        return AccessToken(token, int(time.time()) + 3600)


def test_an_open_link_is_detached_when_its_token_expires_as_azure_drops_it(emulator: RunningEmulator) -> None:
    port = emulator.namespace().amqp_port
    credential = TokenThatIsNeverRenewed(f"sb://localhost:{port}/", emulator.key(), seconds=3)
    client = ServiceBusClient(f"localhost:{port}", credential, use_tls=False, retry_total=0)
    with client, client.get_queue_receiver("q1") as receiver:
        assert receiver.receive_messages(max_wait_time=0.5) == []  # the link is open
        give_up = time.monotonic() + credential.seconds + 15
        with pytest.raises(ServiceBusAuthorizationError, match="has expired"):
            while time.monotonic() < give_up:  # receives on the open link until it is detached
                receiver.receive_messages(max_wait_time=1)


def test_valid_key_is_accepted(cs):
    with EventHubProducerClient.from_connection_string(cs, eventhub_name="hub1") as producer:
        assert producer.get_partition_ids() == ["0", "1"]


def test_a_token_for_an_entity_that_does_not_exist_is_answered_not_found_as_azure_does(cs):
    client = ServiceBusClient.from_connection_string(cs, retry_total=0)
    with (
        client,
        pytest.raises(ServiceBusAuthenticationError) as raised,
        client.get_queue_sender("no-such-queue") as sender,
    ):
        sender.send_messages(ServiceBusMessage("x"))
    error = str(raised.value.inner_exception)
    assert "Status code: 404" in error and "/no-such-queue' could not be found" in error

    producer = EventHubProducerClient.from_connection_string(cs, eventhub_name="no-such-hub", retry_total=0)
    with (
        producer,
        pytest.raises(AuthenticationError, match="could not be found"),
    ):
        producer.get_partition_ids()


def hand_built_sas_token(
    uri: str, key: str, ttl: int = 300, key_name: str = "RootManageSharedAccessKey"
) -> str:
    """The token the SDK samples build by hand: ``sr`` is the plain URI and the signature covers it."""
    expiry = str(int(time.time() + ttl))
    digest = hmac.HMAC(key.encode(), f"{uri}\n{expiry}".encode(), hashlib.sha256).digest()
    signature = quote(base64.b64encode(digest))
    return f"SharedAccessSignature sr={uri}&sig={signature}&se={expiry}&skn={key_name}"


class SampleSasCredential:
    """The samples' ``CustomizedSASCredential``: a fixed token typed as a SAS token."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.token_type = b"servicebus.windows.net:sastoken"

    def get_token(self, *scopes: str, **kwargs: object) -> AccessToken:
        return AccessToken(self.token, int(time.time()) + 300)


def test_a_token_signed_over_sr_exactly_as_sent_is_accepted_as_azure_does():
    uri = "sb://localhost:5672/hub1"
    token = hand_built_sas_token(uri, KEY, 60)
    assert auth.verify_sas_token(token, f"{uri}/consumergroups/$default", KEYS).path.startswith("hub1")
    # The same signature is no longer valid once sr is re-encoded: the string as sent is what counts.
    reencoded = token.replace(f"sr={uri}", f"sr={quote_plus(uri)}")
    with pytest.raises(auth.AuthError, match="signature"):
        auth.verify_sas_token(reencoded, uri, KEYS)


def test_hand_built_sas_tokens_from_the_sdk_samples_work_with_both_sdks(emulator):
    port = emulator.namespace().amqp_port
    namespace = f"localhost:{port}"
    queue_token = hand_built_sas_token(f"sb://{namespace}/q1", emulator.key())
    with (
        ServiceBusClient(namespace, SampleSasCredential(queue_token), use_tls=False) as client,
        client.get_queue_sender("q1") as sender,
    ):
        sender.send_messages(ServiceBusMessage("signed by hand"))
    hub_token = hand_built_sas_token(f"sb://{namespace}/hub1", emulator.key())
    with EventHubProducerClient(namespace, "hub1", AzureSasCredential(hub_token), use_tls=False) as producer:
        assert producer.get_partition_ids() == ["0", "1"]


@pytest.mark.asyncio
async def test_hand_built_sas_tokens_work_with_the_async_clients(emulator):
    namespace = f"localhost:{emulator.namespace().amqp_port}"
    token = hand_built_sas_token(f"sb://{namespace}/q1", emulator.key())
    async with (
        AsyncServiceBusClient(namespace, AzureSasCredential(token), use_tls=False) as client,
        client.get_queue_sender("q1") as sender,
    ):
        await sender.send_messages(ServiceBusMessage("signed by hand"))
    hub_token = hand_built_sas_token(f"sb://{namespace}/hub1", emulator.key())
    async with AsyncEventHubProducerClient(
        namespace, "hub1", AzureSasCredential(hub_token), use_tls=False
    ) as producer:
        assert await producer.get_partition_ids() == ["0", "1"]
