"""Federator: replication topologies between Azure Event Hubs and Service Bus namespaces."""

__version__ = "0.1.0"
