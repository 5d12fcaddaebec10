"""Test kit for format plugins: fixtures and a conformance base class.

Opt in from a test package's ``conftest.py``::

    pytest_plugins = ["agentpack.testing"]

then subclass ``FormatPluginConformance`` (see ``docs/writing-a-plugin.md``).
"""

from __future__ import annotations

import builtins
import io
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentpack import hookimpl
from agentpack.kernel.host import Host
from agentpack.kernel.plugins import create_plugin_manager, set_host


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(args: list[str], *, input: str | None = None, env: dict[str, str] | None = None) -> CliResult:
    """Run ``agentpack ARGS`` in-process with the real exit-code mapping; capture stdout and stderr."""
    from click.testing import CliRunner

    from agentpack.cli.app import main

    runner = CliRunner()
    with runner.isolation(input=input, env=env) as (out, err, _):
        code = main([str(a) for a in args])
        return CliResult(code, out.getvalue().decode("utf-8", "replace"), err.getvalue().decode("utf-8", "replace"))


def count_reads(monkeypatch: pytest.MonkeyPatch, root: Path | None = None) -> Counter[str]:
    """Opens for reading from now on, by path: relative to ``root`` (POSIX) for files under it, others not
    counted; by real path without ``root``. Both ``open`` and ``os.open`` count (the core's readers open a
    descriptor), an ``open`` whose opener calls ``os.open`` once."""
    counts: Counter[str] = Counter()
    base = os.path.realpath(root) if root is not None else None
    real_open, real_os_open = io.open, os.open
    inside_open = [0]

    def note(file: Any) -> None:
        if not isinstance(file, (str, os.PathLike)):
            return  # a descriptor
        real = os.path.realpath(file)
        if base is None:
            counts[real] += 1
        elif real == base or real.startswith(base + os.sep):
            counts[Path(os.path.relpath(real, base)).as_posix()] += 1

    def counting_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if "r" in mode and "+" not in mode:
            note(file)
        inside_open[0] += 1
        try:
            return real_open(file, mode, *args, **kwargs)
        finally:
            inside_open[0] -= 1

    def counting_os_open(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if not inside_open[0] and not flags & (os.O_WRONLY | os.O_RDWR):
            note(file)
        return real_os_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(io, "open", counting_open)  # pathlib reads through io.open
    monkeypatch.setattr(os, "open", counting_os_open)
    return counts


def break_file(path: Path, how: str, *, deep: str = "[" * 3000 + "]" * 3000) -> None:
    """Put in place of the file at ``path`` what its reader must refuse with an error, not skip or block on:
    ``folder``, ``dangling`` (symbolic link), ``loop`` (a link to itself), ``fifo``, or ``deep`` (the text
    ``deep``: by default JSON nested past every parser's limit)."""
    path.unlink()
    if how == "folder":
        path.mkdir()
    elif how == "dangling":
        path.symlink_to(path.with_name("nowhere"))
    elif how == "loop":
        path.symlink_to(path.name)
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "deep":
        path.write_text(deep)
    else:
        raise ValueError(f"unknown way to break a file: {how!r}")


def reference_venv(name: str, *requirements: str, timeout: float = 900) -> Path:
    """A throwaway virtual environment with ``requirements`` installed, for interoperability tests.

    Built once per ``name`` under the temporary directory and reused (a file lock keeps parallel
    test processes from building it twice). Calls ``pytest.skip`` with the reason when it cannot be
    built, for example without access to the package registry. Never installs into the project's
    own environment.
    """
    import tempfile
    import venv

    from agentpack.io.fsutil import file_lock

    home = Path(tempfile.gettempdir()) / "agentpack-interop" / name
    home.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(home.parent / f"{name}.lock", timeout=timeout, what=f"the {name} environment"):
        ready = home / ".ready"
        if not ready.exists():
            venv.create(home, with_pip=True, clear=True)
            pip = [str(home / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
            _install_or_skip([*pip, *requirements], " ".join(requirements), timeout)
            ready.write_text(" ".join(requirements) + "\n")
    return home


def _install_or_skip(argv: list[str], what: str, timeout: float) -> None:
    """Run an installer; ``pytest.skip`` with the reason when it takes too long or fails (no registry, mostly)."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        pytest.skip(f"installing {what} took more than {timeout:.0f} s (slow registry?)")
    if done.returncode != 0:
        pytest.skip(f"cannot install {what} (no package registry?): {done.stderr[-300:]}")


def npm_tools(package_json: Path, *, timeout: float = 900) -> Path:
    """A ``node_modules`` folder with what ``package_json`` pins, from the npm registry, for interoperability tests
    (a reference MCP server, the MCP conformance suite); returns its ``.bin`` folder.

    Installed once into ``$AGENTPACK_NPM_TOOLS`` (CI's ``.ci/run`` fills it the same way) or else the temporary
    directory, and reused while the pinned ``package.json`` is unchanged. Calls ``pytest.skip`` with the reason
    when npm is missing or the registry cannot be reached. Never touches the project's folders.
    """
    import shutil
    import tempfile

    from agentpack.io.fsutil import file_lock

    wanted = package_json.read_text(encoding="utf-8")
    default = Path(tempfile.gettempdir()) / "agentpack-interop" / f"npm-{package_json.parent.name}"
    home = Path(os.environ.get("AGENTPACK_NPM_TOOLS") or default)
    home.mkdir(parents=True, exist_ok=True)
    with file_lock(home.parent / f"{home.name}.lock", timeout=timeout, what="the npm tools"):
        ready = home / "node_modules" / ".bin"
        if ready.is_dir() and (home / "package.json").exists() and (home / "package.json").read_text() == wanted:
            return ready
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed (apt-get install npm)")
        (home / "package.json").write_text(wanted, encoding="utf-8")
        installed = False
        try:
            _install_or_skip(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(home)], str(package_json), timeout
            )
            installed = True
        finally:
            if not installed:  # the next test tries again
                (home / "package.json").unlink()
    return ready


@contextmanager
def served_url(argv: list[str]) -> Iterator[str]:
    """Start a server process that prints its URL as the first line on stderr, once it listens; yield the URL;
    stop the process."""
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    try:
        yield process.stderr.readline().strip()
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()


@pytest.fixture
def agentpack_host() -> Iterator[Host]:
    """A fresh host (entry points loaded) installed as the process-wide one for the test."""
    host = Host(create_plugin_manager())
    previous = set_host(host)
    try:
        yield host
    finally:
        set_host(previous)


@pytest.fixture
def register_plugin(agentpack_host: Host) -> Iterator[Callable[[Any], None]]:
    """Register a plugin object for one test; it is unregistered afterwards (the undo pattern)."""
    added: list[Any] = []

    def register(plugin: Any, name: str | None = None) -> None:
        agentpack_host.pm.register(plugin, name=name)
        agentpack_host._cache.clear()
        added.append(plugin)

    try:
        yield register
    finally:
        for plugin in added:
            agentpack_host.pm.unregister(plugin)
        agentpack_host._cache.clear()


@pytest.fixture
def agentpack_cli(agentpack_host: Host) -> Callable[..., CliResult]:
    """``agentpack_cli("validate", path)`` runs the CLI against the test's host."""

    def invoke(*args: Any, input: str | None = None, env: dict[str, str] | None = None) -> CliResult:
        return run_cli(list(args), input=input, env=env)

    return invoke


class ClaimingPlugin:
    """A test plugin that owns format ``claims-all`` and claims every path it is shown.

    Owner dispatch sends it every pack detected that way, so a subclass adds
    the one hook under test (a crashing ``agentpack_query``, an aborted
    ``agentpack_evaluate``) and registers with ``register_plugin``.
    """

    format = "claims-all"

    @hookimpl
    def agentpack_register_formats(self, register: Callable[[Any], None]) -> None:
        from agentpack.kernel.registry import FormatInfo

        register(FormatInfo(name=self.format, title="Claims every path (tests)"))

    @hookimpl
    def agentpack_detect(self, path: Path) -> Any:
        from agentpack.kernel.packtypes import Detection

        return Detection(format=self.format, confidence=1.0, reason="claims every path")

    @hookimpl
    def agentpack_load(self, path: Path, format: str) -> Any:
        from agentpack.kernel.packtypes import Pack

        return Pack(path=path, root=path, format=format, name=path.name)


class FormatPluginConformance:
    """Base tests every format plugin passes. Subclass it and set the attributes below.

    ``make_valid_pack`` and ``make_invalid_pack`` build packs under ``tmp_path``
    and return their paths; the invalid one must produce at least one error.
    """

    plugin_name: str = ""
    format_name: str = ""
    module: str = ""
    """The entry-point module (``agentpack_x.plugin``); importing it must stay light."""
    query_question: str | None = None
    """A question for ``agentpack_query`` on the valid pack (``None``: the format answers no queries)."""
    evaluates_offline: bool = False
    """The valid pack's evaluations run offline (no agent, no model): the kit runs them."""

    def make_valid_pack(self, tmp_path: Path) -> Path:
        raise NotImplementedError

    def make_invalid_pack(self, tmp_path: Path) -> Path:
        raise NotImplementedError

    # -- the checks ------------------------------------------------------------------------
    def test_registers_format(self, agentpack_host: Host) -> None:
        info = agentpack_host.formats().get(self.format_name)
        assert info is not None, f"format {self.format_name!r} not registered"
        assert info.plugin == self.plugin_name

    def test_detects_its_pack(self, agentpack_host: Host, tmp_path: Path) -> None:
        detection = agentpack_host.detect(self.make_valid_pack(tmp_path))
        assert detection is not None and detection.format == self.format_name

    def test_ignores_foreign_paths(self, agentpack_host: Host, tmp_path: Path) -> None:
        empty = tmp_path / "empty"
        empty.mkdir()
        (tmp_path / "note.txt").write_text("hello\n")
        for path in (empty, tmp_path / "note.txt"):
            assert all(d.format != self.format_name for d in agentpack_host.detect_all(path))

    def test_loads_pack(self, agentpack_host: Host, tmp_path: Path) -> None:
        pack = agentpack_host.load(self.make_valid_pack(tmp_path))
        assert pack.format == self.format_name
        assert pack.root.exists()

    def test_valid_pack_has_no_errors(self, agentpack_host: Host, tmp_path: Path) -> None:
        pack = agentpack_host.load(self.make_valid_pack(tmp_path))
        errors = [f for f in agentpack_host.validate(pack) if f.severity == "error"]
        assert errors == []

    def test_invalid_pack_has_located_errors(self, agentpack_host: Host, tmp_path: Path) -> None:
        from agentpack.io.errors import PackError

        path = self.make_invalid_pack(tmp_path)
        try:
            findings = agentpack_host.validate(agentpack_host.load(path, self.format_name))
        except PackError as exc:  # unreadable packs are reported with a location too
            assert exc.file
            return
        errors = [f for f in findings if f.severity == "error"]
        assert errors, "the invalid pack produced no error"
        for f in errors:
            assert f.code and f.message and f.file, f"finding lacks code, message or file: {f}"

    def test_cli_exit_codes(self, agentpack_host: Host, tmp_path: Path) -> None:
        ok = run_cli(["validate", "-o", "json", str(self.make_valid_pack(tmp_path / "a"))])
        assert ok.exit_code == 0, ok.stdout + ok.stderr
        assert ok.json()["ok"] is True
        bad = run_cli(
            ["validate", "--format", self.format_name, "-o", "json", str(self.make_invalid_pack(tmp_path / "b"))]
        )
        assert bad.exit_code == 1, bad.stdout + bad.stderr
        assert bad.json()["ok"] is False

    def test_checks_leave_foreign_packs_alone(self, agentpack_host: Host, register_plugin: Any, tmp_path: Path) -> None:
        """This plugin's ``agentpack_check`` on packs it does not own: a list of findings or ``None``, never a crash.

        The packs: one of a format this kit registers (with a SKILL.md, as many formats have), a plain
        Agent Skill, and the valid pack of every other format whose conformance class this session collected.
        """
        from agentpack.kernel.host import _findings

        register_plugin(_ForeignFormat(), name="conformance-foreign")
        packs = [_ForeignFormat.make(tmp_path / "foreign"), _plain_skill(tmp_path / "plain-skill")]
        for cls in _conformance_classes():
            if cls.format_name not in (self.format_name, "") and cls.format_name in agentpack_host.formats():
                packs.append(cls().make_valid_pack(tmp_path / f"other-{cls.__name__}"))
        mine = [i for i in agentpack_host.pm.hook.agentpack_check.get_hookimpls() if i.plugin_name == self.plugin_name]
        for path in packs:
            pack = agentpack_host.load(path)
            if pack.format == self.format_name:
                continue
            for strict in (False, True):
                args = {"pack": pack, "strict": strict, "host": agentpack_host}
                for impl in mine:
                    try:
                        result = impl.function(**{name: args[name] for name in impl.argnames})
                    except Exception as exc:
                        pytest.fail(f"agentpack_check of {self.plugin_name} crashed on a {pack.format} pack: {exc!r}")
                    _findings(result, self.plugin_name, "agentpack_check")

    def test_query_and_evaluate_answer_the_core_types(self, agentpack_host: Host, tmp_path: Path) -> None:
        from agentpack.kernel.models import EvalOptions, EvalReport
        from agentpack.kernel.packtypes import QueryRequest, QueryResponse

        pack = agentpack_host.load(self.make_valid_pack(tmp_path))
        if self.query_question is None and not self.evaluates_offline:
            pytest.skip("the format answers no queries and has no offline evaluations")
        if self.query_question is not None:
            assert isinstance(agentpack_host.query(pack, QueryRequest(question=self.query_question)), QueryResponse)
        if self.evaluates_offline:
            assert isinstance(agentpack_host.evaluate(pack, EvalOptions()), EvalReport)

    def test_every_reporter_renders_its_findings(self, agentpack_host: Host, tmp_path: Path) -> None:
        """Validation findings (and offline evaluation results) of this format through every registered reporter."""
        from agentpack.io.errors import PackError
        from agentpack.kernel.models import EvalOptions, Report, ValidationItem

        items = []
        for path in (self.make_valid_pack(tmp_path / "valid"), self.make_invalid_pack(tmp_path / "invalid")):
            try:
                pack = agentpack_host.load(path, self.format_name)
            except PackError:
                continue
            items.append(
                ValidationItem(path=str(path), format=self.format_name, findings=agentpack_host.validate(pack))
            )
        evaluations = []
        if self.evaluates_offline:
            pack = agentpack_host.load(self.make_valid_pack(tmp_path / "evaluated"))
            evaluations.append(agentpack_host.evaluate(pack, EvalOptions()))
        report = Report(command="validate", items=items, evaluations=evaluations)
        for name, reporter in agentpack_host.reporters().items():
            text = reporter.render(report)
            assert isinstance(text, str) and text.strip(), f"reporter {name!r} rendered nothing"

    def test_plugin_module_imports_light(self) -> None:
        if not self.module:
            pytest.skip("no entry-point module named")
        code = (
            f"import sys, {self.module}; heavy = [m for m in ('pydantic', 'jsonschema', 'numpy', 'httpx', "
            "'rich', 'mcp') if m in sys.modules]; print(','.join(heavy))"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        assert out == "", f"importing {self.module} pulls in heavy modules: {out}"


def _conformance_classes() -> list[type[FormatPluginConformance]]:
    found: list[type[FormatPluginConformance]] = []
    pending = list(FormatPluginConformance.__subclasses__())
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def _plain_skill(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "SKILL.md").write_text("---\nname: plain-skill\ndescription: A plain Agent Skill.\n---\nBody.\n")
    return root


class _ForeignFormat:
    """A format no real plugin knows, for the kit's foreign-pack check: a folder with FOREIGN.txt (and a SKILL.md)."""

    format = "conformance-foreign"

    @staticmethod
    def make(root: Path) -> Path:
        root.mkdir(parents=True)
        (root / "FOREIGN.txt").write_text("not yours\n")
        (root / "SKILL.md").write_text("---\nname: foreign\ndescription: A pack of a format you do not own.\n---\n")
        return root

    @hookimpl
    def agentpack_register_formats(self, register: Callable[[Any], None]) -> None:
        from agentpack.kernel.registry import FormatInfo

        register(FormatInfo(name=self.format, title="A format of the conformance kit"))

    @hookimpl
    def agentpack_detect(self, path: Path) -> Any:
        from agentpack.kernel.packtypes import Detection

        return Detection(format=self.format, confidence=1.0) if (path / "FOREIGN.txt").is_file() else None

    @hookimpl
    def agentpack_load(self, path: Path, format: str) -> Any:
        from agentpack.kernel.packtypes import Pack

        return Pack(path=path, root=path, format=format, name=path.name, data=object())

    @hookimpl
    def agentpack_validate(self, pack: Any, strict: bool) -> list[Any]:
        return []
