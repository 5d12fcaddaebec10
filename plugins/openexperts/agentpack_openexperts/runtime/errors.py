"""Why a process attempt failed. Each is retried, then handled by ``execution.on_failure``.

They are ``AgentpackError``s, like every error this plugin raises: the executor turns
them into a run's status; one that escapes a custom caller still reads as a message
(exit 2), never a traceback.
"""

from agentpack.io.errors import AgentpackError


class ProcessFailure(AgentpackError):
    """An attempt failed; ``reason`` is a short machine-readable cause."""

    reason = "failed"


class ProcessTimeout(ProcessFailure):
    reason = "timeout"


class OperationRejected(ProcessFailure):
    """A ``confirm`` operation was rejected, or its approval timed out with ``on_timeout: reject``."""

    reason = "rejected"


class ToolFailure(ProcessFailure):
    reason = "tool_error"


class CallHeld(ProcessFailure):
    """A call started before an interruption may have run, and nothing can tell: the run is ``held`` for a
    person (``experts settle``), not retried and not failed."""

    reason = "held"


class DriverError(ProcessFailure):
    reason = "driver_error"


class Cancelled(ProcessFailure):
    """The runtime is stopping; the run stays resumable."""

    reason = "cancelled"


class StoreUnavailable(Cancelled):
    """The shared store (PostgreSQL) stayed unreachable; the run stays resumable, an event is refused."""

    reason = "store_unavailable"
