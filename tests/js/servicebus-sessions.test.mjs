// Service Bus sessions and scheduled messages with @azure/service-bus: session receivers (a named
// session and the next available one), session state, and the management operations that need a
// token for `<entity>/$management` (schedule, cancel, peek, session lock renewal).
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { ServiceBusClient } from "@azure/service-bus";
import { connectionString, retryOptions } from "./support/emulator.mjs";

describe("Service Bus sessions", () => {
  const client = new ServiceBusClient(connectionString, { retryOptions }); // connects on first use
  after(() => client.close());

  test("a session receiver gets only its session's messages, in order, and keeps state", async () => {
    const sender = client.createSender("q-sessions");
    await sender.sendMessages([
      { body: "a1", sessionId: "a" },
      { body: "b1", sessionId: "b" },
      { body: "a2", sessionId: "a" },
    ]);
    const a = await client.acceptSession("q-sessions", "a");
    assert.equal(a.sessionId, "a");
    const messages = await a.receiveMessages(5, { maxWaitTimeInMs: 1_000 });
    assert.deepEqual(messages.map((m) => m.body), ["a1", "a2"]);
    for (const message of messages) await a.completeMessage(message);
    await a.setSessionState("checkpoint-2");
    assert.equal((await a.getSessionState()).toString(), "checkpoint-2");
    const lockedUntil = a.sessionLockedUntilUtc;
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.ok((await a.renewSessionLock()) >= lockedUntil);
    await a.close();

    const next = await client.acceptNextSession("q-sessions");
    assert.equal(next.sessionId, "b");
    const [b1] = await next.receiveMessages(1, { maxWaitTimeInMs: 2_000 });
    assert.equal(b1.body, "b1");
    await next.completeMessage(b1);
    await next.close();
    await sender.close();
  });

  test("a plain receiver is refused on a session queue", async () => {
    const receiver = client.createReceiver("q-sessions");
    await assert.rejects(receiver.receiveMessages(1, { maxWaitTimeInMs: 1_000 }), /session/i);
    await receiver.close();
  });
});

describe("Service Bus scheduled messages", () => {
  const client = new ServiceBusClient(connectionString, { retryOptions }); // connects on first use
  after(() => client.close());

  test("a scheduled message is peekable at once, cancellable, and delivered at its time", async () => {
    const sender = client.createSender("q1");
    const [kept] = await sender.scheduleMessages({ body: "soon" }, new Date(Date.now() + 3_000));
    const [cancelled] = await sender.scheduleMessages({ body: "never" }, new Date(Date.now() + 60_000));
    const receiver = client.createReceiver("q1");
    const peeked = await receiver.peekMessages(10);
    assert.deepEqual(peeked.map((m) => [m.body, m.state]), [["soon", "scheduled"], ["never", "scheduled"]]);
    await sender.cancelScheduledMessages(cancelled);
    // A receiver's peeks go on from the last one peeked: start again from the first.
    const left = await receiver.peekMessages(10, { fromSequenceNumber: kept });
    assert.deepEqual(left.map((m) => m.body), ["soon"]);
    const [early] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 300 });
    assert.equal(early, undefined, "not delivered before its time");
    const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.equal(message.body, "soon");
    assert.equal(message.sequenceNumber.toString(), kept.toString());
    await receiver.completeMessage(message);
    await Promise.all([receiver.close(), sender.close()]);
  });
});
