"""Test support code shared by several test folders (the Kubernetes emulator and its fixtures)."""
