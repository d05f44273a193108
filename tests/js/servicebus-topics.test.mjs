// Topics with @azure/service-bus: fan-out to subscriptions, SQL filters with actions, correlation
// filters, and rules added through the administration client taking effect on the next message.
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { ServiceBusClient } from "@azure/service-bus";
import { adminClient } from "./support/admin.mjs";
import { connectionString, retryOptions, unique } from "./support/emulator.mjs";

describe("Service Bus topics", () => {
  const client = new ServiceBusClient(connectionString, { retryOptions }); // connects on first use
  after(() => client.close());

  /** Receives (and deletes) exactly `count` messages, then checks that nothing more is waiting. */
  async function drain(topic, subscription, count) {
    const receiver = client.createReceiver(topic, subscription, { receiveMode: "receiveAndDelete" });
    const messages = [];
    while (messages.length < count) {
      const batch = await receiver.receiveMessages(count - messages.length, { maxWaitTimeInMs: 5_000 });
      assert.ok(batch.length > 0, `${subscription}: received ${messages.length} of ${count}`);
      messages.push(...batch);
    }
    const extra = await receiver.receiveMessages(1, { maxWaitTimeInMs: 300 });
    assert.deepEqual(extra.map((m) => m.body), [], `${subscription}: no more than ${count}`);
    await receiver.close();
    return messages;
  }

  /** A new topic whose one subscription's rules a rule manager controls, starting without `$Default`. */
  async function topicWithRuleManager(prefix, subscription) {
    const admin = adminClient();
    const topic = unique(prefix);
    await admin.createTopic(topic);
    await admin.createSubscription(topic, subscription);
    const rules = client.createRuleManager(topic, subscription);
    await rules.deleteRule("$Default");
    return { admin, topic, rules };
  }

  test("each subscription gets what its filter selects, as its action rewrote it", async () => {
    const sender = client.createSender("orders");
    await sender.sendMessages([
      { body: "eu order", subject: "created", applicationProperties: { region: "eu" } },
      { body: "us order", subject: "created", applicationProperties: { region: "us" } },
      { body: "us update", subject: "updated", applicationProperties: { region: "us" } },
    ]);
    await sender.close();

    const everything = await drain("orders", "all", 3);
    assert.deepEqual(everything.map((m) => m.body), ["eu order", "us order", "us update"]);
    const eu = await drain("orders", "eu", 1); // SQL filter region = 'eu', action SET routed = 'eu'
    assert.deepEqual(eu.map((m) => m.body), ["eu order"]);
    assert.equal(eu[0].applicationProperties.routed, "eu");
    const created = await drain("orders", "created", 1); // correlation: subject created, region us
    assert.deepEqual(created.map((m) => m.body), ["us order"]);
    assert.equal(created[0].applicationProperties.routed, undefined, "another rule's action does not apply");
  });

  test("rules created through the administration client filter the next messages", async () => {
    const admin = adminClient();
    const topic = unique("rules-t");
    await admin.createTopic(topic);
    await admin.createSubscription(topic, "vip", {
      defaultRuleOptions: {
        name: "gold",
        filter: { sqlExpression: "tier = @tier AND amount >= 100", sqlParameters: { "@tier": "gold" } },
        action: { sqlExpression: "SET priority = 'high'; SET sys.Label = 'vip'" },
      },
    });
    await admin.createSubscription(topic, "payments");
    await admin.deleteRule(topic, "payments", "$Default");
    await admin.createRule(topic, "payments", "by-correlation", {
      correlationId: "payment",
      applicationProperties: { currency: "EUR" },
    });

    const sender = client.createSender(topic);
    await sender.sendMessages([
      { body: "gold big", applicationProperties: { tier: "gold", amount: 150 } },
      { body: "gold small", applicationProperties: { tier: "gold", amount: 10 } },
      { body: "eur payment", correlationId: "payment", applicationProperties: { currency: "EUR" } },
      { body: "usd payment", correlationId: "payment", applicationProperties: { currency: "USD" } },
    ]);
    await sender.close();

    const vip = await drain(topic, "vip", 1);
    assert.deepEqual(vip.map((m) => m.body), ["gold big"]);
    assert.equal(vip[0].applicationProperties.priority, "high");
    assert.equal(vip[0].subject, "vip", "a SQL action sets system properties too");
    const payments = await drain(topic, "payments", 1);
    assert.deepEqual(payments.map((m) => m.body), ["eur payment"]);
    await admin.deleteTopic(topic);
  });

  test("a rule manager adds, lists and removes a subscription's rules over AMQP", async () => {
    const { admin, topic, rules } = await topicWithRuleManager("rule-manager-t", "audit");
    await rules.createRule("large", { sqlExpression: "amount > 100" }, { sqlExpression: "SET flagged = 'yes'" });
    await rules.createRule("refunds", { subject: "refund", applicationProperties: { channel: "web" } });
    await assert.rejects(rules.createRule("large", { sqlExpression: "1=1" }), /already exists/);
    const listed = [];
    for await (const rule of rules.listRules()) listed.push(rule);
    assert.deepEqual(
      listed.map((r) => r.name),
      ["large", "refunds"],
    );
    assert.deepEqual(listed[0].filter, { sqlExpression: "amount > 100" });
    assert.deepEqual(listed[0].action, { sqlExpression: "SET flagged = 'yes'" });
    assert.equal(listed[1].filter.subject, "refund");
    assert.deepEqual(listed[1].filter.applicationProperties, { channel: "web" });
    assert.deepEqual(listed[1].action, {});

    const sender = client.createSender(topic);
    await sender.sendMessages([
      { body: "big", applicationProperties: { amount: 500 } },
      { body: "small", applicationProperties: { amount: 5 } },
      { body: "refund", subject: "refund", applicationProperties: { channel: "web" } },
    ]);
    await sender.close();
    const received = await drain(topic, "audit", 2);
    assert.deepEqual(received.map((m) => m.body), ["big", "refund"]);
    assert.equal(received[0].applicationProperties.flagged, "yes");

    await rules.deleteRule("refunds");
    const names = [];
    for await (const rule of rules.listRules()) names.push(rule.name);
    assert.deepEqual(names, ["large"]);
    await admin.deleteTopic(topic);
  });

  test("a correlation rule's typed properties match messages of the same values and list back typed", async () => {
    // As the SDK's ruleManager sample writes one: a string, a number, a boolean and a Date.
    const { admin, topic, rules } = await topicWithRuleManager("typed-rule-t", "typed");
    const properties = { key1: "value1", key2: 2, key3: true, key4: new Date("2000-01-01T00:00:00Z") };
    await rules.createRule("typed", { applicationProperties: properties });
    const listed = [];
    for await (const rule of rules.listRules()) listed.push(rule);
    assert.deepEqual(listed[0].filter.applicationProperties, properties);

    const sender = client.createSender(topic);
    await sender.sendMessages([
      { body: "same values", applicationProperties: { ...properties } },
      { body: "another day", applicationProperties: { ...properties, key4: new Date("2000-01-02T00:00:00Z") } },
    ]);
    await sender.close();
    const received = await drain(topic, "typed", 1);
    assert.deepEqual(received.map((m) => m.body), ["same values"]);
    await admin.deleteTopic(topic);
  });
});
