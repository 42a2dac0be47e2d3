"""Ship the winner: write a run's chosen candidate (default: its best) back into the agent
folder's source where each component lives (``studio apply``, Compare's *Apply to the
folder*), or hand it over as text files and a patch (Compare's *Download the best*).

:func:`plan_apply` reads, never writes: for each component the candidate changed, the literal
that holds it in the folder (:mod:`studio.projects.agent_source`, found by the text the run
started from), the new file texts and their unified diff; a component that cannot be written
(computed at run time, its file changed since the run started) is refused, naming the place,
and goes to an ``<agent>.<component>.txt`` file instead. :func:`apply_plan` writes the plan and
records it on the run (:class:`studio.model.applied.Applied`).

The browser never names a path: :func:`served_run_folder` allows only a run's own folder, and
only inside the folder ``studio ui --agents`` serves.
"""

from __future__ import annotations

import difflib
import io
import os
import re
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studio.engine.policies.pool import load_view
from studio.model.applied import Applied
from studio.model.errors import ConfigError, NotFoundError
from studio.model.records import Candidate, EventKind, Run
from studio.model.workflow import split_component
from studio.projects.agent_source import Found, SourceFolder
from studio.projects.served_agents import served_agents_dir
from studio.projects.source_literals import new_value, rewrite
from studio.store.seams import ApplyingStore


@dataclass(frozen=True)
class ComponentWrite:
    """One component the candidate changed, and where it goes."""

    key: str
    """The run's component key (``instruction``, ``helper.instruction``)."""
    agent: str
    """The agent it belongs to, by name (the root agent's name for an unqualified key)."""
    component: str
    text: str
    """The candidate's text."""
    found: Found | None = None
    refusal: str | None = None
    shared_with: tuple[str, ...] = ()
    """Other agents whose component is the same literal: they change too."""

    @property
    def text_file(self) -> str:
        """Where a refused component is written instead (:func:`text_file_name`)."""
        return text_file_name(self.agent, self.component)


def text_file_name(agent: str, component: str) -> str:
    """``<agent>.<component>.txt``, a plain file name whatever the agent is called."""
    return re.sub(r"[^\w.-]", "_", f"{agent}.{component}").lstrip(".") + ".txt"


@dataclass
class ApplyPlan:
    """What applying a candidate would change (nothing is written until :func:`apply_plan`)."""

    run_id: str
    candidate: Candidate
    folder: Path
    root_agent: str
    """The root agent's name (the folder's name when the source does not say it literally)."""
    writes: list[ComponentWrite] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    files: dict[Path, tuple[str, str]] = field(default_factory=dict)
    """Each rewritten file: (the text now, the text after)."""

    @property
    def refused(self) -> list[ComponentWrite]:
        return [w for w in self.writes if w.refusal is not None]

    @property
    def text_files(self) -> dict[str, str]:
        """The ``<agent>.<component>.txt`` files for the refused components."""
        return {w.text_file: w.text for w in self.refused}

    def patch(self) -> str:
        """The unified diff of every rewritten file, paths from the folder's parent
        (``my_agent/prompt.py``), as ``git apply`` and ``patch -p1`` take it there."""
        parts: list[str] = []
        for path, (old, new) in self.files.items():
            name = path.relative_to(self.folder.parent).as_posix()
            parts.extend(difflib.unified_diff(old.splitlines(keepends=True),
                                              new.splitlines(keepends=True),
                                              fromfile=f"a/{name}", tofile=f"b/{name}"))
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of "
                       "file\n" for line in parts)

    def lines(self) -> list[str]:
        """What the plan does, in words: each component's place, who shares it, each refusal."""
        said = []
        for w in self.writes:
            if w.found is not None:
                said.append(f"{w.key}: {w.found.where}")
                if w.shared_with:
                    said.append(f"  note: the same literal is also the {w.component} of "
                                f"agent{'s' if len(w.shared_with) > 1 else ''} "
                                f"{', '.join(w.shared_with)}, which therefore change"
                                f"{'s' if len(w.shared_with) == 1 else ''} too")
            else:
                said.append(f"{w.key}: not written into the source: {w.refusal}; the text goes "
                            f"to {w.text_file}")
        said.extend(f"{key}: unchanged from the run's start" for key in self.unchanged)
        return said


def plan_apply(store: ApplyingStore, run_id: str, *, candidate: int | None = None,
               folder: Path | None = None) -> ApplyPlan:
    """The plan to write candidate ``#candidate`` (default: the run's best) of ``run_id`` into
    ``folder`` (default: the agent folder the run was started from).

    Raises:
        ConfigError: the run has no agent folder and none is given, the folder is missing, the
            candidate does not exist, or the best is the seed itself (nothing to apply).
    """
    run = store.get_run(run_id)
    target = _folder(run, folder)
    chosen = _candidate(store, run, candidate)
    seed = seed_components(store, run)
    source = SourceFolder(target, package=Path(run.spec.agent_folder or target).name)
    plan = ApplyPlan(run_id, chosen, target, source.root_agent_name() or target.name)
    for key, text in chosen.components.items():
        if seed.get(key) == text:
            plan.unchanged.append(key)
            continue
        plan.writes.append(_write(source, key, text, seed.get(key, ""), plan.root_agent))
    _refuse_conflicts(plan)
    plan.files = _rewritten(plan)
    return plan


def _write(source: SourceFolder, key: str, text: str, seed: str, root: str) -> ComponentWrite:
    owner, component = split_component(key)
    agent = owner or root
    where = source.locate(owner, component, seed)
    if not isinstance(where, Found):
        return ComponentWrite(key, agent, component, text, refusal=where.reason)
    shared = tuple(sorted({c.name for c in source.sharing(where, component)} - {agent}))
    return ComponentWrite(key, agent, component, text, found=where, shared_with=shared)


def _refuse_conflicts(plan: ApplyPlan) -> None:
    """Two components held by one literal (agents sharing a constant) that the candidate gives
    different texts: neither is written, since one literal cannot hold both."""
    by_place: dict[Any, list[ComponentWrite]] = {}
    for w in plan.writes:
        if w.found is not None:
            by_place.setdefault(w.found.key, []).append(w)
    for group in by_place.values():
        if len({w.text for w in group}) < 2:
            continue
        names = " and ".join(w.key for w in group)
        for w in group:
            index = plan.writes.index(w)
            plan.writes[index] = ComponentWrite(
                w.key, w.agent, w.component, w.text,
                refusal=f"{names} share {w.found.where if w.found else 'one literal'} and the "
                        "candidate gives them different texts; one literal cannot hold both")


def _rewritten(plan: ApplyPlan) -> dict[Path, tuple[str, str]]:
    by_module: dict[Path, tuple[Any, dict[int, Any]]] = {}
    for w in plan.writes:
        if w.found is None:
            continue
        module, replacements = by_module.setdefault(w.found.module.path, (w.found.module, {}))
        replacements[id(w.found.node)] = new_value(w.found, w.component, w.text)
    files = {}
    for path, (module, replacements) in by_module.items():
        files[path] = (module.tree.code, rewrite(module, replacements))
    return files


def seed_components(store: ApplyingStore, run: Run) -> dict[str, str]:
    """The components as the folder had them when the run (or the run a fork started from)
    began: candidate #0 of the first run of a chain of forks."""
    while run.spec.forked_from is not None:
        try:
            run = store.get_run(run.spec.forked_from.run_id)
        except NotFoundError:  # the origin was deleted: the fork's own seed is all there is
            break
    seed = next((c for c in store.candidates(run.id) if c.index == 0), None)
    return dict(seed.components) if seed else {}


def _folder(run: Run, folder: Path | None) -> Path:
    chosen = folder or (Path(run.spec.agent_folder) if run.spec.agent_folder else None)
    if chosen is None:
        raise ConfigError(f"run {run.id}'s agent is not an agent folder's code (its project "
                          "file defines it): there is no source to write into. Download the "
                          "best from the Compare page, or give the folder with --to FOLDER",
                          where="--to", value=None)
    if not chosen.is_dir():
        raise ConfigError(f"agent folder not found: {chosen}", where="--to", value=str(chosen))
    return chosen.resolve()


def _candidate(store: ApplyingStore, run: Run, index: int | None) -> Candidate:
    candidates = store.candidates(run.id)
    if index is None:
        best_id = load_view(store, run.id).best_id
        chosen = next((c for c in candidates if c.id == best_id), None)
        if chosen is None:
            raise ConfigError(f"run {run.id} has no scored candidate yet", where="--candidate")
        if chosen.index == 0:
            raise ConfigError(f"run {run.id}'s best candidate is #0, the seed: nothing to apply",
                              where="--candidate", value=0)
        return chosen
    chosen = next((c for c in candidates if c.index == index), None)
    if chosen is None:
        known = ", ".join(f"#{c.index}" for c in candidates) or "none"
        raise ConfigError(f"run {run.id} has no candidate #{index} (its candidates: {known})",
                          where="--candidate", value=index)
    return chosen


# --------------------------------------------------------------------------- writing


def apply_plan(store: ApplyingStore, plan: ApplyPlan, *, author: str) -> Applied:
    """Write the plan: each rewritten file (replaced whole, atomically) and the text files of
    refused components, then record it on the run.

    Raises:
        ConfigError: a file changed since the plan was made (nothing is written then).
    """
    for path, (old, _new) in plan.files.items():
        if path.read_text(encoding="utf-8") != old:
            raise ConfigError(f"{path} changed since the diff was shown: show it again, then "
                              "apply", where=str(path))
    for path, (_old, new) in plan.files.items():
        _write_atomically(path, new)
    for name, text in plan.text_files.items():
        _write_atomically(plan.folder / name, text)
    record = Applied(candidate_index=plan.candidate.index,
                     candidate_id=plan.candidate.id or 0, folder=str(plan.folder),
                     files=[p.relative_to(plan.folder).as_posix() for p in plan.files],
                     text_files=list(plan.text_files),
                     components=[w.key for w in plan.writes if w.found is not None],
                     author=author)
    store.add_event(plan.run_id, EventKind.APPLIED, payload=record.model_dump(
        mode="json", exclude={"at"}))
    return record


def _write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` whole: a reader never sees half a file (its mode kept)."""
    mode = path.stat().st_mode if path.exists() else None
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def applications(store: ApplyingStore, run_id: str) -> list[Applied]:
    """Every write-back of the run's candidates, oldest first."""
    return [Applied.from_event(e) for e in store.events(run_id, kind=EventKind.APPLIED)]


# --------------------------------------------------------------------------- from the browser


def served_run_folder(run: Run) -> Path | None:
    """The run's own agent folder when it lies inside the folder ``studio ui --agents``
    serves, else None: the only folder the browser may have written into."""
    root = served_agents_dir()
    if root is None or not run.spec.agent_folder:
        return None
    folder = Path(run.spec.agent_folder).resolve()
    inside = folder.is_dir() and folder.is_relative_to(root.resolve())
    return folder if inside else None


def plan_served_apply(store: ApplyingStore, run_id: str, candidate: int | None = None) -> ApplyPlan:
    """:func:`plan_apply` into the run's own folder, refused unless it is served.

    Raises:
        ConfigError: the run's folder is not inside the served agents folder.
    """
    folder = served_run_folder(store.get_run(run_id))
    if folder is None:
        raise ConfigError(f"run {run_id}'s agent folder is not one this studio serves "
                          "(studio ui --agents DIR): it cannot be written from the browser",
                          where="apply", value=run_id)
    return plan_apply(store, run_id, candidate=candidate, folder=folder)


def best_bundle(store: ApplyingStore, run_id: str) -> tuple[str, bytes]:
    """*Download the best*: a zip of the best candidate's components as
    ``<agent>.<component>.txt`` files, with the patch to the agent folder when the run's
    folder is served here. ``(file name, zip bytes)``."""
    run = store.get_run(run_id)
    folder = served_run_folder(run)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
        plan = plan_served_apply(store, run_id) if folder is not None else None
        best = plan.candidate if plan else _candidate(store, run, None)
        root = plan.root_agent if plan else _root_name(run)
        for key, text in best.components.items():
            owner, component = split_component(key)
            bundle.writestr(text_file_name(owner or root, component), text)
        if plan is not None and plan.files:
            bundle.writestr(f"{plan.folder.name}.patch", plan.patch())
    return f"best-{run_id}-#{best.index}.zip", buffer.getvalue()


def _root_name(run: Run) -> str:
    """The root agent's name for the text files: the project's agent, else the name the run's
    folder gives its ``root_agent`` (read, never imported), else the folder's name."""
    if run.spec.agent is not None:
        return run.spec.agent.name
    if not run.spec.agent_folder:
        return "agent"
    folder = Path(run.spec.agent_folder)
    try:
        return SourceFolder(folder).root_agent_name() or folder.name
    except ConfigError:  # moved or emptied since the run
        return folder.name
