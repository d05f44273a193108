// Receiving with @azure/event-hubs the way applications do: subscribe, then close the subscription.
import { within } from "./emulator.mjs";

/**
 * The first `count` events of one partition (or of all, with `partitionId` undefined) from
 * `startPosition`; `onReady` runs once the partition's receiver is initialised.
 */
export async function receiveEvents(consumer, count, { partitionId, startPosition, ms = 15_000 } = {}) {
  const events = [];
  let subscription;
  const done = new Promise((resolve, reject) => {
    const handlers = {
      processEvents: async (received) => {
        events.push(...received);
        if (events.length >= count) resolve();
      },
      processError: async (error) => reject(error),
    };
    const options = { startPosition, maxWaitTimeInSeconds: 1, maxBatchSize: 100 };
    subscription =
      partitionId === undefined
        ? consumer.subscribe(handlers, options)
        : consumer.subscribe(partitionId, handlers, options);
  });
  try {
    await within(ms, `receiving ${count} events`, done);
  } finally {
    await subscription.close();
  }
  return events;
}
