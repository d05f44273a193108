"""Checkpoint translation: application consumer groups follow a failover (docs/patterns/failover.md,
"What your consumers do")."""
