"""Fixtures for the Kubernetes-facing tests.

Until tests/conftest.py registers the plugin for the whole suite (``pytest_plugins = ["support.kube"]``),
import its fixtures here. pytest forbids ``pytest_plugins`` in a conftest below the top level.
"""

from support.kube import helm, k8s_tools, kube, kubeconfig, kubectl  # noqa: F401
