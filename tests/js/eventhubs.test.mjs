// Event Hubs with @azure/event-hubs: sending to a partition, by partition key and round-robin,
// receiving from each start position, hub and partition properties, and a clean close.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  EventHubConsumerClient,
  EventHubProducerClient,
  earliestEventPosition,
  latestEventPosition,
} from "@azure/event-hubs";
import { connectionString, retryOptions, within } from "./support/emulator.mjs";
import { receiveEvents } from "./support/eventhubs.mjs";

describe("Event Hubs", () => {
  let producer;
  let consumer;
  before(() => {
    producer = new EventHubProducerClient(connectionString, "hub1", { retryOptions });
    consumer = new EventHubConsumerClient("$Default", connectionString, "hub1", { retryOptions });
  });
  after(async () => {
    await Promise.all([producer.close(), consumer.close()]);
  });

  test("hub and partition properties are read over the management link", async () => {
    const hub = await producer.getEventHubProperties();
    assert.equal(hub.name, "hub1");
    assert.deepEqual(hub.partitionIds, ["0", "1"]);
    assert.deepEqual(await consumer.getPartitionIds(), ["0", "1"]);
    const before = await producer.getPartitionProperties("1");
    await producer.sendBatch([{ body: "counted" }], { partitionId: "1" });
    const after = await producer.getPartitionProperties("1");
    assert.equal(after.partitionId, "1");
    assert.equal(after.isEmpty, false);
    assert.equal(after.lastEnqueuedSequenceNumber, before.lastEnqueuedSequenceNumber + 1);
  });

  test("events sent to a partition are received from it with their properties", async () => {
    const start = await producer.getPartitionProperties("0");
    const batch = await producer.createBatch({ partitionId: "0" });
    batch.tryAdd({ body: { n: 1 }, properties: { kind: "order" }, contentType: "application/json" });
    batch.tryAdd({ body: "second", correlationId: "c-2", messageId: "m-2" });
    await producer.sendBatch(batch);
    const events = await receiveEvents(consumer, 2, {
      partitionId: "0",
      startPosition: { sequenceNumber: start.lastEnqueuedSequenceNumber, isInclusive: false },
    });
    assert.deepEqual(events[0].body, { n: 1 });
    assert.deepEqual(events[0].properties, { kind: "order" });
    assert.equal(events[0].contentType, "application/json");
    assert.equal(events[1].body, "second");
    assert.equal(events[1].correlationId, "c-2");
    assert.equal(events[1].messageId, "m-2");
    assert.equal(events[1].sequenceNumber, events[0].sequenceNumber + 1);
    assert.ok(events[0].enqueuedTimeUtc instanceof Date);
  });

  test("events with one partition key land in one partition, in order", async () => {
    for (const body of ["k1", "k2", "k3"]) {
      await producer.sendBatch([{ body }], { partitionKey: "customer-42" }); // each send hashed anew
    }
    const keyed = [];
    for (const partitionId of ["0", "1"]) {
      const properties = await consumer.getPartitionProperties(partitionId);
      if (properties.isEmpty) continue;
      const events = await receiveEvents(consumer, properties.lastEnqueuedSequenceNumber + 1, {
        partitionId,
        startPosition: earliestEventPosition,
      });
      const mine = events.filter((e) => e.partitionKey === "customer-42");
      if (mine.length > 0) keyed.push({ partitionId, bodies: mine.map((e) => e.body) });
    }
    assert.equal(keyed.length, 1, `one partition holds the key: ${JSON.stringify(keyed)}`);
    assert.deepEqual(keyed[0].bodies, ["k1", "k2", "k3"]);
  });

  test("closing the clients answers promptly (the broker answers AMQP close)", async () => {
    const other = new EventHubProducerClient(connectionString, "hub1", { retryOptions });
    await other.sendBatch([{ body: "before close" }]);
    await within(5_000, "EventHubProducerClient.close()", other.close());
  });
});

describe("Event Hubs start positions", () => {
  let producer;
  let consumer;
  let first; // sequence number of the first of five events sent to partition 1
  let times;
  before(async () => {
    producer = new EventHubProducerClient(connectionString, "hub1", { retryOptions });
    consumer = new EventHubConsumerClient("cg1", connectionString, "hub1", { retryOptions });
    const start = await producer.getPartitionProperties("1");
    first = start.lastEnqueuedSequenceNumber + 1;
    for (let i = 0; i < 5; i++) {
      await producer.sendBatch([{ body: `p${i}` }], { partitionId: "1" });
      await new Promise((resolve) => setTimeout(resolve, 15)); // distinct enqueued times
    }
    const events = await receiveEvents(consumer, first + 5, {
      partitionId: "1",
      startPosition: earliestEventPosition,
    });
    times = events.filter((e) => e.sequenceNumber >= first);
  });
  after(async () => {
    await Promise.all([producer.close(), consumer.close()]);
  });

  const bodiesFrom = async (startPosition, count) =>
    (await receiveEvents(consumer, count, { partitionId: "1", startPosition })).map((e) => e.body);

  test("earliest reads the partition from its beginning", async () => {
    assert.deepEqual(times.map((e) => e.body), ["p0", "p1", "p2", "p3", "p4"]);
  });

  test("a sequence number, inclusive or not", async () => {
    assert.deepEqual(await bodiesFrom({ sequenceNumber: first + 3, isInclusive: true }, 2), ["p3", "p4"]);
    assert.deepEqual(await bodiesFrom({ sequenceNumber: first + 3 }, 1), ["p4"]);
  });

  test("an offset, inclusive or not", async () => {
    const offset = times[2].offset;
    assert.deepEqual(await bodiesFrom({ offset, isInclusive: true }, 3), ["p2", "p3", "p4"]);
    assert.deepEqual(await bodiesFrom({ offset }, 2), ["p3", "p4"]);
  });

  test("an enqueued time", async () => {
    assert.deepEqual(await bodiesFrom({ enqueuedOn: times[3].enqueuedTimeUtc }, 1), ["p4"]);
  });

  test("latest reads only what is sent after the receiver opened", async () => {
    let receiving = true;
    const later = receiveEvents(consumer, 1, { partitionId: "1", startPosition: latestEventPosition });
    later.finally(() => (receiving = false)).catch(() => {});
    // Sends go on until the receiver, attached at some point, reads one: none of p0…p4 may come.
    for (let i = 0; receiving && i < 50; i++) {
      await producer.sendBatch([{ body: `new-${i}` }], { partitionId: "1" });
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const [event] = await later;
    assert.match(event.body, /^new-\d+$/);
  });
});
