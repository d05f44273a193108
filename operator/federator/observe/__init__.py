"""Observation: reading the state of what the operator created and mapping it to its own terms."""
