"""The operator's own Kubernetes API access: a thin REST client and resource paths."""
