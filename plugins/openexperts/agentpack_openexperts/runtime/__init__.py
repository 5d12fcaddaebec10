"""The openexperts runtime: ``ExpertRuntime`` and the pieces drivers and bindings use."""

from .approvals import ApprovalDesk, ApprovalRequest, CallbackBroker, StaticBroker
from .bindings import PythonBinding, ToolBox, ToolError
from .executor import RunOutcome
from .idempotency import current_key
from .runtime import BindContext, ExpertRuntime
from .serverconfig import ServerSettings
from .session import AgentResult, AgentSession

__all__ = [
    "AgentResult",
    "AgentSession",
    "ApprovalDesk",
    "ApprovalRequest",
    "BindContext",
    "CallbackBroker",
    "ExpertRuntime",
    "PythonBinding",
    "RunOutcome",
    "ServerSettings",
    "StaticBroker",
    "ToolBox",
    "ToolError",
    "current_key",
]
