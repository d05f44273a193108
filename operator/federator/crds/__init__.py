"""CRD manifests and the API reference, generated from the API models."""
