"""The blame view of a candidate: each sentence (or line) of a component beside a compact label
saying which proposal introduced it, in which iteration, by the reflection or a person, and the
score change at that step (attribution: :mod:`studio.projects.provenance`).

Pure (pandas, no Streamlit). Sentences are model-written or typed in a browser: the frame is shown
with ``st.dataframe`` (text cells, never Markdown or HTML), and the terminal text has its control
characters made visible so a sentence cannot move the cursor or recolour the terminal.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pandas as pd

from studio.model.printable import printable as _printable
from studio.projects.provenance import EDIT, REFLECTION, SEED, Provenance, unit_kind


def blame_frame(provenance: Provenance, component: str) -> pd.DataFrame:
    """One row per unit of ``component``: the text and its origin's label."""
    units = provenance.components.get(component, [])
    header = "line" if unit_kind(component) == "line" else "sentence"
    return pd.DataFrame(
        [{header: u.text, "origin": u.origin.label(provenance.run_id)} for u in units],
        columns=[header, "origin"])


def blame_summary(provenance: Provenance, component: str) -> str:
    """``5 sentences: 1 from the seed, 3 from reflections, 1 edited by ana``."""
    units = provenance.components.get(component, [])
    noun = unit_kind(component)
    if not units:
        return f"#{provenance.candidate_index}'s {component} is empty."
    counts = Counter(u.origin.kind for u in units)
    people = Counter(u.origin.by for u in units if u.origin.kind == EDIT)
    parts = []
    if counts[SEED]:
        parts.append(f"{counts[SEED]} from the seed")
    if counts[REFLECTION]:
        parts.append(f"{counts[REFLECTION]} from reflections")
    parts += [f"{n} edited by {who}" for who, n in people.items()]
    other = len(units) - counts[SEED] - counts[REFLECTION] - counts[EDIT]
    if other:
        parts.append(f"{other} from merges or unrecorded changes")
    return f"{len(units)} {noun}{'' if len(units) == 1 else 's'}: {', '.join(parts)}."


def blame_lines(provenance: Provenance) -> Iterator[str]:
    """The terminal view (``studio blame``): per component a header, then ``label | text``."""
    width = max((len(u.origin.label(provenance.run_id))
                 for units in provenance.components.values() for u in units), default=0)
    for key, units in provenance.components.items():
        yield (f"== {printable(key)} (candidate #{provenance.candidate_index}, "
               f"by {unit_kind(key)}) ==")
        for unit in units:
            label = printable(unit.origin.label(provenance.run_id))
            yield f"{label:<{width}} | {printable(unit.text)}"


def printable(text: str) -> str:
    """``text`` with control and format characters (escape sequences, bidi overrides), line
    breaks included, shown as ``\\x1b``-style escapes instead of acting on the terminal."""
    return _printable(text, keep="")
