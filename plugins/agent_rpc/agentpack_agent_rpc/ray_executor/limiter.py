"""One cluster-wide limit on concurrent ``llm_judge`` calls: an async Ray actor handing out leased permits.

A permit is returned by ``release``, or taken back after ``lease`` seconds,
so a node lost in the middle of a judge call does not keep it for good.
"""

from __future__ import annotations

import asyncio
import itertools
import time


class JudgeLimit:
    def __init__(self, limit: int, lease: float) -> None:
        self.limit = limit
        self.lease = lease
        self.held: dict[int, float] = {}
        self.tokens = itertools.count(1)
        self.freed = asyncio.Event()

    async def acquire(self) -> int:
        while True:
            now = time.monotonic()
            for token, since in list(self.held.items()):
                if now - since > self.lease:
                    del self.held[token]
            if len(self.held) < self.limit:
                token = next(self.tokens)
                self.held[token] = now
                return token
            self.freed.clear()
            try:
                await asyncio.wait_for(self.freed.wait(), timeout=1.0)
            except TimeoutError:
                pass

    async def release(self, token: int) -> None:
        self.held.pop(token, None)
        self.freed.set()
