"""`kubectl federator`: the on-call plugin (status tree, failover, failback, lag, report, graph)."""
