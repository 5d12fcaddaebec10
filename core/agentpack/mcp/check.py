"""``agentpack mcp check``: the server rules of the Skills extension (SEP-2640), run against any MCP server.

Each broken rule is a ``Finding`` with a stable code, located at the server and the skill URI it concerns
(``file``: ``mcp:LABEL:URI``) and the JSON pointer inside the result the server sent:

- MCS001 the extension is not declared; MCS002 it is, without the ``resources`` capability
- MCS010 ``skills/list`` fails; MCS011 a result lacks ``resultType: "complete"``, ``ttlMs`` or ``cacheScope``;
  MCS012 pagination never ends (a cursor comes back)
- MCS020 an entry's shape (``uri``, ``frontmatter.name``/``description``); MCS021 the URI is not a SKILL.md
  whose last path segment is the name; MCS022 the name breaks the Agent Skills naming rules
- MCS030 an incomplete or malformed manifest (``resources`` missing, a file outside the skill, listed twice,
  the SKILL.md itself missing); MCS031 a digest or size of the wrong form; MCS035 ``resources/list`` serves a
  file of the skill its manifest leaves out
- MCS032 a size, MCS033 a digest that does not match the bytes ``resources/read`` returns; MCS034 frontmatter
  that is not the SKILL.md's, verbatim; MCS036 a listed file that cannot be read
- MCS040 ``skills/get`` of a listed skill fails or disagrees with the listing; MCS041 ``skills/get``,
  MCS042 ``resources/read`` of something not served answer other than -32602; MCS043 ``directoryRead``
  declared but ``resources/directory/read`` misbehaves (fails, leaves out a child, a subdirectory not
  ``inode/directory``, a file read as a directory); MCS044 the SKILL.md resource's ``mimeType``, ``name`` or
  ``description`` in ``resources/list`` is not ``text/markdown`` and the frontmatter's (warning)
- MCS050 a skill beyond the limits (512 files, 16 MiB: warning); MCS051 two skills share a name (warning)
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from agentpack.mcp.client import (
    EXTENSION,
    INVALID_PARAMS,
    Connection,
    McpCallError,
    PaginationError,
    ServerSpec,
    connect,
)
from agentpack.mcp.entries import SkillEntry, frontmatter_differences, frontmatter_of, parse_entry

if TYPE_CHECKING:
    from agentpack.kernel.models import Finding, Severity

PROBE = "agentpack-check-not-served"


class Checker:
    """The rules, run over one open connection; ``findings`` collects what breaks them."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.spec = connection.spec
        self.findings: list[Finding] = []

    def add(
        self, severity: Severity, code: str, message: str, uri: str | None = None, pointer: str | None = None
    ) -> None:
        from agentpack.kernel.models import Finding

        where = f"{self.spec.origin}:{uri}" if uri else self.spec.origin
        self.findings.append(Finding(severity=severity, code=code, message=message, file=where, pointer=pointer))

    async def run(self) -> list[Finding]:
        caps = self.connection.capabilities
        settings = (caps.get("extensions") or {}).get(EXTENSION)
        if not isinstance(settings, dict):
            self.add(
                "error",
                "MCS001",
                f"the server does not declare the extension {EXTENSION}",
                pointer="/capabilities/extensions",
            )
            return self.findings
        if "resources" not in caps:
            self.add(
                "error",
                "MCS002",
                "the server declares the Skills extension without the 'resources' capability",
                pointer="/capabilities/resources",
            )
        entries = await self.listing()
        await self.error_codes(entries)
        served = await self.served_resources() if "resources" in caps else None
        names = Counter(entry.name for entry in entries)
        for entry in entries:
            if names[entry.name] > 1:
                self.add(
                    "warning",
                    "MCS051",
                    f"{names[entry.name]} skills are named '{entry.name}': names should be unique in a listing",
                    entry.uri,
                    "/frontmatter/name",
                )
            await self.skill(entry, served, bool(settings.get("directoryRead")))
        return self.findings

    async def listing(self) -> list[SkillEntry]:
        entries: list[SkillEntry] = []
        page_number = 0
        try:
            async for page in self.connection.pages("skills/list", "skills"):
                page_number += 1
                self.cacheable(page, f"skills/list (page {page_number})")
                for i, raw in enumerate(page["skills"]):
                    entries += self.entry(raw, f"skills/list page {page_number} /skills/{i}")
                if len({entry.uri for entry in entries}) < len(entries):
                    self.add("error", "MCS012", f"skills/list page {page_number} repeats an entry of an earlier one")
                    break
        except PaginationError as exc:
            self.add("error", "MCS012", exc.detail, pointer="/nextCursor")
        except McpCallError as exc:
            self.add("error", "MCS010", exc.detail)
        return entries

    def entry(self, raw: Any, where: str) -> list[SkillEntry]:
        entry, problems = parse_entry(raw)
        uri = raw.get("uri") if isinstance(raw, dict) and isinstance(raw.get("uri"), str) else None
        for p in problems:
            self.add(p.severity, p.code, f"{where}: {p.message}", uri, p.pointer or None)
        return [entry] if entry is not None else []

    def cacheable(self, result: dict[str, Any], what: str) -> None:
        if result.get("resultType") != "complete":
            self.add("error", "MCS011", f"{what}: 'resultType' must be \"complete\"", pointer="/resultType")
        ttl = result.get("ttlMs")
        if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 0:
            self.add("error", "MCS011", f"{what}: 'ttlMs' is required (a non-negative integer)", pointer="/ttlMs")
        if not isinstance(result.get("cacheScope"), str):
            self.add("error", "MCS011", f"{what}: 'cacheScope' is required", pointer="/cacheScope")

    async def served_resources(self) -> dict[str, dict[str, Any]] | None:
        """What ``resources/list`` serves, by URI (None when the server does not list resources)."""
        try:
            served: dict[str, dict[str, Any]] = {}
            async for page in self.connection.pages("resources/list", "resources"):
                served |= {
                    r["uri"]: r for r in page["resources"] if isinstance(r, dict) and isinstance(r.get("uri"), str)
                }
        except McpCallError:
            return None  # resources/list is optional for a skill server: completeness is then checked by reads only
        return served

    async def error_codes(self, entries: list[SkillEntry]) -> None:
        prefix = entries[0].root if entries else f"skill://{PROBE}"
        await self.expect_invalid_params(
            "skills/get", {"uri": f"skill://{PROBE}/SKILL.md"}, "MCS041", "a skill it does not serve"
        )
        await self.expect_invalid_params(
            "resources/read", {"uri": f"{prefix}/{PROBE}.md"}, "MCS042", "a file it does not serve"
        )

    async def expect_invalid_params(self, method: str, params: dict[str, Any], code: str, what: str) -> None:
        try:
            await self.connection.request(method, params)
        except McpCallError as exc:
            if exc.code != INVALID_PARAMS:
                shown = "no JSON-RPC error" if exc.code is None else f"error {exc.code}"
                self.add(
                    "error", code, f"{method} of {what} answers {shown}, not -32602 (Invalid params)", params["uri"]
                )
            return
        self.add(
            "error", code, f"{method} of {what} succeeds; it must fail with -32602 (Invalid params)", params["uri"]
        )

    async def skill(self, entry: SkillEntry, served: dict[str, dict[str, Any]] | None, directory_read: bool) -> None:
        await self.get(entry)
        if entry.files is None:
            self.add(
                "info",
                "MCS030",
                'resources are "dynamic": hosts cannot verify the skill and may decline it',
                entry.uri,
                "/resources",
            )
        else:
            await self.files(entry)
            if served is not None:
                listed = {f.uri for f in entry.files}
                for uri in served:
                    if uri.startswith(entry.root + "/") and uri not in listed:
                        self.add(
                            "error",
                            "MCS035",
                            f"resources/list serves {uri}, a file of the skill its manifest does not list",
                            entry.uri,
                            "/resources",
                        )
            if served is not None and entry.uri in served:
                self.metadata(entry, served[entry.uri])
        if directory_read:
            await self.directory(entry)

    def metadata(self, entry: SkillEntry, resource: dict[str, Any]) -> None:
        """The SHOULDs of the SKILL.md resource's metadata (``resources/list``): warnings."""
        expected = {
            "mimeType": "text/markdown",
            "name": entry.frontmatter.get("name"),
            "description": entry.frontmatter.get("description"),
        }
        for field, value in expected.items():
            if resource.get(field) != value:
                self.add(
                    "warning",
                    "MCS044",
                    f"resources/list gives the SKILL.md {field} {resource.get(field)!r}; it should be {value!r}",
                    entry.uri,
                    f"/{field}",
                )

    async def get(self, entry: SkillEntry) -> None:
        try:
            result = await self.connection.request("skills/get", {"uri": entry.uri})
        except McpCallError as exc:
            self.add("error", "MCS040", f"skills/get of a listed skill fails: {exc.detail}", entry.uri)
            return
        self.cacheable(result, f"skills/get {entry.uri}")
        got, _ = parse_entry(result.get("skill"))
        if got is None or got != entry:
            self.add(
                "error",
                "MCS040",
                "skills/get returns another entry than skills/list for the skill",
                entry.uri,
                "/skill",
            )

    async def files(self, entry: SkillEntry) -> None:
        from agentpack.io.hashing import sha256_bytes

        for i, listed in enumerate(entry.files or ()):
            try:
                data, _ = await self.connection.read(listed.uri)
            except McpCallError as exc:
                self.add("error", "MCS036", f"a listed file cannot be read: {exc.detail}", listed.uri)
                continue
            if len(data) != listed.size:
                self.add(
                    "error",
                    "MCS032",
                    f"resources/read returns {len(data)} bytes; the manifest says {listed.size}",
                    entry.uri,
                    f"/resources/{i}/size",
                )
            digest = f"sha256:{sha256_bytes(data)}"
            if digest != listed.digest:
                self.add(
                    "error",
                    "MCS033",
                    f"resources/read of {listed.uri} returns bytes that hash to {digest}; "
                    f"the manifest says {listed.digest}",
                    entry.uri,
                    f"/resources/{i}/digest",
                )
            if listed.uri == entry.uri:
                self.frontmatter(entry, data)

    def frontmatter(self, entry: SkillEntry, data: bytes) -> None:
        from agentpack.io.errors import PackError

        try:
            fetched = frontmatter_of(data, file=entry.uri)
        except PackError as exc:
            self.add(
                "error", "MCS034", f"the SKILL.md has no readable frontmatter: {exc.message}", entry.uri, "/frontmatter"
            )
            return
        for key in frontmatter_differences(entry.frontmatter, fetched):
            if key not in fetched:
                what = "is not in the SKILL.md"
            elif key not in entry.frontmatter:
                what = "is left out of the entry"
            else:
                what = f"is {entry.frontmatter[key]!r} in the entry, {fetched[key]!r} in the SKILL.md"
            self.add(
                "error",
                "MCS034",
                f"frontmatter field '{key}' {what}: it must be verbatim",
                entry.uri,
                f"/frontmatter/{key}",
            )

    async def directory(self, entry: SkillEntry) -> None:
        children: dict[str, Any] = {}
        try:
            async for page in self.connection.pages("resources/directory/read", "resources", {"uri": entry.root}):
                if page.get("resultType") != "complete":
                    self.add(
                        "error", "MCS043", "resources/directory/read: 'resultType' must be \"complete\"", entry.root
                    )
                children |= {str(c.get("uri")): c.get("mimeType") for c in page["resources"] if isinstance(c, dict)}
        except McpCallError as exc:
            self.add(
                "error",
                "MCS043",
                f"directoryRead is declared but reading the skill's root fails: {exc.detail}",
                entry.root,
            )
        else:
            self.direct_children(entry, children)
        await self.expect_invalid_params(
            "resources/directory/read", {"uri": entry.uri}, "MCS043", "a file, not a directory"
        )

    def direct_children(self, entry: SkillEntry, children: dict[str, Any]) -> None:
        """Every direct child the manifest implies is listed, a subdirectory as ``inode/directory``."""
        expected: dict[str, bool] = {}
        for listed in entry.files or ():
            head, _, rest = listed.uri[len(entry.root) + 1 :].partition("/")
            expected[f"{entry.root}/{head}"] = expected.get(f"{entry.root}/{head}", False) or bool(rest)
        for uri, is_directory in expected.items():
            if uri not in children:
                self.add(
                    "error", "MCS043", f"resources/directory/read of the skill's root does not list {uri}", entry.root
                )
            elif is_directory and children[uri] != "inode/directory":
                self.add(
                    "error",
                    "MCS043",
                    f"resources/directory/read lists the subdirectory {uri} as {children[uri]!r}, "
                    "not 'inode/directory'",
                    entry.root,
                )


def check_server(spec: ServerSpec, target: Any = None) -> list[Finding]:
    """Run every rule against the server ``spec`` names (``target``: connect there instead; tests)."""
    import anyio

    async def main() -> list[Finding]:
        async with connect(spec, target) as connection:
            return await Checker(connection).run()

    return anyio.run(main)
