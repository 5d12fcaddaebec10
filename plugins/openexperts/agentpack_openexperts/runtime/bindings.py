"""Tool binding: abstract tools of a package bound to concrete implementations.

A ``ToolBox`` maps each abstract tool name to a ``ToolBinding`` (``call(operation,
arguments) -> JSON-able``, ``close()``). Built-in binders: ``python`` (callables),
``skill`` (deterministic skills of the skillctl format) and ``mcp`` (an MCP server
over stdio). Bindings come from the Python API or from a bindings file.

Crash safety (see ``idempotency``): a binding, or the object a Python binding wraps, may set
``idempotency_keys = True`` (it performs a call once per ``current_key()``) and may define
``reconcile(operation, arguments, idempotency_key)``, so a resumed run can account for a call
whose outcome a crash left unknown.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentpack.io.errors import AgentpackError
from agentpack.io.userfiles import check_file
from agentpack.io.yamlio import load_yaml

from ..registry import lookup
from ..validate import UNKNOWN_KEY, schema_id, schema_store


class ToolError(AgentpackError):
    """A tool operation failed; the message goes back to the agent and into the execution log."""


class PythonBinding:
    """Operations as Python callables: a mapping ``{op: callable}`` or an object with one method per op.

    Each callable receives the operation's arguments as keyword arguments.
    """

    def __init__(self, target: Mapping[str, Callable[..., Any]] | Any) -> None:
        self.target = target

    def _callable(self, operation: str) -> Callable[..., Any]:
        fn = self.target.get(operation) if isinstance(self.target, Mapping) else getattr(self.target, operation, None)
        if fn is None or not callable(fn):
            raise ToolError(f"operation '{operation}' is not bound")
        return fn

    def call(self, operation: str, arguments: dict[str, Any]) -> Any:
        fn = self._callable(operation)
        try:
            inspect.signature(fn).bind(**arguments)
        except TypeError as exc:
            raise ToolError(f"bad arguments for '{operation}': {exc}") from None
        except ValueError:  # no signature available (a builtin): just call it
            pass
        return fn(**arguments)

    def close(self) -> None:
        close = getattr(self.target, "close", None)
        if callable(close) and not isinstance(self.target, Mapping):
            close()


class ToolBox:
    """The bindings of one runtime, by abstract tool name."""

    def __init__(self) -> None:
        self.bindings: dict[str, Any] = {}

    def bind(self, tool: str, binding: Any) -> None:
        """Bind ``tool`` to a ``ToolBinding``, or to callables (wrapped in a ``PythonBinding``)."""
        if not hasattr(binding, "call"):
            binding = PythonBinding(binding)
        self.bindings[tool] = binding

    def has(self, tool: str) -> bool:
        return tool in self.bindings

    def missing(self, tools: list[str]) -> list[str]:
        return [t for t in tools if t not in self.bindings]

    def call(self, tool: str, operation: str, arguments: dict[str, Any]) -> Any:
        binding = self.bindings.get(tool)
        if binding is None:
            raise ToolError(f"tool '{tool}' is not bound")
        return binding.call(operation, arguments)

    def close(self) -> None:
        for binding in self.bindings.values():
            try:
                binding.close()
            except Exception:  # closing is best effort
                pass


def import_object(spec: str, base: Path) -> Any:
    """``module:attr`` or ``path/to/file.py:attr`` (relative to ``base``)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not attr:
        raise AgentpackError(f"'{spec}' is not MODULE:ATTRIBUTE or FILE.py:ATTRIBUTE")
    if module_name.endswith(".py"):
        path = Path(os.path.realpath(base / module_name))
        if not os.path.lexists(path):
            raise AgentpackError(f"binding module {path} does not exist")
        check_file(path, error=AgentpackError, expected="a Python file")  # a folder, a link loop, a FIFO
        name = f"_openexperts_binding_{abs(hash(str(path)))}"
        module = sys.modules.get(name)
        if module is None:
            loader_spec = importlib.util.spec_from_file_location(name, path)
            if loader_spec is None or loader_spec.loader is None:
                raise AgentpackError(f"binding module {path} cannot be imported")
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[name] = module
            try:
                loader_spec.loader.exec_module(module)
            except Exception as exc:  # the user's module: a syntax error, null bytes, an import that fails
                del sys.modules[name]
                raise AgentpackError(f"cannot import binding module {path}: {type(exc).__name__}: {exc}") from None
    else:
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # ImportError, or whatever the module raises while it is imported
            raise AgentpackError(f"cannot import binding module '{module_name}': {type(exc).__name__}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise AgentpackError(f"'{module_name}' has no attribute '{attr}'")
        obj = getattr(obj, part)
    return obj() if inspect.isclass(obj) else obj


def python_binder(config: dict[str, Any], context: Any) -> PythonBinding:
    return PythonBinding(import_object(config["python"], context.base))


def load_bindings_file(path: Path, context: Any) -> ToolBox:
    """Build a ``ToolBox`` from a bindings YAML file (schema ``bindings.schema.json``).

    ``context`` is the runtime's ``BindContext``; binders resolve relative paths against the file's folder.
    """
    doc = load_yaml(path)
    findings = schema_store().validate(schema_id("bindings"), doc.data, document=doc, code="OEX900")
    if findings:
        first = sorted(findings, key=lambda f: not UNKNOWN_KEY.search(f.message))[0]
        raise AgentpackError(first.message, file=first.file, line=first.line)
    box = ToolBox()
    context = replace(context, base=path.parent)
    for tool, config in doc.data["tools"].items():
        kind = next(k for k in ("python", "skill", "skills", "mcp") if k in config)
        spec = lookup(context.runtime.host, "binder", "skill" if kind == "skills" else kind)
        try:
            box.bind(tool, spec.factory(config, context))
        except AgentpackError as exc:
            raise AgentpackError(
                f"tool '{tool}': {exc.message}", file=str(path), line=doc.line_of(f"/tools/{tool}"), hint=exc.hint
            ) from None
    return box
