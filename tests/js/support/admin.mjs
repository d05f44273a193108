// The Service Bus administration client as an application builds it against the emulator: the
// namespace's TLS port (ATOM over HTTPS; Node trusts the emulator's CA via NODE_EXTRA_CA_CERTS).
import { ServiceBusAdministrationClient } from "@azure/service-bus";
import { ns, tlsHost } from "./emulator.mjs";

export function adminClient(keyName = "RootManageSharedAccessKey") {
  const key = /SharedAccessKey=([^;]*)/.exec(ns.connectionStrings[keyName])[1];
  return new ServiceBusAdministrationClient(
    `Endpoint=sb://${tlsHost}/;SharedAccessKeyName=${keyName};SharedAccessKey=${key}`,
  );
}

/** Every item of an SDK paged list. */
export async function all(iterator) {
  const items = [];
  for await (const item of iterator) items.push(item);
  return items;
}
