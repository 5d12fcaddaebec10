"""Read an expert package from disk. Problems become findings; only a missing path raises."""

from __future__ import annotations

import os
from pathlib import Path

from agentpack.io.errors import PackError, PathEscapeError
from agentpack.io.frontmatter import parse_frontmatter_text, split_frontmatter
from agentpack.io.paths import check_inside, links_out, resolve_under
from agentpack.io.userfiles import read_text
from agentpack.io.yamlio import YamlDocument, load_yaml
from agentpack.kernel.models import Finding

from .model import COMPONENT_KINDS, Component, ExpertPackage
from .names import MANIFEST

FRONTMATTER_REQUIRED = {"functions", "processes"}


def package_root(path: Path) -> Path:
    """The package directory for ``path`` (the directory itself, or the folder of an ``expert.yaml``)."""
    return path.parent if path.is_file() and path.name == MANIFEST else path


def load_package(path: str | Path) -> ExpertPackage:
    """Load the package at ``path`` (a directory or its ``expert.yaml``)."""
    given = Path(path)
    if not given.exists():
        raise PackError(f"no such file or directory: {given}")
    root = package_root(given)
    display_root = str(root)
    manifest_display = os.path.join(display_root, MANIFEST)
    package = ExpertPackage(root=root, display_root=display_root, manifest=YamlDocument(None, file=manifest_display))
    manifest_path = root / MANIFEST
    if not os.path.lexists(manifest_path):  # a folder or a dangling link at that name: load_yaml says what it is
        package.findings.append(
            Finding.error(
                "OEX001", "expert.yaml is missing; every package needs a manifest", file=manifest_display, line=1
            )
        )
        return package
    package.findings.extend(
        Finding.error(
            "OEX004",
            f"'{rel}' is a symbolic link to '{target}', outside the package; agentpack never follows it",
            file=os.path.join(display_root, rel),
            hint="copy what it points to into the package, or remove the link",
        )
        for rel, target in links_out(root)
        if rel != MANIFEST
    )
    try:
        check_inside(root, manifest_path, display=manifest_display, what="the package", error=PackError)
        package.manifest = load_yaml(manifest_path, display=manifest_display)
    except PackError as exc:
        package.findings.append(
            Finding.error("OEX002", exc.message, file=exc.file or manifest_display, line=exc.line, column=exc.column)
        )
        return package
    if not isinstance(package.manifest.data, dict):
        package.findings.append(
            Finding.error("OEX003", "expert.yaml must be a mapping of fields", file=manifest_display, line=1)
        )
        return package
    components = package.data.get("components")
    if not isinstance(components, dict):
        return package  # the schema check reports it
    for kind in COMPONENT_KINDS:
        entries = components.get(kind)
        if kind == "orchestrator":
            entries = [entries] if isinstance(entries, str) else []
        if not isinstance(entries, list):
            continue
        seen: set[str] = set()
        for index, entry in enumerate(entries):
            pointer = f"/components/{kind}" + ("" if kind == "orchestrator" else f"/{index}")
            if not isinstance(entry, str):
                continue
            if entry in seen:
                package.findings.append(
                    Finding.warning(
                        "OEX124",
                        f"'{entry}' is listed twice under components.{kind}",
                        **package.manifest_where(pointer),
                    )
                )
                continue
            seen.add(entry)
            component = _load_component(package, kind, entry, pointer)
            if component is not None:
                package.components.setdefault(kind, []).append(component)
    return package


def _load_component(package: ExpertPackage, kind: str, rel: str, pointer: str) -> Component | None:
    where = package.manifest_where(pointer)
    try:
        file = resolve_under(package.root, rel)
    except PathEscapeError as exc:
        package.findings.append(Finding.error("OEX121", f"components.{kind}: {exc.message}", **where))
        return None
    display = os.path.join(package.display_root, rel)
    if not os.path.lexists(file):
        package.findings.append(
            Finding.error(
                "OEX120",
                f"components.{kind} lists '{rel}' but no such file exists in the package",
                **where,
                hint="create the file or remove it from expert.yaml",
            )
        )
        return None
    rel = Path(os.path.relpath(file, os.path.realpath(package.root))).as_posix()
    try:
        if kind == "tools":
            return Component(kind, rel, file, display, load_yaml(file, display=display))
    except PackError as exc:
        package.findings.append(
            Finding.error("OEX220", exc.message, file=exc.file or display, line=exc.line, column=exc.column)
        )
        return None
    try:
        text = read_text(file, display=display, expected="a Markdown file")
    except PackError as exc:  # a folder, a FIFO, a dangling link, not UTF-8
        package.findings.append(
            Finding.error("OEX125", f"cannot read {rel}: {exc.message}", file=display, line=exc.line)
        )
        return None
    if "\x00" in text:  # binary content saved under a Markdown name
        line = text.count("\n", 0, text.index("\x00")) + 1
        package.findings.append(
            Finding.error("OEX125", f"cannot read {rel}: a NUL byte: this is not a text file", file=display, line=line)
        )
        return None
    return _markdown_component(package, kind, rel, file, display, text)


def _markdown_component(
    package: ExpertPackage, kind: str, rel: str, file: Path, display: str, text: str
) -> Component | None:
    if not text.startswith("---"):
        if kind in FRONTMATTER_REQUIRED:
            package.findings.append(
                Finding.error(
                    "OEX200",
                    f"{kind[:-1] if kind != 'processes' else 'process'} file has no YAML frontmatter "
                    "(it must start with '---' and declare name and description)",
                    file=display,
                    line=1,
                )
            )
            return None
        return Component(kind, rel, file, display, YamlDocument({}, file=display), body=text.strip(), text=text)
    try:
        front, body, body_line = split_frontmatter(text, file=display)
        doc = parse_frontmatter_text(front, file=display)
    except PackError as exc:
        package.findings.append(
            Finding.error(
                "OEX201",
                f"invalid frontmatter: {exc.message}",
                file=exc.file or display,
                line=exc.line,
                column=exc.column,
            )
        )
        return None
    if doc.data is None:
        doc.data = {}
    if not isinstance(doc.data, dict):
        package.findings.append(
            Finding.error("OEX201", "frontmatter must be a mapping of fields", file=display, line=1)
        )
        return None
    return Component(kind, rel, file, display, doc, body=body, body_line=body_line, text=text)
