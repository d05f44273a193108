"""Fixtures shared by the whole suite: the Azure messaging emulator and a faithful fake Kubernetes API."""

pytest_plugins = ["federator_emulator.testing", "support.kube", "support.postgres", "support.azurite"]
