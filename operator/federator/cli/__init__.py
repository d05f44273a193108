"""The `federator` command."""
