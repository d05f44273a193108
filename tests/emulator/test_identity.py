"""Microsoft Entra ID through the unmodified SDKs: azure-identity signs in at the emulator's token endpoint
(AZURE_AUTHORITY_HOST), the data plane takes the JWTs over CBS and the management plane as bearer tokens,
each checking signature, audience, expiry and the principal's Azure roles."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
import requests
from azure.core.credentials import AccessToken
from azure.core.exceptions import ClientAuthenticationError, HttpResponseError
from azure.eventhub import EventData, EventHubProducerClient
from azure.eventhub.exceptions import AuthenticationError
from azure.identity import ClientSecretCredential, WorkloadIdentityCredential
from azure.identity.aio import ClientSecretCredential as AsyncClientSecretCredential
from azure.identity.aio import WorkloadIdentityCredential as AsyncWorkloadIdentityCredential
from azure.mgmt.servicebus import ServiceBusManagementClient
from azure.mgmt.servicebus.models import SBQueue
from azure.servicebus import ServiceBusClient, ServiceBusMessage, TransportType
from azure.servicebus.aio import ServiceBusClient as AsyncServiceBusClient
from azure.servicebus.exceptions import ServiceBusAuthenticationError, ServiceBusAuthorizationError
from azure.servicebus.management import ServiceBusAdministrationClient
from azure.storage.blob import BlobServiceClient
from cryptography.hazmat.primitives.asymmetric import rsa

from federator.local.azurite import RunningAzurite
from federator_emulator.server import RunningEmulator

pytestmark = pytest.mark.timeout(90)

SENDER = "11111111-1111-1111-1111-111111111111"
RECEIVER = "22222222-2222-2222-2222-222222222222"
REPLICATOR = "33333333-3333-3333-3333-333333333333"
NOBODY = "44444444-4444-4444-4444-444444444444"
SECRET = "app-secret"
SERVICE_ACCOUNT = "system:serviceaccount:federator:replicator"
STORAGE_SCOPE = "https://storage.azure.com/.default"
CONFIG = {
    "identity": {
        "applications": [
            {"name": "sender", "clientId": SENDER, "clientSecret": SECRET},
            {"name": "receiver", "clientId": RECEIVER, "clientSecret": SECRET},
            {
                "name": "replicator",
                "clientId": REPLICATOR,
                "federatedCredentials": [{"subject": SERVICE_ACCOUNT}],
            },
            {"name": "nobody", "clientId": NOBODY, "clientSecret": SECRET},
        ]
    },
    "namespaces": [
        {
            "name": "ns1",
            "eventHubs": [{"name": "hub1"}],
            "queues": [{"name": "q1"}, {"name": "q2"}],
            "roleAssignments": [
                {"principal": "sender", "role": "Azure Service Bus Data Sender"},
                {"principal": SENDER, "role": "Azure Event Hubs Data Sender", "scope": "hub1"},
                {"principal": RECEIVER, "role": "Azure Service Bus Data Receiver", "scope": "q1"},
                {"principal": "replicator", "role": "Azure Service Bus Data Owner"},
                {"principal": "replicator", "role": "Contributor"},
            ],
        }
    ],
}


@pytest.fixture
def entra(emulator_factory: Any, monkeypatch: pytest.MonkeyPatch) -> RunningEmulator:
    emu: RunningEmulator = emulator_factory(CONFIG)
    monkeypatch.setenv("AZURE_AUTHORITY_HOST", emu.authority_host)
    return emu


def secret_credential(emu: RunningEmulator, client_id: str) -> ClientSecretCredential:
    # Instance discovery would ask login.microsoftonline.com whether the emulator's host is an authority.
    return ClientSecretCredential(
        emu.tenant_id, client_id, SECRET, connection_verify=str(emu.ca_path), disable_instance_discovery=True
    )


def workload_credential(emu: RunningEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Play the AKS workload identity webhook: project a service account token, set the pod's variables."""
    token_file = tmp_path / "azure-identity-token"
    token_file.write_text(emu.workload_identity_token(SERVICE_ACCOUNT))
    monkeypatch.setenv("AZURE_FEDERATED_TOKEN_FILE", str(token_file))
    monkeypatch.setenv("AZURE_CLIENT_ID", REPLICATOR)
    monkeypatch.setenv("AZURE_TENANT_ID", emu.tenant_id)


def plain(emu: RunningEmulator) -> str:
    return f"localhost:{emu.namespace().amqp_port}"


def test_a_service_principal_sends_with_a_client_secret_over_tls(entra: RunningEmulator) -> None:
    ns = entra.namespace()
    tls = {"custom_endpoint_address": ns.custom_endpoint_address, "connection_verify": str(ns.ca_path)}
    with (
        secret_credential(entra, SENDER) as credential,
        ServiceBusClient(
            ns.fully_qualified_namespace, credential, transport_type=TransportType.Amqp, **tls
        ) as client,
        client.get_queue_sender("q1") as sender,
    ):
        sender.send_messages(ServiceBusMessage("signed in"))
    with (
        secret_credential(entra, SENDER) as credential,
        EventHubProducerClient(plain(entra), "hub1", credential, use_tls=False) as producer,
    ):
        producer.send_batch([EventData("signed in")])
    assert entra.call(lambda: entra.state().queue("q1").next_sequence_number) == 2


def test_reading_an_event_hubs_properties_needs_a_role_on_it(entra: RunningEmulator) -> None:
    # A producer reads the partition ids before it sends (a Data Sender may); a principal with no role
    # on the hub may not, whatever its token's audience.
    with (
        secret_credential(entra, SENDER) as credential,
        EventHubProducerClient(plain(entra), "hub1", credential, use_tls=False) as producer,
    ):
        assert producer.get_partition_ids() == producer.get_eventhub_properties()["partition_ids"]
    with secret_credential(entra, NOBODY) as credential:
        producer = EventHubProducerClient(plain(entra), "hub1", credential, use_tls=False, retry_total=0)
        with producer, pytest.raises(AuthenticationError, match="claim\\(s\\) are required"):
            producer.get_eventhub_properties()


def test_workload_identity_with_a_projected_token_file_drives_data_and_management(
    entra: RunningEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workload_credential(entra, tmp_path, monkeypatch)
    ns = entra.namespace()
    with WorkloadIdentityCredential(connection_verify=str(entra.ca_path)) as credential:
        with ServiceBusClient(plain(entra), credential, use_tls=False) as client:
            with client.get_queue_sender("q2") as sender:
                sender.send_messages(ServiceBusMessage("from the pod"))
            with client.get_queue_receiver("q2") as receiver:
                (message,) = receiver.receive_messages(max_wait_time=5)
                receiver.complete_message(message)
        arm = ServiceBusManagementClient(
            credential,
            ns.arm.subscription_id,
            base_url=entra.arm_endpoint,
            credential_scopes=[f"{entra.arm_endpoint}/.default"],  # as Federator asks another cloud's ARM
            connection_verify=str(entra.ca_path),
        )
        with arm:
            arm.queues.create_or_update(ns.arm.resource_group, ns.arm.namespace_name, "created", SBQueue())
    assert str(message) == "from the pod"
    assert entra.call(lambda: "created" in entra.state().queues)


@pytest.mark.asyncio
async def test_async_credentials_sign_in_with_a_secret_and_a_federated_token(
    entra: RunningEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workload_credential(entra, tmp_path, monkeypatch)
    verify = str(entra.ca_path)
    async with (
        AsyncWorkloadIdentityCredential(connection_verify=verify) as workload,
        AsyncClientSecretCredential(
            entra.tenant_id, RECEIVER, SECRET, connection_verify=verify, disable_instance_discovery=True
        ) as secret,
    ):
        async with (
            AsyncServiceBusClient(plain(entra), workload, use_tls=False) as client,
            client.get_queue_sender("q1") as sender,
        ):
            await sender.send_messages(ServiceBusMessage("async"))
        async with (
            AsyncServiceBusClient(plain(entra), secret, use_tls=False) as client,
            client.get_queue_receiver("q1") as receiver,
        ):
            (message,) = await receiver.receive_messages(max_wait_time=5)
            await receiver.complete_message(message)
    assert str(message) == "async"


def test_a_missing_role_is_refused_as_azure_words_it(entra: RunningEmulator) -> None:
    with secret_credential(entra, SENDER) as credential:
        client = ServiceBusClient(plain(entra), credential, use_tls=False, retry_total=0)
        with (
            client,
            pytest.raises(ServiceBusAuthorizationError, match="'Listen' claim\\(s\\) are required"),
            client.get_queue_receiver("q1") as receiver,
        ):
            receiver.receive_messages(max_wait_time=1)
    with secret_credential(entra, RECEIVER) as credential:
        client = ServiceBusClient(plain(entra), credential, use_tls=False, retry_total=0)
        with client:
            with client.get_queue_receiver("q1") as receiver:  # its role covers q1 ...
                receiver.receive_messages(max_wait_time=1)
            with (
                pytest.raises(ServiceBusAuthorizationError, match="'Listen' claim"),
                client.get_queue_receiver("q2") as other,  # ... and no other queue
            ):
                other.receive_messages(max_wait_time=1)
    with secret_credential(entra, NOBODY) as credential:
        ns = entra.namespace()
        arm = ServiceBusManagementClient(
            credential,
            ns.arm.subscription_id,
            base_url=entra.arm_endpoint,
            credential_scopes=[f"{entra.arm_endpoint}/.default"],
            connection_verify=str(entra.ca_path),
        )
        with arm, pytest.raises(HttpResponseError) as refused:
            arm.queues.get(ns.arm.resource_group, ns.arm.namespace_name, "q1")
    assert refused.value.status_code == 403 and refused.value.error is not None
    assert refused.value.error.code == "AuthorizationFailed"
    assert "Microsoft.ServiceBus/namespaces/queues/read" in str(refused.value)


def test_the_administration_client_needs_the_manage_claim(
    entra: RunningEmulator, tmp_path: Path, monkeypatch
) -> None:
    ns = entra.namespace()
    with secret_credential(entra, RECEIVER) as credential:
        admin = ServiceBusAdministrationClient(
            ns.fully_qualified_namespace, credential, connection_verify=str(ns.ca_path)
        )
        with admin, pytest.raises(ClientAuthenticationError, match="Manage,EntityRead claims required"):
            admin.get_queue("q1")
    workload_credential(entra, tmp_path, monkeypatch)
    with WorkloadIdentityCredential(connection_verify=str(entra.ca_path)) as credential:
        admin = ServiceBusAdministrationClient(
            ns.fully_qualified_namespace, credential, connection_verify=str(ns.ca_path)
        )
        with admin:
            admin.create_queue("by-data-owner")
            assert admin.get_queue("by-data-owner").name == "by-data-owner"


class IssuedToken:
    """A credential handing out one token, whatever scope the SDK asks for."""

    def __init__(self, token: str) -> None:
        self.token = token

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken(self.token, 2**31 - 1)


def issued(emu: RunningEmulator, client_id: str, resource: str, lifetime: int | None = None) -> IssuedToken:
    tenant = emu.emulator.tenant
    application = tenant.directory.application(client_id)
    assert application is not None
    return IssuedToken(tenant.tokens.access_token(application, resource, lifetime).token)


def cbs_refusal(emu: RunningEmulator, credential: IssuedToken) -> str:
    """What the Service Bus SDK reports when its put-token is refused (the CBS status and description)."""
    client = ServiceBusClient(plain(emu), credential, use_tls=False, retry_total=0)
    with client, pytest.raises(ServiceBusAuthenticationError) as refused, client.get_queue_sender("q1") as s:
        s.send_messages(ServiceBusMessage("x"))
    return str(refused.value.inner_exception)


@pytest.mark.parametrize(
    ("resource", "lifetime", "refusal"),
    [
        ("https://management.azure.com", None, "InvalidAudience: Invalid authorization token audience."),
        ("https://storage.azure.com", None, "InvalidAudience: Invalid authorization token audience."),
        ("https://servicebus.azure.net", -60, "ExpiredToken: The token is expired."),
    ],
)
def test_a_token_for_another_audience_or_an_expired_one_is_refused_over_cbs(
    entra: RunningEmulator, resource: str, lifetime: int | None, refusal: str
) -> None:
    credential = issued(entra, SENDER, resource, lifetime)
    assert refusal in cbs_refusal(entra, credential)
    producer = EventHubProducerClient(plain(entra), "hub1", credential, use_tls=False, retry_total=0)
    with producer, pytest.raises(AuthenticationError, match=refusal.split(":")[0]):
        producer.send_batch([EventData("x")])


@pytest.mark.parametrize(
    ("resource", "lifetime", "code"),
    [
        ("https://servicebus.azure.net", None, "InvalidAuthenticationTokenAudience"),
        ("https://management.azure.com", -60, "ExpiredAuthenticationToken"),
    ],
)
def test_arm_verifies_bearer_tokens(
    entra: RunningEmulator, resource: str, lifetime: int | None, code: str
) -> None:
    ns = entra.namespace()
    credential = issued(entra, REPLICATOR, resource, lifetime)
    arm = ServiceBusManagementClient(
        credential, ns.arm.subscription_id, base_url=entra.arm_endpoint, connection_verify=str(entra.ca_path)
    )
    with arm, pytest.raises(ClientAuthenticationError) as refused:
        arm.queues.get(ns.arm.resource_group, ns.arm.namespace_name, "q1")
    assert refused.value.error is not None and refused.value.error.code == code


def test_a_token_signed_with_another_key_is_refused(entra: RunningEmulator) -> None:
    genuine = issued(entra, SENDER, "https://servicebus.azure.net").token
    claims = jwt.decode(genuine, options={"verify_signature": False})
    forger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = jwt.encode(claims, forger, algorithm="RS256", headers=jwt.get_unverified_header(genuine))
    assert "InvalidSignature: The token has an invalid signature." in cbs_refusal(entra, IssuedToken(forged))


@pytest.mark.parametrize(
    ("client_id", "secret", "code"),
    [(SENDER, "wrong", "AADSTS7000215"), ("55555555-5555-5555-5555-555555555555", SECRET, "AADSTS700016")],
)
def test_the_token_endpoint_refuses_bad_client_credentials(
    entra: RunningEmulator, client_id: str, secret: str, code: str
) -> None:
    credential = ClientSecretCredential(
        entra.tenant_id,
        client_id,
        secret,
        connection_verify=str(entra.ca_path),
        disable_instance_discovery=True,
    )
    with credential, pytest.raises(ClientAuthenticationError, match=code):
        credential.get_token("https://servicebus.azure.net/.default")


@pytest.mark.parametrize(
    ("subject", "lifetime", "code"),
    [("system:serviceaccount:other:app", 3600, "AADSTS70021"), (SERVICE_ACCOUNT, -60, "AADSTS700024")],
)
def test_the_token_endpoint_refuses_federated_tokens_it_does_not_trust(
    entra: RunningEmulator, tmp_path: Path, subject: str, lifetime: int, code: str
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(entra.workload_identity_token(subject, lifetime_seconds=lifetime))
    credential = WorkloadIdentityCredential(
        tenant_id=entra.tenant_id,
        client_id=REPLICATOR,
        token_file_path=str(token_file),
        connection_verify=str(entra.ca_path),
    )
    with credential, pytest.raises(ClientAuthenticationError, match=code):
        credential.get_token("https://servicebus.azure.net/.default")


def test_the_signing_key_survives_a_restart_with_the_data_dir(emulator_factory: Any, tmp_path: Path) -> None:
    first = emulator_factory(CONFIG, data_dir=tmp_path)
    token = issued(first, SENDER, "https://servicebus.azure.net")
    first.stop()
    second = emulator_factory(CONFIG, data_dir=tmp_path)
    with (
        ServiceBusClient(plain(second), token, use_tls=False) as client,
        client.get_queue_sender("q1") as sender,
    ):
        sender.send_messages(ServiceBusMessage("still valid"))
    assert (tmp_path / "entra-signing-key.pem").exists()


def test_a_federated_token_from_a_trusted_external_issuer_is_exchanged(
    emulator_factory: Any, tmp_path: Path
) -> None:
    """A cluster's own service account issuer: the emulator reads its keys from a JWKS file."""
    issuer = "https://oidc.cluster.example/issuer"
    cluster_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = jwt.algorithms.RSAAlgorithm.to_jwk(cluster_key.public_key(), as_dict=True)
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [{**jwk, "kid": "cluster-1", "use": "sig"}]}))
    config = {
        "identity": {
            "trustedIssuers": [{"issuer": issuer, "jwksPath": str(tmp_path / "jwks.json")}],
            "applications": [
                {
                    "name": "replicator",
                    "clientId": REPLICATOR,
                    "federatedCredentials": [{"issuer": issuer, "subject": SERVICE_ACCOUNT}],
                }
            ],
        },
        "namespaces": [{"name": "ns1", "queues": [{"name": "q1"}]}],
    }
    emu = emulator_factory(config)
    now = int(time.time())
    claims = {"iss": issuer, "sub": SERVICE_ACCOUNT, "aud": ["api://AzureADTokenExchange"], "exp": now + 600}
    (tmp_path / "token").write_text(
        jwt.encode({**claims, "iat": now}, cluster_key, "RS256", {"kid": "cluster-1"})
    )
    credential = WorkloadIdentityCredential(
        tenant_id=emu.tenant_id,
        client_id=REPLICATOR,
        token_file_path=str(tmp_path / "token"),
        authority=emu.authority_host,
        connection_verify=str(emu.ca_path),
    )
    with credential:
        assert credential.get_token("https://servicebus.azure.net/.default").token


def test_instance_discovery_points_msal_at_the_emulators_openid_configuration(entra: RunningEmulator) -> None:
    """What MSAL asks login.microsoftonline.com about an authority it does not know (answered when a client
    reaches the emulator by that name, as tools/run-sdk-samples arranges)."""
    authority = f"{entra.authority_host}/{entra.tenant_id}"
    answer = requests.get(
        f"{entra.authority_host}/common/discovery/instance",
        params={"authorization_endpoint": f"{authority}/oauth2/v2.0/authorize", "api-version": "1.0"},
        verify=str(entra.ca_path),
        timeout=10,
    ).json()
    discovery = requests.get(
        answer["tenant_discovery_endpoint"], verify=str(entra.ca_path), timeout=10
    ).json()
    assert discovery["token_endpoint"] == f"{authority}/oauth2/v2.0/token"


def test_azurite_takes_the_emulators_tokens_for_azure_storage(
    entra: RunningEmulator, https_azurite: tuple[RunningAzurite, Path]
) -> None:
    azurite, ca = https_azurite
    credential = secret_credential(entra, SENDER)
    with BlobServiceClient(azurite.blob_endpoint, credential, connection_verify=str(ca)) as blobs:
        blobs.create_container("checkpoints")
        assert [c.name for c in blobs.list_containers()] == ["checkpoints"]
    claims = jwt.decode(credential.get_token(STORAGE_SCOPE).token, options={"verify_signature": False})
    assert claims["aud"] == "https://storage.azure.com/"
