"""Rules about the code base itself: hooks documented and tested; the core and plugins keep apart."""

import ast
import inspect
import itertools
import re
from pathlib import Path

import pytest

from agentpack.kernel import hookspecs

ROOT = Path(__file__).parents[2]
HOOKS = sorted(name for name, _ in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("agentpack_"))


def test_hooks_are_prefixed():
    assert HOOKS and all(h.startswith("agentpack_") for h in HOOKS)


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_documented(hook):
    docs = (ROOT / "docs" / "plugin-hooks.md").read_text()
    assert f"### {hook}\n" in docs, f"{hook} has no section in docs/plugin-hooks.md"
    signature = re.search(rf"### {hook}\n\n```python\ndef {hook}\((.*?)\)", docs, re.S)
    assert signature, f"{hook} section lacks its signature"
    parsed = ast.parse(f"def f({signature.group(1)}): pass").body[0]
    documented = [a.arg for a in parsed.args.args]
    assert documented == list(inspect.signature(getattr(hookspecs, hook)).parameters)


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_tested(hook):
    assert f"def test_{hook}(" in (ROOT / "tests" / "core" / "test_hooks.py").read_text()


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_docstring(hook):
    assert (getattr(hookspecs, hook).__doc__ or "").strip()


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.lineno, node.module)] + [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))  # dynamic imports count too
    return found


def test_core_never_imports_a_plugin():
    offenders = [
        f"{p.relative_to(ROOT)}:{line} imports {name}"
        for p in (ROOT / "core").rglob("*.py")
        for line, name in _imports(p)
        if name.startswith("agentpack_")
    ]
    assert offenders == []


PLUGIN_PACKAGES = sorted(p.parent for p in (ROOT / "plugins").glob("*/agentpack_*/__init__.py"))


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@pytest.mark.parametrize("package", PLUGIN_PACKAGES, ids=lambda p: p.name)
def test_plugins_import_only_public_agentpack_api_and_no_other_plugin(package):
    offenders = []
    for path in package.rglob("*.py"):
        for line, name in _imports(path):
            where = f"{path.relative_to(ROOT)}:{line}"
            parts = name.split(".")
            if parts[0] == "agentpack" and any(_private(part) for part in parts[1:]):
                offenders.append(f"{where} uses private {name}")
            if parts[0] == "agentpack" and len(parts) > 1 and parts[1] in {"builtin", "cli_internal"}:
                offenders.append(f"{where} uses core internals {name}")
            if parts[0].startswith("agentpack_") and parts[0] != package.name:
                offenders.append(f"{where} imports another plugin: {name}")
    assert offenders == []


def test_plugin_distributions_depend_on_core_not_the_unrelated_pypi_name():
    import tomllib

    for pyproject in [ROOT / "pyproject.toml", *sorted((ROOT / "plugins").glob("*/pyproject.toml"))]:
        data = tomllib.loads(pyproject.read_text())
        deps = data["project"].get("dependencies", []) + [
            d for group in data["project"].get("optional-dependencies", {}).values() for d in group
        ]
        names = {re.split(r"[ <>=\[;!~]", d, maxsplit=1)[0].lower() for d in deps}
        assert "agentpack" not in names, f"{pyproject} depends on the unrelated PyPI project 'agentpack'"
    for pyproject in sorted((ROOT / "plugins").glob("*/pyproject.toml")):
        data = tomllib.loads(pyproject.read_text())
        assert any(d.startswith("agentpack-core") for d in data["project"]["dependencies"])
        assert next(iter(data["project"]["entry-points"]["agentpack"].values())).endswith(".plugin")


def _schema_packages():
    packages = [("agentpack.kernel", ROOT / "core" / "agentpack" / "kernel" / "schemas")]
    packages += [(p.name, p / "schemas") for p in PLUGIN_PACKAGES if (p / "schemas").is_dir()]
    return packages


@pytest.mark.parametrize("package,folder", _schema_packages(), ids=lambda v: str(v).rsplit("/", 1)[-1])
def test_every_bundled_schema_is_valid_draft_2020_12(package, folder):
    """Run time skips the meta-schema check for speed, so it happens here for every bundled schema."""
    from agentpack.kernel.schemas import SchemaStore

    store = SchemaStore()
    store.add_directory(folder)
    store.check()


def test_one_version_source():
    """core/agentpack/VERSION is the version of every distribution: no pyproject or module repeats it."""
    import tomllib
    from importlib.metadata import version

    import agentpack

    source = (ROOT / "core" / "agentpack" / "VERSION").read_text().strip()
    assert agentpack.__version__ == source
    for pyproject in [ROOT / "pyproject.toml", *sorted((ROOT / "plugins").glob("*/pyproject.toml"))]:
        project = tomllib.loads(pyproject.read_text())["project"]
        assert "version" not in project and "version" in project["dynamic"], pyproject
        assert version(project["name"]) == source, project["name"]
    for link in sorted((ROOT / "plugins").glob("*/VERSION")):
        assert link.is_symlink() and link.resolve() == (ROOT / "core" / "agentpack" / "VERSION").resolve()
    literal = re.compile(r"^__version__\s*=\s*['\"]", re.M)
    assert [p for p in ROOT.glob("plugins/*/agentpack_*/__init__.py") if literal.search(p.read_text())] == []


@pytest.mark.parametrize("package", [ROOT / "core" / "agentpack", *PLUGIN_PACKAGES], ids=lambda p: p.name)
def test_typed_packages_ship_py_typed(package):
    assert (package / "py.typed").is_file()


PLUGIN_DOCS = {"agentpack_ecp": "ecp", "agentpack_agent_rpc": "agent-rpc", "agentpack_dci": "dci"}
PLUGIN_DOCS |= {"agentpack_openexperts": "openexperts", "agentpack_skillctl": "skillctl"}


def _plugin_hookspecs():
    """(package, function) for every hook a plugin defines for other plugins (its ``hookspecs`` module)."""
    import importlib

    found = []
    for package in PLUGIN_PACKAGES:
        if (package / "hookspecs.py").is_file():
            module = importlib.import_module(f"{package.name}.hookspecs")
            found += [(package.name, f) for name, f in vars(module).items() if name.startswith("agentpack_")]
    return found


@pytest.mark.parametrize("package,hook", _plugin_hookspecs(), ids=lambda v: getattr(v, "__name__", v))
def test_every_plugin_hook_is_named_typed_and_documented(package, hook):
    """Plugin hookspecs follow the core's rules: the core's marker, a prefix, types, a docstring, a docs entry."""
    import importlib

    from agentpack.kernel.hookspecs import hookspec

    prefix = f"agentpack_{package.removeprefix('agentpack_')}_"
    assert hook.__name__.startswith(prefix), f"{hook.__name__} should start with {prefix}"
    assert hasattr(hook, f"{hookspec.project_name}_spec"), f"{hook.__name__} is not marked as a hookspec"
    module = importlib.import_module(hook.__module__)
    assert getattr(module, "hookspec", hookspec) is hookspec, f"{hook.__module__} makes its own marker"
    assert inspect.getdoc(hook), f"{hook.__name__} has no docstring"
    signature = inspect.signature(hook)
    untyped = [p.name for p in signature.parameters.values() if p.annotation is inspect.Parameter.empty]
    assert untyped == [] and signature.return_annotation is not inspect.Signature.empty, hook.__name__
    assert hook.__name__ in (ROOT / "docs" / f"{PLUGIN_DOCS[package]}.md").read_text()


SPAWNERS = {"run", "Popen", "call", "check_call", "check_output", "system", "create_subprocess_exec"}
SPAWNERS |= {"create_subprocess_shell", "spawnv", "spawnvp", "execv", "execvp", "which", "with_name"}


def _spawns_the_cli(source: str, filename: str = "<plugin>") -> list[int]:
    """Lines where code reaches the ``agentpack`` command line: a process call (or an executable lookup)
    naming ``agentpack`` as its program, ``-m agentpack``, or a shell command starting ``agentpack ``."""
    lines = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call) or getattr(node.func, "attr", getattr(node.func, "id", None)) not in SPAWNERS:
            continue
        for arg in ast.walk(node):
            if not isinstance(arg, ast.Constant) or not isinstance(arg.value, str):
                continue
            if arg.value.split()[:1] == ["agentpack"] or "-m agentpack" in arg.value:
                lines.append(node.lineno)
        for seq in ast.walk(node):
            items = getattr(seq, "elts", None) if isinstance(seq, (ast.List, ast.Tuple)) else None
            values = [getattr(e, "value", None) for e in items or ()]
            if any(a == "-m" and b == "agentpack" for a, b in itertools.pairwise(values)):
                lines.append(node.lineno)
    return sorted(set(lines))


def test_the_spawn_check_catches_the_side_doors():
    """The old openexperts fallback, and the other ways to start the command line, are caught."""
    side_doors = [
        'exe = Path(sys.executable).with_name("agentpack")',
        'subprocess.run([shutil.which("agentpack") or "agentpack", "skill", "run", path])',
        'subprocess.run([sys.executable, "-m", "agentpack", "skill", "run"])',
        'os.system("agentpack skill run skills/x")',
        'asyncio.create_subprocess_exec("agentpack", "validate", str(path))',
    ]
    assert [_spawns_the_cli(code) for code in side_doors] == [[1]] * len(side_doors)
    fine = ['subprocess.run([sys.executable, "-c", "import agentpack"])', 'print("run agentpack validate")']
    assert [_spawns_the_cli(code) for code in fine] == [[], []]


def _source_offenders(package: Path, check) -> list[str]:
    """``file:place`` for each place ``check(source, filename)`` names in the modules of ``package``."""
    return [f"{p.relative_to(ROOT)}:{where}" for p in package.rglob("*.py") for where in check(p.read_text(), str(p))]


@pytest.mark.parametrize("package", PLUGIN_PACKAGES, ids=lambda p: p.name)
def test_no_plugin_spawns_the_agentpack_command_line(package):
    """Plugins reach each other through the host (``Host.invoke``, ``Host.query``...), never a CLI process."""
    offenders = _source_offenders(package, _spawns_the_cli)
    assert offenders == [], "these start the agentpack command line; call the host instead"


def _untyped_hookimpls(source: str, filename: str) -> list[str]:
    """``name:line`` of each ``@hookimpl`` function with a parameter (other than ``self``) or return left untyped."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if not any(getattr(d, "id", getattr(d, "attr", None)) == "hookimpl" for d in node.decorator_list):
            continue
        args = [a for a in node.args.args + node.args.kwonlyargs if a.arg != "self"]
        if node.returns is None or any(a.annotation is None for a in args):
            found.append(f"{node.name}:{node.lineno}")
    return found


def test_the_hookimpl_type_check_catches_untyped_ones():
    code = "@hookimpl\ndef agentpack_detect(path):\n    pass\n\n@hookimpl\ndef agentpack_load(path: Path) -> None: ..."
    assert _untyped_hookimpls(code, "x.py") == ["agentpack_detect:2"]


@pytest.mark.parametrize("package", PLUGIN_PACKAGES, ids=lambda p: p.name)
def test_every_plugin_hook_implementation_is_typed(package):
    assert _source_offenders(package, _untyped_hookimpls) == []
