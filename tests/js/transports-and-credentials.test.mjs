// How applications reach the emulator as they reach Azure: AMQP over TLS and over WebSockets (the
// namespace's TLS port, named with the SDKs' customEndpointAddress), with SAS keys, SAS tokens and
// Microsoft Entra ID tokens from the emulator's tenant; and what each credential may not do.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { describe, test } from "node:test";
import { AzureNamedKeyCredential, AzureSASCredential } from "@azure/core-auth";
import { EventHubConsumerClient, EventHubProducerClient, earliestEventPosition } from "@azure/event-hubs";
import { ClientSecretCredential } from "@azure/identity";
import { ServiceBusAdministrationClient, ServiceBusClient } from "@azure/service-bus";
import WebSocket from "ws";
import { customEndpointAddress, identity, ns, retryOptions, tlsHost } from "./support/emulator.mjs";
import { receiveEvents } from "./support/eventhubs.mjs";

const rootKey = /SharedAccessKey=([^;]*)/.exec(ns.connectionString)[1];
const webSocketOptions = { webSocket: WebSocket };

/** A SAS token made as Azure documents it: HMAC-SHA256 of the URL-encoded resource and expiry. */
function sasToken(resource, keyName, key, seconds = 3_600) {
  const encoded = encodeURIComponent(resource);
  const expiry = Math.floor(Date.now() / 1000) + seconds;
  const signature = createHmac("sha256", key).update(`${encoded}\n${expiry}`).digest("base64");
  return `SharedAccessSignature sr=${encoded}&sig=${encodeURIComponent(signature)}&se=${expiry}&skn=${keyName}`;
}

/** As for any authority other than Entra's public clouds (Azure Stack, a private cloud): MSAL is told not
 * to ask login.microsoftonline.com to validate it. */
function entraCredential(clientId, secret) {
  return new ClientSecretCredential(identity.tenantId, clientId, secret, {
    authorityHost: identity.authorityHost,
    disableInstanceDiscovery: true,
  });
}

async function roundTrip(client, queue, body) {
  const sender = client.createSender(queue);
  await sender.sendMessages({ body });
  const receiver = client.createReceiver(queue, { receiveMode: "receiveAndDelete" });
  const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
  await Promise.all([sender.close(), receiver.close()]);
  return message?.body;
}

describe("transports", () => {
  for (const [transport, options] of [
    ["AMQP over TLS", {}],
    ["AMQP over WebSockets", { webSocketOptions }],
  ]) {
    test(`Service Bus and Event Hubs over ${transport}`, async () => {
      const credential = new AzureNamedKeyCredential("RootManageSharedAccessKey", rootKey);
      const clientOptions = { customEndpointAddress, retryOptions, ...options };
      const client = new ServiceBusClient(tlsHost, credential, clientOptions);
      assert.equal(await roundTrip(client, "q1", transport), transport);
      await client.close();

      const producer = new EventHubProducerClient(tlsHost, "hub1", credential, clientOptions);
      const start = await producer.getPartitionProperties("0");
      await producer.sendBatch([{ body: transport }], { partitionId: "0" });
      const consumer = new EventHubConsumerClient("$Default", tlsHost, "hub1", credential, clientOptions);
      const [event] = await receiveEvents(consumer, 1, {
        partitionId: "0",
        startPosition: { sequenceNumber: start.lastEnqueuedSequenceNumber, isInclusive: false },
      });
      assert.equal(event.body, transport);
      await Promise.all([producer.close(), consumer.close()]);
    });
  }
});

describe("credentials", () => {
  test("a SAS token for the namespace, and one that only covers another entity", async () => {
    const resource = `sb://${tlsHost}/`;
    const namespaceToken = new AzureSASCredential(sasToken(resource, "RootManageSharedAccessKey", rootKey));
    const client = new ServiceBusClient(tlsHost, namespaceToken, { customEndpointAddress, retryOptions });
    assert.equal(await roundTrip(client, "q1", "with a SAS token"), "with a SAS token");
    await client.close();

    const otherEntity = new AzureSASCredential(sasToken(`${resource}q-retry`, "RootManageSharedAccessKey", rootKey));
    const narrow = new ServiceBusClient(tlsHost, otherEntity, {
      customEndpointAddress,
      retryOptions: { maxRetries: 0, timeoutInMs: 5_000 },
    });
    await assert.rejects(narrow.createSender("q-claims").sendMessages({ body: "x" }), /does not cover/);
    await narrow.close();
  });

  test("a key with only the Send claim sends but may not receive", async () => {
    const sendOnly = /SharedAccessKey=([^;]*)/.exec(ns.connectionStrings["send-only"])[1];
    const credential = new AzureNamedKeyCredential("send-only", sendOnly);
    const client = new ServiceBusClient(tlsHost, credential, {
      customEndpointAddress,
      retryOptions: { maxRetries: 0, timeoutInMs: 5_000 },
    });
    await client.createSender("q-claims").sendMessages({ body: "sent with Send" });
    const receiver = client.createReceiver("q-claims");
    await assert.rejects(receiver.receiveMessages(1, { maxWaitTimeInMs: 2_000 }), /Listen/);
    await client.close();
  });

  test("Microsoft Entra ID: a ClientSecretCredential of the emulator's tenant, with Azure roles", async () => {
    const owner = entraCredential("44444444-4444-4444-4444-444444444444", "js-app-secret");
    const client = new ServiceBusClient(tlsHost, owner, { customEndpointAddress, retryOptions });
    assert.equal(await roundTrip(client, "q1", "signed in"), "signed in");
    await client.close();
    const admin = new ServiceBusAdministrationClient(tlsHost, owner);
    assert.equal((await admin.getQueue("q1")).name, "q1");

    const producer = new EventHubProducerClient(tlsHost, "hub1", owner, { customEndpointAddress, retryOptions });
    assert.deepEqual((await producer.getEventHubProperties()).partitionIds, ["0", "1"]);
    await producer.close();

    const reader = entraCredential("55555555-5555-5555-5555-555555555555", "js-reader-secret");
    const readOnly = new ServiceBusClient(tlsHost, reader, {
      customEndpointAddress,
      retryOptions: { maxRetries: 0, timeoutInMs: 5_000 },
    });
    await assert.rejects(readOnly.createSender("q-claims").sendMessages({ body: "x" }), /Send/);
    await readOnly.close();
  });

  test("a wrong client secret is refused by the tenant", async () => {
    const wrong = entraCredential("44444444-4444-4444-4444-444444444444", "not-the-secret");
    await assert.rejects(wrong.getToken("https://servicebus.azure.net//.default"), /AADSTS7000215/);
  });
});

describe("Event Hubs from the earliest event, with a token credential", () => {
  test("a consumer signed in with Entra ID reads what a SAS producer sent", async () => {
    const credential = new AzureNamedKeyCredential("RootManageSharedAccessKey", rootKey);
    const producer = new EventHubProducerClient(tlsHost, "hub4", credential, { customEndpointAddress, retryOptions });
    await producer.sendBatch([{ body: "to entra" }], { partitionId: "3" });
    await producer.close();
    const owner = entraCredential("44444444-4444-4444-4444-444444444444", "js-app-secret");
    const consumer = new EventHubConsumerClient("$Default", tlsHost, "hub4", owner, { customEndpointAddress, retryOptions });
    const [event] = await receiveEvents(consumer, 1, { partitionId: "3", startPosition: earliestEventPosition });
    assert.equal(event.body, "to entra");
    await consumer.close();
  });
});
