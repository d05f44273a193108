// Settling Service Bus messages with @azure/service-bus: abandon, dead-letter, defer, and the
// dead-letter queue that a queue's maxDeliveryCount leads to.
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { ServiceBusClient } from "@azure/service-bus";
import { connectionString, retryOptions } from "./support/emulator.mjs";

async function receiveOne(receiver, what) {
  const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
  assert.ok(message, `no ${what} received`);
  return message;
}

describe("Service Bus settlement", () => {
  const client = new ServiceBusClient(connectionString, { retryOptions }); // connects on first use
  after(() => client.close());

  test("abandon counts a delivery, and maxDeliveryCount dead-letters the message", async () => {
    const sender = client.createSender("q-retry"); // maxDeliveryCount: 2
    await sender.sendMessages({ body: "poison", messageId: "poison-1" });
    const receiver = client.createReceiver("q-retry");
    const first = await receiveOne(receiver, "first delivery");
    assert.equal(first.deliveryCount, 0);
    await receiver.abandonMessage(first);
    const second = await receiveOne(receiver, "second delivery");
    assert.equal(second.deliveryCount, 1, "abandon increments the delivery count");
    await receiver.abandonMessage(second);
    const [third] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 500 });
    assert.equal(third, undefined, "the message left the queue after two deliveries");

    const dlq = client.createReceiver("q-retry", { subQueueType: "deadLetter" });
    const dead = await receiveOne(dlq, "dead-lettered message");
    assert.equal(dead.messageId, "poison-1");
    assert.equal(dead.deadLetterReason, "MaxDeliveryCountExceeded");
    await dlq.completeMessage(dead);
    await Promise.all([dlq.close(), receiver.close(), sender.close()]);
  });

  test("abandon with properties to modify redelivers the message with them set", async () => {
    const sender = client.createSender("q1");
    await sender.sendMessages({ body: "retry me" });
    const receiver = client.createReceiver("q1");
    const first = await receiveOne(receiver, "message");
    await receiver.abandonMessage(first, { attempt: "one" });
    const again = await receiveOne(receiver, "redelivered message");
    assert.equal(again.body, "retry me");
    assert.equal(again.deliveryCount, 1);
    assert.deepEqual(again.applicationProperties, { attempt: "one" });
    await receiver.completeMessage(again);
    await Promise.all([receiver.close(), sender.close()]);
  });

  test("deadLetterMessage moves it with the reason and description given", async () => {
    const sender = client.createSender("q1");
    await sender.sendMessages({ body: "bad input", messageId: "dl-1" });
    const receiver = client.createReceiver("q1");
    const message = await receiveOne(receiver, "message");
    await receiver.deadLetterMessage(message, {
      deadLetterReason: "ValidationFailed",
      deadLetterErrorDescription: "amount is negative",
      checkedBy: "validator",
    });
    const dlq = client.createReceiver("q1", { subQueueType: "deadLetter" });
    const dead = await receiveOne(dlq, "dead-lettered message");
    assert.equal(dead.messageId, "dl-1");
    assert.equal(dead.deadLetterReason, "ValidationFailed");
    assert.equal(dead.deadLetterErrorDescription, "amount is negative");
    assert.equal(dead.applicationProperties.checkedBy, "validator");
    await dlq.completeMessage(dead);
    await Promise.all([dlq.close(), receiver.close(), sender.close()]);
  });

  test("a deferred message is received only by its sequence number", async () => {
    const sender = client.createSender("q1");
    await sender.sendMessages({ body: "later, please" });
    const receiver = client.createReceiver("q1");
    const message = await receiveOne(receiver, "message");
    await receiver.deferMessage(message, { deferredBy: "test" });
    const [none] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 500 });
    assert.equal(none, undefined, "a deferred message is not delivered again");
    const [deferred] = await receiver.receiveDeferredMessages(message.sequenceNumber);
    assert.equal(deferred.body, "later, please");
    assert.equal(deferred.state, "deferred");
    assert.equal(deferred.applicationProperties.deferredBy, "test");
    // Settled over the management link (it was not received on this link), properties and all.
    await receiver.deadLetterMessage(deferred, { deadLetterReason: "GaveUp", attempts: 2 });
    const dlq = client.createReceiver("q1", { subQueueType: "deadLetter", receiveMode: "receiveAndDelete" });
    const dead = await receiveOne(dlq, "dead-lettered deferred message");
    assert.equal(dead.deadLetterReason, "GaveUp");
    assert.deepEqual([dead.applicationProperties.deferredBy, dead.applicationProperties.attempts], ["test", 2]);
    const peeked = await receiver.peekMessages(10);
    assert.equal(peeked.length, 0);
    await Promise.all([dlq.close(), receiver.close(), sender.close()]);
  });

  test("messages are peeked without being locked, from a sequence number on", async () => {
    const sender = client.createSender("q1");
    await sender.sendMessages([{ body: "p0" }, { body: "p1" }, { body: "p2" }]);
    const receiver = client.createReceiver("q1");
    const all = await receiver.peekMessages(10);
    assert.deepEqual(all.map((m) => m.body), ["p0", "p1", "p2"]);
    const fromSecond = await receiver.peekMessages(10, { fromSequenceNumber: all[1].sequenceNumber });
    assert.deepEqual(fromSecond.map((m) => m.body), ["p1", "p2"]);
    const drained = client.createReceiver("q1", { receiveMode: "receiveAndDelete" });
    assert.equal((await drained.receiveMessages(3, { maxWaitTimeInMs: 2_000 })).length, 3);
    await Promise.all([drained.close(), receiver.close(), sender.close()]);
  });
});
