"""Service Bus provisioning for ServiceBusMirror (and Azure credentials for any controller): what a member
should have (planning), what it has (observe), the difference (pure `diff`), and the writes that close it
through Azure Resource Manager (`arm`) or the Service Bus administration API (`dataplane`)."""
