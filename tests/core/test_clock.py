"""agentpack.io.clock: injectable clocks and id sources for golden reports."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentpack.io.clock import SYSTEM_CLOCK, Clock, FixedClock, random_ids, sequential_ids


def test_fixed_clock_stands_still():
    clock = FixedClock("2026-01-01T00:00:00Z")
    assert clock.now() == datetime(2026, 1, 1, tzinfo=UTC)
    assert clock.now() == clock.now()
    assert clock.iso() == "2026-01-01T00:00:00Z"
    assert FixedClock().iso() == "2026-01-01T00:00:00Z"


def test_fixed_clock_monotonic_steps():
    clock = FixedClock(step=0.5)
    assert [clock.monotonic() for _ in range(4)] == [0.0, 0.5, 1.0, 1.5]
    assert FixedClock().monotonic() == FixedClock().monotonic() == 0.0


def test_fixed_clock_inputs():
    assert FixedClock(datetime(2026, 5, 1, 12, 30)).now().tzinfo is UTC  # naive means UTC
    offset = FixedClock("2026-01-01T02:00:00+02:00")
    assert offset.iso() == "2026-01-01T00:00:00Z"  # iso() is always UTC with a Z
    assert FixedClock("2026-01-01T00:00:00.123456Z").iso() == "2026-01-01T00:00:00Z"


def test_system_clock():
    before = datetime.now(UTC)
    now = SYSTEM_CLOCK.now()
    assert now.tzinfo is not None and abs(now - before) < timedelta(minutes=1)
    assert SYSTEM_CLOCK.iso().endswith("Z") and len(SYSTEM_CLOCK.iso()) == 20
    first = Clock().monotonic()
    assert Clock().monotonic() >= first


def test_sequential_ids():
    ids = sequential_ids("run-")
    assert [ids() for _ in range(3)] == ["run-0001", "run-0002", "run-0003"]
    assert sequential_ids()() == "id-0001"  # each source counts on its own


def test_random_ids():
    ids = random_ids()
    values = {ids() for _ in range(50)}
    assert len(values) == 50 and all(len(v) == 32 and int(v, 16) >= 0 for v in values)
