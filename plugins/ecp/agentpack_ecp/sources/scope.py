"""``scope.include``/``scope.exclude`` of a source, with gitignore semantics (``pathspec``)."""

from __future__ import annotations


class Scope:
    """``scope.include``/``scope.exclude`` with gitignore semantics (``pathspec``).

    No ``include`` means everything; ``exclude`` wins over ``include``.
    """

    def __init__(self, include: list[str] | None, exclude: list[str] | None) -> None:
        import pathspec

        self.include = list(include or [])
        self.exclude = list(exclude or [])
        self._inc = pathspec.GitIgnoreSpec.from_lines(self.include) if self.include else None
        self._exc = pathspec.GitIgnoreSpec.from_lines(self.exclude) if self.exclude else None

    def excludes_dir(self, path: str) -> bool:
        """True when every file under directory ``path`` is excluded (gitignore: no re-include below it)."""
        return self._exc is not None and self._exc.match_file(path.rstrip("/") + "/")

    def matches(self, path: str) -> bool:
        if self._inc is not None and not self._inc.match_file(path):
            return False
        return not (self._exc is not None and self._exc.match_file(path))
