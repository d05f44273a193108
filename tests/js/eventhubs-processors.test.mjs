// Event processors with @azure/event-hubs and @azure/eventhubs-checkpointstore-blob on Azurite:
// checkpoints that a new processor resumes from, and two processors sharing a hub's partitions.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { EventHubConsumerClient, EventHubProducerClient, earliestEventPosition } from "@azure/event-hubs";
import { BlobCheckpointStore } from "@azure/eventhubs-checkpointstore-blob";
import { ContainerClient } from "@azure/storage-blob";
import { azuriteConnectionString, connectionString, retryOptions, unique, until } from "./support/emulator.mjs";

// Quick rounds, so that balancing settles within seconds instead of Azure's default minute.
const loadBalancingOptions = {
  strategy: "balanced",
  updateIntervalInMs: 250,
  partitionOwnershipExpirationIntervalInMs: 3_000,
};

describe("Event Hubs processors with Blob checkpoints", () => {
  let container;
  let store;
  let producer;
  before(async () => {
    container = new ContainerClient(azuriteConnectionString(), unique("checkpoints"));
    await container.create();
    store = new BlobCheckpointStore(container);
  });
  after(async () => {
    await container.delete();
  });

  /** A processor that records what it receives, by partition, and checkpoints every batch. */
  function startProcessor(hub, name, { checkpoint = true } = {}) {
    const client = new EventHubConsumerClient("$Default", connectionString, hub, store, {
      retryOptions,
      loadBalancingOptions,
    });
    const received = [];
    const owned = new Set();
    const subscription = client.subscribe(
      {
        processInitialize: async (context) => {
          owned.add(context.partitionId);
        },
        processClose: async (_reason, context) => {
          owned.delete(context.partitionId);
        },
        processEvents: async (events, context) => {
          for (const event of events) received.push({ partitionId: context.partitionId, body: event.body });
          if (checkpoint && events.length > 0) await context.updateCheckpoint(events[events.length - 1]);
        },
        processError: async () => {}, // a partition taken over ends its receiver with an error: expected
      },
      { startPosition: earliestEventPosition, maxWaitTimeInSeconds: 0.5 },
    );
    return {
      name,
      received,
      owned,
      close: async () => {
        await subscription.close();
        await client.close();
      },
    };
  }

  test("a processor resumes after the last checkpoint another one stored", async () => {
    producer = new EventHubProducerClient(connectionString, "hub1", { retryOptions });
    await producer.sendBatch([{ body: "a0" }, { body: "a1" }], { partitionId: "0" });
    const first = startProcessor("hub1", "first");
    await until("the first processor received a0 and a1", () => first.received.length >= 2);
    await first.close();
    const checkpoints = await store.listCheckpoints(producer.fullyQualifiedNamespace, "hub1", "$Default");
    assert.deepEqual(
      checkpoints.map((c) => [c.partitionId, c.sequenceNumber]),
      [["0", 1]],
    );

    await producer.sendBatch([{ body: "a2" }], { partitionId: "0" });
    const second = startProcessor("hub1", "second");
    await until("the second processor received a2", () => second.received.length >= 1);
    await new Promise((resolve) => setTimeout(resolve, 500)); // nothing older follows
    await second.close();
    await producer.close();
    assert.deepEqual(second.received, [{ partitionId: "0", body: "a2" }]);
  });

  test("two processors split a hub's partitions, and each event reaches exactly one of them", async () => {
    producer = new EventHubProducerClient(connectionString, "hub4", { retryOptions });
    const a = startProcessor("hub4", "a", { checkpoint: false });
    await until("processor a owns all four partitions", () => a.owned.size === 4);
    const b = startProcessor("hub4", "b", { checkpoint: false });
    // b takes two partitions over with the owner level a opened them with: Event Hubs then
    // disconnects a's receivers, which the JS load balancer relies on.
    await until("the partitions are split two and two", () => a.owned.size === 2 && b.owned.size === 2, 20_000);
    const ownership = await store.listOwnership(producer.fullyQualifiedNamespace, "hub4", "$Default");
    assert.equal(ownership.length, 4);

    a.received.length = 0;
    b.received.length = 0;
    const sent = [];
    for (const partitionId of ["0", "1", "2", "3"]) {
      const bodies = [0, 1, 2].map((i) => `p${partitionId}-${i}`);
      await producer.sendBatch(bodies.map((body) => ({ body })), { partitionId });
      sent.push(...bodies);
    }
    await until("all twelve events arrived", () => a.received.length + b.received.length >= 12);
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // a duplicate would arrive by now
    const got = [...a.received, ...b.received].map((e) => e.body).sort();
    assert.deepEqual(got, sent.sort(), "every event once, none twice");
    for (const processor of [a, b]) {
      const partitions = new Set(processor.received.map((e) => e.partitionId));
      assert.deepEqual([...partitions].sort(), [...processor.owned].sort(), `${processor.name} read what it owns`);
    }
    await Promise.all([a.close(), b.close(), producer.close()]);
  });
});
