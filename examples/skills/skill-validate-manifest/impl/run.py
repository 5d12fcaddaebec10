"""skill.validate_manifest: the skill/v1 contract rules of agentpack's skillctl plugin, as a skill.

It uses the same validator as `agentpack validate`, so both always agree.
"""

import json
import os
import sys
from pathlib import Path

from agentpack.io.errors import AgentpackError
from agentpack.io.yamlio import YamlDocument
from agentpack_skillctl.manifest import SkillManifest, load_skill
from agentpack_skillctl.validation import _spec_id, schema_findings, validate_skill


def log(level, event, **fields):
    sys.stderr.write(json.dumps({"level": level, "event": event, **fields}, sort_keys=True) + "\n")


def fail(message):
    log("error", "invalid_request", message=message)
    sys.exit(2)


def relative_folder(workspace, relative):
    target = os.path.realpath(os.path.join(workspace, relative))
    if target != workspace and not target.startswith(workspace + os.sep):
        fail(f"path '{relative}' leaves the workspace")
    folder = relative[: -len("skill.yaml")].rstrip("/") or "." if relative.endswith("skill.yaml") else relative
    return folder


def main():
    request = json.load(sys.stdin)
    workspace = os.path.realpath(os.environ.get("SKILL_WORKSPACE", "."))
    os.chdir(workspace)  # findings then name workspace-relative files
    skill = None
    try:
        if "manifest" in request:
            doc = YamlDocument(data=request["manifest"], file="skill.yaml")
            skill = SkillManifest(directory=Path("."), doc=doc)
            findings = schema_findings(skill) + _spec_id(skill)
        else:
            folder = relative_folder(workspace, request["path"])
            if not os.path.isdir(folder):
                fail(f"'{request['path']}' is not a folder in the workspace")
            skill = load_skill(folder)
            findings = validate_skill(skill, strict=request.get("strict", False))
    except AgentpackError as exc:
        from agentpack.kernel.models import Finding

        findings = [Finding.error("SKC100", exc.message, file=exc.file, line=exc.line)]
        skill = None
    findings = sorted(findings, key=lambda f: f.sort_key())
    records = [{k: v for k, v in f.model_dump(mode="json").items() if k != "column"} for f in findings]
    errors = sum(f.severity == "error" for f in findings)
    identity = None
    if skill is not None and isinstance(skill.get("id"), str):
        identity = {"id": skill.get("id"), "version": str(skill.get("version", default=""))}
    log("info", "validated", errors=errors, findings=len(findings))
    json.dump(
        {
            "valid": errors == 0,
            "skill": identity,
            "errorCount": errors,
            "warningCount": sum(f.severity == "warning" for f in findings),
            "findings": records,
        },
        sys.stdout,
        sort_keys=True,
    )


if __name__ == "__main__":
    main()
