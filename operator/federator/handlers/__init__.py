"""kopf handlers: a few lines each, calling into reconcile/. Importing this package registers them."""

from federator.handlers import failovergroup, lifecycle, replicationtask, servicebusmirror

__all__ = ["failovergroup", "lifecycle", "replicationtask", "servicebusmirror"]
