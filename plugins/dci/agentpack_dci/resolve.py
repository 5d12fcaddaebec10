"""The resolver: discovery -> contracts -> scores -> policy -> selection -> on-missing-required -> report.

A ``Resolver`` holds the workspace's indexes and caches, so repeated
resolutions (an MCP server, a benchmark, a library caller) reuse them; its
results never depend on what is cached.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io.clock import SYSTEM_CLOCK, Clock, IdSource, random_ids
from agentpack.io.errors import AgentpackError

from .aliases import AliasResolver, load_resolver
from .config import BUILTIN_RUNTIMES, load_config, state_root
from .discovery import Discovery, SkillCache, discover
from .grammar import PARSER_VERSION
from .index import Corpus, forget_similarities
from .model import Outcome, Resolution, ResolveRequest
from .policy import STRICTNESS, EffectivePolicy, PolicyError, parse_pairs, resolve_policy
from .probes import DECISIONS, EmulationRequest, Probe, ProbeRunner
from .reliability import ReliabilityStore
from .scoring import Query, score
from .selection import Selection, Selector
from .text import forget_stems, tokenize
from .tokens import token_hint, token_problem

if TYPE_CHECKING:
    from agentpack.kernel.host import Host

Decider = Callable[[EmulationRequest], "str | None"]


@contextmanager
def gc_paused():
    """Pause the cyclic garbage collector while a scan builds thousands of acyclic records.

    Each collection would walk the growing heap again (about 15 % of a cold 10,000-skill scan). The
    previous state is restored on exit; when the collector is already off (another scan, or the host
    turned it off) this changes nothing.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def clear_memos() -> None:
    """Forget the process-wide memos (Porter stems, Jaro-Winkler pairs): a cold start, for benchmarks."""
    forget_stems()
    forget_similarities()


def _check_capabilities(values: list[str], what: str) -> list[str]:
    out = []
    for value in values:
        value = value.strip()
        problem = token_problem(value)
        if problem:
            raise AgentpackError(
                f"{what} capability '{value}' {problem}",
                hint=token_hint(value),
            )
        out.append(value)
    return list(dict.fromkeys(out))


class Resolver:
    """Resolutions over one workspace.

    ``host`` is the plugin host whose dci hooks are consulted (runtime skill
    roots, probes, the offer-emulation decision); without one, none are.
    ``probes`` replaces the probes the hooks would register.
    """

    def __init__(
        self,
        workspace: str | Path,
        *,
        skills_roots: tuple[str | Path, ...] = (),
        aliases_file: str | Path | None = None,
        host: Host | None = None,
        clock: Clock = SYSTEM_CLOCK,
        run_ids: IdSource | None = None,
        ephemeral_history: bool = False,
        probes: list[Probe] | None = None,
    ) -> None:
        self.workspace = Path(workspace).resolve()
        if not self.workspace.is_dir():
            raise AgentpackError(f"workspace is not a directory: {workspace}")
        self.host = host
        self.clock = clock
        self.run_ids = run_ids or random_ids()
        self.config = load_config(self.workspace)
        self.aliases: AliasResolver = load_resolver(self.workspace, Path(aliases_file) if aliases_file else None)
        self.skills_roots = tuple(skills_roots)
        self.runtime_roots = self._hook_roots()
        self.probe_list = list(probes) if probes is not None else self._hook_probes()
        self.history = ReliabilityStore(state_root(self.workspace), clock=clock, ephemeral=ephemeral_history)
        self.skill_cache = SkillCache()
        self.match_cache: dict = {}
        self.discovery, self.corpus = self._scan(None)

    # -- hooks -----------------------------------------------------------------------------------
    def _hook(self, name: str) -> Any:
        return getattr(self.host.pm.hook, name, None) if self.host is not None else None

    def _hook_roots(self) -> list[str | Path]:
        hook = self._hook("agentpack_dci_skill_roots")
        if hook is None:
            return []
        return [root for result in hook(workspace=self.workspace) if result for root in result]

    def _hook_probes(self) -> list[Probe]:
        hook = self._hook("agentpack_dci_register_probes")
        found: list[Probe] = []
        if hook is not None:
            hook(register=found.append)
        return found

    # -- indexes -----------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Re-scan the skill roots; re-parse only changed files; rebuild the index when the set changed."""
        self.discovery, self.corpus = self._scan(self.corpus)

    def _scan(self, corpus: Corpus | None) -> tuple[Discovery, Corpus]:
        with gc_paused():
            discovery = discover(
                self.workspace,
                self.config,
                runtime_roots=self.runtime_roots,
                external_roots=self.skills_roots,
                cache=self.skill_cache,
            )
            if corpus is None or corpus.fingerprint != discovery.fingerprint:
                corpus = Corpus(discovery.records, discovery.fingerprint)
        if len(self.match_cache) > 200_000:
            self.match_cache.clear()
        return discovery, corpus

    def find(self, skill: str) -> str:
        """A candidate id from an id, a skill name or a skill directory."""
        records = self.discovery.records
        path = Path(skill)
        if "::" in skill:
            hits = [r.id for r in records if r.id == skill]
        elif path.exists():
            real = path.resolve()
            hits = [r.id for r in records if r.directory.resolve() == real]
        else:
            hits = [r.id for r in records if r.name == skill]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            raise AgentpackError(
                f"no discovered skill matches '{skill}'", hint="give its id 'skill-name::skill-path' or its directory"
            )
        raise AgentpackError(f"'{skill}' matches several candidates: {', '.join(hits)}", hint="give the full id")

    # -- resolution ----------------------------------------------------------------------------
    def resolve(self, request: ResolveRequest, *, decide: Decider | None = None) -> Resolution:
        consumer = request.consumer
        required = list(request.required)
        optional = list(request.optional)
        consumer_pol: dict[str, Any] = {}
        if consumer is not None:
            required = [c.value for c in consumer.required] + required
            optional = [c.value for c in consumer.optional] + optional
            try:
                consumer_pol = parse_pairs(consumer.policy)
            except PolicyError as exc:
                raise AgentpackError(f"consumer contract Pol(...): {exc}") from None
        required = _check_capabilities(required, "required")
        optional = [c for c in _check_capabilities(optional, "optional") if c not in required]
        if not required and not optional:
            raise AgentpackError(
                "nothing to resolve: give at least one required or optional capability",
                hint="for example --require web-search",
            )
        mode = request.mode or (consumer.mode if consumer is not None else "best-effort")
        if mode not in ("strict", "best-effort"):
            raise AgentpackError(f"unknown mode '{mode}'; expected strict or best-effort")
        try:
            runtime_pol = parse_pairs(request.policy.items())
        except PolicyError as exc:
            raise AgentpackError(f"policy override: {exc}") from None
        policy = resolve_policy(mode, consumer_pol, runtime_pol)
        text = request.query if request.query is not None else " ".join([*required, *optional])
        query = Query(tuple(required), tuple(optional), text, tokenize(text), mode, request.runtime.strip().lower())
        self.history.reload()
        corpus = self.corpus
        table = score(
            corpus,
            query,
            self.aliases,
            parser_version=PARSER_VERSION,
            cache=self.match_cache,
            known_runtimes=BUILTIN_RUNTIMES | self.config.known_runtimes,
            multipliers=self._multipliers(corpus),
        )
        probes = ProbeRunner.from_list(self.probe_list)
        selector = Selector(corpus, query, table, policy, probes)
        selection = selector.run()
        outcome, selected = self._on_missing(request, policy, selection, decide)
        return Resolution(
            request,
            query,
            policy,
            self.discovery,
            corpus,
            table,
            selector,
            selection,
            outcome,
            selected,
            probes,
            self.history,
            self.aliases,
            self.run_ids(),
            self.clock.iso(),
            "query option" if request.query is not None else "capability ids",
        )

    def _multipliers(self, corpus: Corpus) -> list[float]:
        multipliers = [1.0] * corpus.size
        position = {r.id: i for i, r in enumerate(corpus.records)} if self.history.data["candidates"] else {}
        for cid in self.history.data["candidates"]:
            if cid in position:
                multipliers[position[cid]] = self.history.history(cid).multiplier
        return multipliers

    def _on_missing(
        self, request: ResolveRequest, policy: EffectivePolicy, selection: Selection, decide: Decider | None
    ) -> tuple[Outcome, list[int]]:
        action = policy.effective["on-missing-required"]
        for i in selection.selected:
            hinted = selection.hints.get(i)
            if hinted and hinted.on_missing and STRICTNESS[hinted.on_missing] > STRICTNESS[action]:
                action = hinted.on_missing
        missing = not selection.selected or bool(selection.unresolved)
        if not missing:
            return Outcome(action, "not-needed"), selection.selected
        unresolved = list(selection.unresolved)
        if action == "hard-fail":
            return Outcome(action, "failed"), []
        if action == "auto-emulate":
            return Outcome(action, "emulated", emulated=unresolved), selection.selected
        choice, source = self._decide(request, unresolved, selection, decide)
        if choice == "emulate":
            return Outcome(action, "emulated", choice, source, unresolved), selection.selected
        if choice == "continue-with-partial":
            return Outcome(action, "continued-partial", choice, source), selection.selected
        return Outcome(action, "aborted", "abort", source), []

    def _decide(
        self, request: ResolveRequest, unresolved: list[str], selection: Selection, decide: Decider | None
    ) -> tuple[str, str]:
        if request.decision is not None:
            if request.decision not in DECISIONS:
                raise AgentpackError(f"unknown decision '{request.decision}'; expected {', '.join(DECISIONS)}")
            return request.decision, "option"
        ask = EmulationRequest(tuple(unresolved), tuple(self.corpus.records[i].id for i in selection.selected))
        hook = self._hook("agentpack_dci_emulation_decision")
        answers: list[tuple[str, Decider]] = []
        if hook is not None:
            answers.append(("hook", lambda ask: hook(request=ask)))
        if decide is not None:
            answers.append(("prompt", decide))
        for source, answer in answers:
            choice = answer(ask)
            if choice is not None:
                if choice not in DECISIONS:
                    raise AgentpackError(f"the {source} answered '{choice}'; expected {', '.join(DECISIONS)}")
                return choice, source
        return "abort", "default (no decision available)"
