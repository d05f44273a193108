"""ISO 8601 durations (``PT1M``, ``P10675199DT2H48M5.4775807S``) as both management APIs send them."""

from __future__ import annotations

import re

_DURATION = re.compile(
    r"^P(?:(?P<days>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<hours>\d+(?:\.\d+)?)H)?(?:(?P<minutes>\d+(?:\.\d+)?)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$"
)
# .NET's TimeSpan.MaxValue, which Azure reports (and the SDKs send) for "never".
MAX_TIMESPAN = "P10675199DT2H48M5.4775807S"
_NEVER_SECONDS = 10675199 * 86400.0


def parse(text: str) -> float:
    """Seconds of an ISO 8601 duration without years or months; raises ValueError otherwise."""
    match = _DURATION.match(text.strip())
    if match is None or text.strip() in ("P", "PT"):
        raise ValueError(f"invalid ISO 8601 duration {text!r}")
    parts = {k: float(v) for k, v in match.groupdict().items() if v is not None}
    return (
        parts.get("days", 0.0) * 86400
        + parts.get("hours", 0.0) * 3600
        + parts.get("minutes", 0.0) * 60
        + parts.get("seconds", 0.0)
    )


def parse_optional(text: str | None) -> float | None:
    """Like ``parse``, with ``None`` for absent and for "never" (TimeSpan.MaxValue and beyond)."""
    if text is None:
        return None
    seconds = parse(text)
    return None if seconds >= _NEVER_SECONDS else seconds


def render(seconds: float | None) -> str:
    """An ISO 8601 duration; ``None`` (never) as TimeSpan.MaxValue like Azure."""
    if seconds is None:
        return MAX_TIMESPAN
    whole_minutes, rest = divmod(seconds, 60)
    hours, minutes = divmod(int(whole_minutes), 60)
    days, hours = divmod(hours, 24)
    out = "P" + (f"{days}D" if days else "") + "T"
    if hours:
        out += f"{hours}H"
    if minutes:
        out += f"{minutes}M"
    if rest or out.endswith("T"):
        out += f"{rest:.7f}".rstrip("0").rstrip(".") + "S"  # to the tick (100 ns), as .NET writes them
    return out
