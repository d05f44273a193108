"""The emulator's state, apart from protocol and I/O: namespaces, event hubs, queues, topics, rules."""
