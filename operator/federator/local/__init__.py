"""Local mode (`federator run`, `federator demo`): manifests on one machine, without a cluster.

plan (pure: manifests → emulator config, task configs, Stalled tasks) → session (processes: emulator, one
Spark app per task) → observe (process, log, status file → conditions) → view (the live table).
"""
