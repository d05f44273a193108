// ServiceBusAdministrationClient (ATOM over HTTPS): create, read, update, list and delete queues,
// topics, subscriptions and rules; runtime properties; namespace properties; errors.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ServiceBusClient } from "@azure/service-bus";
import { adminClient, all } from "./support/admin.mjs";
import { connectionString, retryOptions, unique } from "./support/emulator.mjs";

describe("Service Bus administration", () => {
  const admin = adminClient();

  test("a queue is created, read, updated, listed and deleted with every property Azure returns", async () => {
    const name = unique("Admin-Q");
    const created = await admin.createQueue(name, { maxDeliveryCount: 4, lockDuration: "PT20S" });
    assert.equal(created.name, name, "the name read back from the entry id keeps its case");
    assert.equal(created.maxDeliveryCount, 4);
    assert.equal(created.lockDuration, "PT20S");
    assert.equal(created.maxSizeInMegabytes, 1024);
    assert.equal(created.enablePartitioning, false);
    assert.equal(created.enableBatchedOperations, true);
    assert.equal(created.enableExpress, false);
    assert.equal(created.status, "Active");
    await assert.rejects(admin.createQueue(name), { code: "MessageEntityAlreadyExistsError" });

    const queue = await admin.getQueue(name);
    queue.maxDeliveryCount = 7;
    await admin.updateQueue(queue);
    assert.equal((await admin.getQueue(name)).maxDeliveryCount, 7);
    assert.ok((await all(admin.listQueues())).some((q) => q.name === name));
    assert.equal(await admin.queueExists(name), true);
    await admin.deleteQueue(name);
    assert.equal(await admin.queueExists(name), false);
    await assert.rejects(admin.getQueue(name), { code: "MessageEntityNotFoundError" });
  });

  test("topics, subscriptions and rules are managed through their Subscriptions and Rules paths", async () => {
    const topic = unique("admin-t");
    const created = await admin.createTopic(topic, { defaultMessageTimeToLive: "PT1H" });
    assert.equal(created.name, topic);
    assert.equal(created.supportOrdering, true);
    assert.equal(created.defaultMessageTimeToLive, "PT1H");
    const subscription = await admin.createSubscription(topic, "Audit", { maxDeliveryCount: 3 });
    assert.equal(subscription.topicName, topic);
    assert.equal(subscription.subscriptionName, "Audit");
    assert.equal(subscription.maxDeliveryCount, 3);
    assert.equal(subscription.deadLetteringOnFilterEvaluationExceptions, true);
    assert.deepEqual((await all(admin.listSubscriptions(topic))).map((s) => s.subscriptionName), ["Audit"]);
    assert.equal(await admin.subscriptionExists(topic, "Audit"), true);

    const rule = await admin.createRule(
      topic,
      "Audit",
      "big",
      { sqlExpression: "amount > @limit", sqlParameters: { "@limit": 100 } },
      { sqlExpression: "SET audited = 'yes'" },
    );
    assert.equal(rule.name, "big");
    assert.equal(rule.filter.sqlExpression, "amount > @limit");
    assert.equal(rule.action.sqlExpression, "SET audited = 'yes'");
    const names = (await all(admin.listRules(topic, "Audit"))).map((r) => r.name);
    assert.deepEqual(names.sort(), ["$Default", "big"]);
    await admin.deleteRule(topic, "Audit", "$Default");
    assert.deepEqual((await all(admin.listRules(topic, "Audit"))).map((r) => r.name), ["big"]);
    assert.equal(await admin.ruleExists(topic, "Audit", "$Default"), false);

    await admin.deleteSubscription(topic, "Audit");
    assert.equal(await admin.subscriptionExists(topic, "Audit"), false);
    await admin.deleteTopic(topic);
    assert.equal(await admin.topicExists(topic), false);
  });

  test("runtime properties count active, scheduled and dead-lettered messages", async () => {
    const name = unique("runtime-q");
    await admin.createQueue(name);
    const client = new ServiceBusClient(connectionString, { retryOptions });
    const sender = client.createSender(name);
    await sender.sendMessages([{ body: "one" }, { body: "two" }, { body: "three" }]);
    await sender.scheduleMessages({ body: "later" }, new Date(Date.now() + 60_000));
    const receiver = client.createReceiver(name);
    const [first] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    await receiver.deadLetterMessage(first, { deadLetterReason: "test" });
    const runtime = await admin.getQueueRuntimeProperties(name);
    assert.equal(runtime.activeMessageCount, 2);
    assert.equal(runtime.scheduledMessageCount, 1);
    assert.equal(runtime.deadLetterMessageCount, 1);
    assert.equal(runtime.totalMessageCount, 4);
    const listed = (await all(admin.listQueuesRuntimeProperties())).find((q) => q.name === name);
    assert.equal(listed.activeMessageCount, 2);
    const topic = await admin.getTopicRuntimeProperties("orders");
    assert.equal(topic.subscriptionCount, 3);
    const subscription = await admin.getSubscriptionRuntimeProperties("orders", "all");
    assert.equal(subscription.subscriptionName, "all");
    await client.close();
    await admin.deleteQueue(name);
  });

  test("namespace properties describe a Standard messaging namespace", async () => {
    const properties = await admin.getNamespaceProperties();
    assert.equal(properties.name, "ns1");
    assert.equal(properties.messagingSku, "Standard");
    assert.ok(properties.createdAt instanceof Date);
  });

  test("a path the service does not serve is a not-found error the SDK can read", async () => {
    // Queue names may hold '/': this one names no route, and the 404 still comes as an ATOM error.
    await assert.rejects(admin.getQueue("no/such/queue"), { code: "MessageEntityNotFoundError" });
  });

  test("a key without the Manage claim is refused", async () => {
    await assert.rejects(adminClient("send-only").getQueue("q1"), { code: "UnauthorizedRequestError" });
  });
});
