import datetime

import pytest

from async_lab import duration


@pytest.mark.parametrize(
    "text, ns",
    [
        ("1ms", 1_000_000),
        ("20us", 20_000),
        ("250µs", 250_000),
        ("0.5s", 500_000_000),
        ("1.5 ms", 1_500_000),
        ("100ns", 100),
        (".25ms", 250_000),
        ("0s", 0),
    ],
)
def test_durations_as_the_command_line_writes_them(text, ns):
    assert duration.parse(text) == ns


def test_numbers_are_seconds_and_timedeltas_are_read():
    assert duration.parse(0.001) == 1_000_000
    assert duration.parse(2) == 2_000_000_000
    assert duration.parse(datetime.timedelta(microseconds=20)) == 20_000


@pytest.mark.parametrize("bad", ["1 hour", "", "ms", "1", "fast", "-1ms", True, None, [1]])
def test_anything_else_is_a_clear_error(bad):
    with pytest.raises(ValueError) as e:
        duration.parse(bad)
    assert repr(bad) in str(e.value)
