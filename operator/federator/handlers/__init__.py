"""kopf handlers: a few lines each, calling into reconcile/. Importing this package registers them."""

from federator.handlers import (
    failovergroup,
    followers,
    lifecycle,
    replicationapplication,
    replicationtask,
    servicebusmirror,
)

__all__ = [
    "failovergroup",
    "followers",
    "lifecycle",
    "replicationapplication",
    "replicationtask",
    "servicebusmirror",
]
