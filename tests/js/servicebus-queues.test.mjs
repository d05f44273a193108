// Service Bus queues with @azure/service-bus: CBS authentication, sending and receiving, message
// properties, peek-lock and receive-and-delete, automatic lock renewal, and a clean close.
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { ServiceBusClient } from "@azure/service-bus";
import { connectionString, retryOptions, within } from "./support/emulator.mjs";

describe("Service Bus queues", () => {
  const client = new ServiceBusClient(connectionString, { retryOptions }); // connects on first use
  after(() => client.close());

  test("a message sent to a queue is received with its properties (CBS replies reach the JS client)", async () => {
    // The JS SDKs' $cbs reply link has no target address: the reply-to names the link.
    const sender = client.createSender("q1");
    await sender.sendMessages({
      body: { order: 1 },
      messageId: "m-1",
      subject: "created",
      correlationId: "c-1",
      contentType: "application/json",
      applicationProperties: { region: "eu", amount: 12.5 },
      timeToLive: 60_000,
    });
    const receiver = client.createReceiver("q1");
    const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    assert.deepEqual(message.body, { order: 1 });
    assert.equal(message.messageId, "m-1");
    assert.equal(message.subject, "created");
    assert.equal(message.correlationId, "c-1");
    assert.deepEqual(message.applicationProperties, { region: "eu", amount: 12.5 });
    assert.equal(message.deliveryCount, 0);
    assert.ok(message.sequenceNumber !== undefined);
    assert.ok(message.enqueuedTimeUtc instanceof Date);
    await receiver.completeMessage(message);
    await receiver.close();
    await sender.close();
  });

  test("a message sent without an id gets one from the broker, and lock renewal settles it", async () => {
    const sender = client.createSender("q1");
    await sender.sendMessages({ body: "no id" });
    // Automatic lock renewal (on by default) keys its timers by message id.
    const receiver = client.createReceiver("q1", { maxAutoLockRenewalDurationInMs: 30_000 });
    const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    assert.match(message.messageId, /^[0-9a-f]{32}$/);
    await receiver.completeMessage(message);
    const [again] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 500 });
    assert.equal(again, undefined, "a completed message is gone");
    await receiver.close();
    await sender.close();
  });

  test("a batch is received whole, in order", async () => {
    const sender = client.createSender("q1");
    const batch = await sender.createMessageBatch();
    for (let i = 0; i < 5; i++) assert.ok(batch.tryAddMessage({ body: `b${i}` }));
    await sender.sendMessages(batch);
    const receiver = client.createReceiver("q1", { receiveMode: "receiveAndDelete" });
    const bodies = [];
    while (bodies.length < 5) {
      const messages = await receiver.receiveMessages(5 - bodies.length, { maxWaitTimeInMs: 2_000 });
      assert.ok(messages.length > 0, `received ${bodies.length} of 5`);
      bodies.push(...messages.map((m) => m.body));
    }
    assert.deepEqual(bodies, ["b0", "b1", "b2", "b3", "b4"]);
    await receiver.close();
    await sender.close();
  });

  test("a lock renewed by hand outlives the queue's lock duration", async () => {
    const sender = client.createSender("q-short-lock");
    await sender.sendMessages({ body: "slow work" });
    const receiver = client.createReceiver("q-short-lock", { maxAutoLockRenewalDurationInMs: 0 });
    const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    const first = message.lockedUntilUtc;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const renewed = await receiver.renewMessageLock(message);
    assert.ok(renewed > first, "the lock moved forward");
    await new Promise((resolve) => setTimeout(resolve, 1_200)); // past the first lock's end
    await receiver.completeMessage(message);
    await receiver.close();
    await sender.close();
  });

  test("closing a client answers promptly (the broker answers AMQP close)", async () => {
    const other = new ServiceBusClient(connectionString, { retryOptions });
    const sender = other.createSender("q1");
    await sender.sendMessages({ body: "before close" });
    await within(5_000, "ServiceBusClient.close()", other.close());
    const receiver = client.createReceiver("q1", { receiveMode: "receiveAndDelete" });
    const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    assert.equal(message.body, "before close");
    await receiver.close();
  });
});
