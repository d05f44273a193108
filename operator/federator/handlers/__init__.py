"""kopf handlers: a few lines each, calling into reconcile/. Importing this package registers them."""

from federator.handlers import lifecycle, replicationtask

__all__ = ["lifecycle", "replicationtask"]
