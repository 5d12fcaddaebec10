"""Line-window chunking and canonical chunk ids (spec 6.2.1).

Lines are split with ``str.splitlines(keepends=True)`` after newline
normalisation (the split the reference resolver uses, so line numbers agree).
A window takes whole lines while it stays within ``max_chars`` (a longer single
line is a window of its own); the next window starts on the earliest line that
keeps the repeated tail within ``overlap_chars`` while leaving room for the
first new line, so every window adds at least one line the previous one lacked.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import accumulate

from agentpack.io.errors import AgentpackError


@dataclass(frozen=True)
class Window:
    start_line: int
    end_line: int
    text: str


def chunk_id(source_id: str, path: str, start_line: int, end_line: int) -> str:
    """``<source_id>::<artifact_path>#L<start>-L<end>``."""
    return f"{source_id}::{path}#L{start_line}-L{end_line}"


def parse_chunk_id(value: str) -> tuple[str, str, int, int] | None:
    """The parts of a canonical chunk id, or ``None`` when it is not canonical."""
    source_id, sep, rest = value.partition("::")
    path, sep2, lines = rest.rpartition("#L")
    if not (sep and sep2 and source_id and path):
        return None
    start, dash, end = lines.partition("-L")
    if not (dash and start.isdigit() and end.isdigit()):
        return None
    return source_id, path, int(start), int(end)


def split_lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def line_windows(lines: list[str], max_chars: int, overlap_chars: int) -> list[Window]:
    """Cut ``lines`` into windows (1-based inclusive line numbers)."""
    if max_chars < 1:
        raise AgentpackError(f"chunking max_chars must be at least 1 (got {max_chars})")
    if overlap_chars < 0 or overlap_chars >= max_chars:
        raise AgentpackError(f"chunking overlap_chars must be in 0..max_chars-1 (got {overlap_chars})")
    ends = list(accumulate(map(len, lines), initial=0))  # ends[k]: characters of lines 0..k-1 (bisected)
    windows: list[Window] = []
    n = len(lines)
    i = 0
    while i < n:
        # the longest run of whole lines from i within max_chars (at least line i)
        j = max(i + 1, bisect_right(ends, ends[i] + max_chars, i + 1) - 1)
        windows.append(Window(i + 1, j, "".join(lines[i:j])))
        if j >= n:
            break
        # the earliest k > i whose tail lines k..j-1 fit the overlap, leaving room for line j
        limit = min(overlap_chars, max_chars - len(lines[j]))
        i = bisect_left(ends, ends[j] - limit, i + 1, j)
    return windows
