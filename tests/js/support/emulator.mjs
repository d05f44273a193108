// What every JS test needs: the emulator and Azurite that tests/js/test_js_sdks.py started, read from
// the emulator's ready file as an application would, and small waiting helpers.
import { readFileSync } from "node:fs";

function required(name) {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set: run these tests through tests/js/test_js_sdks.py (pytest)`);
  }
  return value;
}

export const ready = JSON.parse(readFileSync(required("FEDERATOR_EMULATOR_READY"), "utf8"));
export const ns = ready.namespaces.ns1;
/** `Endpoint=sb://localhost:PORT;…;UseDevelopmentEmulator=true`: plain AMQP, as the emulator gives it. */
export const connectionString = ns.connectionString;
/** The same namespace over TLS: `localhost:PORT` and the `customEndpointAddress` the SDKs dial. */
export const tlsHost = ns.fullyQualifiedNamespace;
export const customEndpointAddress = ns.customEndpointAddress;
/** The namespace over plain AMQP, for credentials other than a connection string. */
export const plainHost = `${ns.amqpHost}:${ns.amqpPort}`;
export const identity = ready.identity;
export const azuriteConnectionString = () => required("AZURITE_CONNECTION_STRING");

/** Fail fast instead of waiting for the SDKs' one-minute operation timeout. */
export const retryOptions = { maxRetries: 1, timeoutInMs: 10_000, retryDelayInMs: 200 };

/** A connection string for another SAS key of the namespace. */
export function connectionStringFor(keyName) {
  const value = ns.connectionStrings[keyName];
  if (!value) throw new Error(`no SAS key ${keyName} in the emulator's ready file`);
  return value;
}

/** Resolves with `promise`, or rejects after `ms` saying what did not happen. */
export async function within(ms, what, promise) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `condition` until it returns true, or fails naming `what`. */
export async function until(what, condition, ms = 15_000) {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A name unique to this run, for entities a test creates. */
export function unique(prefix) {
  return `${prefix}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
}
