"""``experts explain``: the effective configuration and where each value came from."""

from __future__ import annotations

from typing import Any

from . import effective
from .model import ExpertPackage


def _dump(values: dict[str, effective.Sourced]) -> dict[str, Any]:
    return {key: value.to_json() for key, value in values.items()}


def explain(
    package: ExpertPackage, *, process: str | None = None, operation: str | None = None, trigger: str | None = None
) -> dict[str, Any]:
    processes = package.processes()
    if process:
        package.process(process)  # raises with the known names
    names = [process] if process else sorted(processes)
    triggers = [t for t in package.triggers if trigger is None or t.get("name") == trigger]
    if trigger is not None and not triggers:
        package.trigger(trigger)  # raises with the known names
    out: dict[str, Any] = {
        "package": {"name": package.name, "version": package.version, "path": package.display_root},
        "defaults": {
            "execution": _dump(effective.execution(package, None)),
            "delivery": _dump(effective.delivery(package, None)),
            "approval": _dump(effective.approval(package)),
            "escalation": _dump(effective.escalation(package)),
        },
        "processes": {},
        "triggers": {},
    }
    for name in names:
        component = processes[name]
        out["processes"][name] = {
            "file": component.path,
            "execution": _dump(effective.execution(package, component)),
            "delivery": _dump(effective.delivery(package, component)),
            "operations": {
                op: effective.tier(package, op).to_json() for op in effective.process_operations(package, component)
            },
        }
    for index, trig in enumerate(package.triggers):
        if trig in triggers and (process is None or trig.get("process") == process):
            out["triggers"][trig.get("name")] = _dump(effective.trigger(package, index))
    if operation:
        out["operation"] = {
            "name": operation,
            "tier": effective.tier(package, operation).to_json(),
            "declared": _declared(package, operation),
        }
    return out


def _declared(package: ExpertPackage, operation: str) -> dict[str, Any] | None:
    tool, _, op = operation.partition(".")
    declared = package.operations(tool).get(op)
    if declared is None:
        return None
    return {
        "tool_file": package.tools()[tool].path,
        "approval_documented": declared.get("approval"),
        "description": declared.get("description"),
    }


def render_text(data: dict[str, Any]) -> str:
    lines = [f"package {data['package']['name']} {data['package']['version']} ({data['package']['path']})"]

    def block(title: str, values: dict[str, Any], indent: str = "  ") -> None:
        lines.append(f"{indent}{title}:")
        width = max((len(k) for k in values), default=0)
        for key, item in values.items():
            lines.append(f"{indent}  {key.ljust(width)} = {_fmt(item['value'])}   <- {item['source']}")

    if "operation" in data:
        op = data["operation"]
        lines.append(f"operation {op['name']}: tier {op['tier']['value']}   <- {op['tier']['source']}")
        if op["declared"] and op["declared"].get("approval_documented"):
            lines.append(f"  (tools YAML documents '{op['declared']['approval_documented']}'; documentation only)")
    for name, proc in data["processes"].items():
        lines.append(f"process {name} ({proc['file']})")
        block("execution", proc["execution"])
        block("delivery", proc["delivery"])
        if proc["operations"]:
            block("operations (approval tier)", proc["operations"])
    for name, trig in data["triggers"].items():
        lines.append(f"trigger {name}")
        block("effective", trig)
    lines.append("policy")
    block("approval", data["defaults"]["approval"])
    block("escalation", data["defaults"]["escalation"])
    return "\n".join(lines) + "\n"


def _fmt(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)
