"""Names the replication app reserves: the properties it writes on every event and reads back, and the
name of the unrouted endpoint in status and metrics. The app and the checks read them from here."""

from __future__ import annotations

# Names this hop's source event (`<host>/<entity>/<partition>/<sequence>`); an effectively-once task
# reads it back at the target's tail to find what a crashed batch already published.
SOURCE_ID_PROPERTY = "repl-source-id"
# Carries, on an event sent to the dead-letter target, why it was dead-lettered.
DEAD_LETTER_REASON_PROPERTY = "repl-dead-letter-reason"
# The endpoint `spec.unrouted` is counted and reported under this name, beside the targets'.
UNROUTED = "unrouted"
