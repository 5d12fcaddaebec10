"""An incremental Server-Sent Events parser (WHATWG rules): feed byte chunks, get events as they complete.

Any chunking of the same stream yields the same events: a ``\\r`` at the end of a
chunk is held back until the next chunk shows whether a ``\\n`` follows, and
UTF-8 sequences split across chunks are decoded incrementally.
"""

from __future__ import annotations

import codecs
import re
from typing import NamedTuple

_LINE = re.compile(r"\r\n|\r|\n")


class Event(NamedTuple):
    """One server-sent event."""

    data: str
    event: str = "message"
    id: str | None = None


class SseParser:
    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._first = True

    def feed(self, chunk: bytes) -> list[Event]:
        text = self._pending + self._decoder.decode(chunk)
        if self._first and text:
            text = text.removeprefix("\ufeff")
            self._first = False
        return self._lines(text, final=False)

    def close(self) -> list[Event]:
        """End of stream: the events a held-back ``\\r`` completes; an event without its blank line is discarded."""
        text = self._pending + self._decoder.decode(b"", final=True)
        return self._lines(text, final=True)

    def _lines(self, text: str, *, final: bool) -> list[Event]:
        events: list[Event] = []
        pos = 0
        for match in _LINE.finditer(text):
            if match.group() == "\r" and match.end() == len(text) and not final:
                break  # maybe the first half of \r\n
            self._field(text[pos : match.start()], events)
            pos = match.end()
        self._pending = text[pos:]
        return events

    def _field(self, line: str, events: list[Event]) -> None:
        if not line:
            if self._data:
                events.append(Event(data="\n".join(self._data), event=self._event or "message", id=self._id))
            self._data, self._event = [], ""
            return
        if line.startswith(":"):
            return
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
