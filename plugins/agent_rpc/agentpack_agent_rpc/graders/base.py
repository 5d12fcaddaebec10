"""The grader interface and the registry filled through ``agentpack_agent_rpc_register_graders``.

A grader type is a factory: ``factory(config) -> grader`` checks and compiles
one manifest entry once (raising ``GraderConfigError``), and
``grader.grade(result, context) -> Check`` runs on every step.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol

from agentpack.io.errors import AgentpackError
from agentpack.kernel.records import Record, constant

if TYPE_CHECKING:
    import pluggy


class GraderConfigError(AgentpackError):
    """A grader entry that is well-formed YAML but cannot work; ``key`` names the offending field."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class Check(Record):
    """One grader's verdict on one step: what was expected, what was seen, and why."""

    __slots__ = ("grader", "field", "passed", "expected", "actual", "reason", "error", "score", "name")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "error": constant(False),
        "score": constant(None),
        "name": constant(None),
    }
    grader: str
    field: str
    passed: bool
    expected: Any
    actual: Any
    reason: str
    error: bool
    score: float | None
    name: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.grader,
            "name": self.name,
            "field": self.field,
            "passed": self.passed,
            "error": self.error,
            "score": self.score if self.score is not None else (1.0 if self.passed else 0.0),
            "expected": self.expected,
            "actual": self.actual,
            "reason": self.reason,
        }


class GradeContext(Record):
    """What graders may use besides the step result: the step input, its grading ``deadline`` (a
    ``time.monotonic()`` instant a grader must not run past) and shared, thread-safe services."""

    __slots__ = ("judge", "env", "clients", "lock", "input", "deadline")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "judge": dict,
        "env": dict,
        "clients": dict,
        "lock": threading.Lock,
        "input": constant(""),
        "deadline": constant(math.inf),
    }
    judge: dict[str, Any]
    env: dict[str, str]
    clients: dict[tuple, Any]
    lock: threading.Lock
    input: str
    deadline: float

    def for_step(self, text: str, deadline: float = math.inf) -> GradeContext:
        return GradeContext(
            judge=self.judge, env=self.env, clients=self.clients, lock=self.lock, input=text, deadline=deadline
        )

    def shared(self, key: tuple, make: Callable[[], Any]) -> Any:
        """A client built once per run for ``key`` (e.g. one keep-alive chat client per judge endpoint)."""
        with self.lock:
            if key not in self.clients:
                self.clients[key] = make()
            return self.clients[key]

    def close(self) -> None:
        for client in self.clients.values():
            close = getattr(client, "close", None)
            if close:
                close()
        self.clients.clear()


class Grader(Protocol):
    def grade(self, result: Any, context: GradeContext) -> Check: ...


class GraderType(NamedTuple):
    """A grader a plugin registers: its manifest ``type``, a factory, and (for plugins) a config schema."""

    name: str
    factory: Callable[[dict[str, Any]], Grader]
    description: str = ""
    schema: dict[str, Any] | None = None
    plugin: str | None = None


def collect_graders(pm: pluggy.PluginManager) -> dict[str, GraderType]:
    """Every registered grader type, by name; two plugins registering one name is an error naming both."""
    from agentpack.kernel.host import collect_registrations

    return collect_registrations(pm, "agentpack_agent_rpc_register_graders", "grader")


def clip(text: Any, limit: int = 500) -> Any:
    """Shorten long text for a check's ``actual`` (graders always see the full text)."""
    if isinstance(text, str) and len(text) > limit:
        return text[:limit] + f"... [{len(text) - limit} more chars]"
    return text
