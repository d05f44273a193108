"""The AMQP 1.0 side of the emulator: connections, links, CBS, and the Event Hubs / Service Bus protocols."""
