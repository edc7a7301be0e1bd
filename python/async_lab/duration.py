"""Durations as the command line writes them (``20us``, ``1ms``, ``0.5s``), read in ns. (They are written in
words by the core: the gate's messages come worded.)"""

import datetime
import re

_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_PATTERN = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(ns|us|µs|μs|ms|s)\s*$")


def parse(value):
    """``value`` in ns: a string with its unit (``"1ms"``, ``"250us"``, ``"0.5s"``), a ``timedelta``, or a
    number of seconds. Raises ``ValueError`` (naming the value) for anything else or a negative duration."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration (examples: 20us, 1ms, 0.5s)")
    if isinstance(value, datetime.timedelta):
        ns = round(value.total_seconds() * 1e9)
    elif isinstance(value, (int, float)):
        ns = round(value * 1e9)
    elif isinstance(value, str):
        m = _PATTERN.match(value)
        if not m:
            raise ValueError(f"{value!r} is not a duration (examples: 20us, 1ms, 0.5s)")
        number, unit = m.groups()
        ns = round(float(number) * _UNITS[unit])
    else:
        raise ValueError(f"{value!r} is not a duration (examples: 20us, 1ms, 0.5s)")
    if ns < 0:
        raise ValueError(f"{value!r} is negative: a duration is 0 or more")
    return ns
