"""Reading a manifest file: recognise it (``sniff``), read and parse it once (``read_document``), its head alone."""

from __future__ import annotations

import re
from pathlib import Path

from agentpack.io.errors import YamlError, reading
from agentpack.io.userfiles import read_bytes
from agentpack.io.yamlio import YamlDocument, parse_yaml

from .model import MANIFEST_NAMES, display_path, looks_like_manifest


def manifest_file(path: Path) -> Path | None:
    """The manifest a path names: the file itself, or ``manifest.yaml`` in a directory."""
    if path.is_dir():
        for name in MANIFEST_NAMES:
            if (path / name).is_file():
                return path / name
        return None
    return path if path.suffix.lower() in (".yaml", ".yml") and path.is_file() else None


Document = tuple[YamlDocument, bytes]
"""A manifest read and parsed: the YAML document and the file's bytes (for the digest). ``Pack.data`` is one."""

Sniffed = tuple[tuple[str, int, int, int], str, bytes, YamlDocument | None]
"""What ``sniff`` read of a manifest: the file's identity and stat, its text, bytes and (when it had to parse) the
document. Detection hands it to the load that follows (``Detection.data``)."""


def _file_key(path: Path) -> tuple[str, int, int, int]:
    stat = path.stat()
    return str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns


def _read(path: Path, sniffed: Sniffed | None = None) -> tuple[str, bytes, YamlDocument | None]:
    """Text, bytes and (when ``sniff`` parsed it) the document: what ``sniffed`` holds of the unchanged file, else
    read."""
    with reading(display_path(path), YamlError):
        if sniffed is not None and sniffed[0] == _file_key(path):
            return sniffed[1:]
        raw = read_bytes(path, display=display_path(path), error=YamlError, expected="a YAML file")
        return raw.decode("utf-8-sig"), raw, None


def read_text(path: Path) -> tuple[str, bytes]:
    """The manifest's text and bytes; raises ``YamlError`` for an unreadable or non-UTF-8 file."""
    text, raw, _ = _read(path)
    return text, raw


def parse_document(text: str, raw: bytes, path: Path) -> Document:
    """The manifest's text parsed; raises ``YamlError`` (file:line:col) for broken YAML."""
    return parse_yaml(text, file=display_path(path)), raw


def read_document(path: Path, sniffed: Sniffed | None = None) -> Document:
    """The parsed YAML and its bytes (from ``sniffed`` when the file is unchanged since); raises ``YamlError``
    (file:line:col) for unreadable YAML."""
    text, raw, doc = _read(path, sniffed)
    return (doc, raw) if doc is not None else parse_document(text, raw, path)


_TOP_KEY = re.compile(r"""^["']?(scenarios|target|manifest_version)["']?[ \t]*:""", re.M)
_FLOW_START = re.compile(r"\A(?:[ \t]*(?:#[^\n]*)?\n)*[ \t]*(?:---[ \t]+)?\{")


def sniff(path: Path) -> Sniffed | None:
    """Whether the YAML file ``path`` looks like a manifest: top-level ``scenarios``, and ``target`` or
    ``manifest_version``.

    Block-style YAML (what people write) is recognised from its lines, with no
    parse; only a flow-style document (``{...}``, JSON) is parsed. A manifest's
    ``Sniffed`` content (else ``None``) goes to the ``read_document`` of the load
    that follows, so ``agentpack eval manifest.yaml`` reads and parses the file
    once.
    """
    try:
        with reading(display_path(path), YamlError):
            key = _file_key(path)
            raw = read_bytes(path, display=display_path(path), error=YamlError, expected="a YAML file")
            text = raw.decode("utf-8-sig")
    except YamlError:
        return None
    doc = None
    keys = set(_TOP_KEY.findall(text))
    if "scenarios" in keys:
        found = bool(keys & {"target", "manifest_version"})
    elif "scenarios" in text and _FLOW_START.match(text):
        try:
            doc = parse_yaml(text, file=display_path(path))
        except YamlError:
            return None
        found = looks_like_manifest(doc.data)
    else:
        found = False
    return (key, text, raw, doc) if found else None


_SCENARIOS_LINE = re.compile(r"^scenarios[ \t]*:", re.M)
_TARGET_KEY_LINE = re.compile(r"^(?:target|shell|cwd|env|limits|pid_namespace)[ \t]*:", re.M)


def document_head(text: str, path: Path) -> YamlDocument | None:
    """The top-level keys written above ``scenarios:``, parsed alone, for ``early_target``.

    People write the target before the scenarios; reading only that part lets
    the agent start before the long part of the manifest is parsed. None when
    there is no block-style ``scenarios:`` line, when a target key also
    appears below it, or when the part above is not a mapping on its own.
    """
    match = _SCENARIOS_LINE.search(text)
    if match is None or _TARGET_KEY_LINE.search(text, match.end()):
        return None
    try:
        head = parse_yaml(text[: match.start()], file=display_path(path))
    except YamlError:
        return None
    return head if isinstance(head.data, dict) else None
