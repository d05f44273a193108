"""Local mode (`federator run`, `federator demo`): manifests on one machine, without a cluster.

plan (pure: manifests → emulator config, task configs, mirrors, groups, Stalled tasks) → session
(processes: emulator; controllers for mirrors and groups on a thread; Spark applications) → observe
(process, log, status file → conditions) → view (the live table).
"""
