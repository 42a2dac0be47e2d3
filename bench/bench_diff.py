"""Word diff time on long instructions: bounded for every shape, however repetitive.

Each shape is measured at 10k and 20k words; the ratio 20k/10k near 2 means linear growth (a
quadratic diff shows about 4). The worst case under the pairwise limit is the most repetitive
text (two distinct words) with dense edits, sized just under ``PAIR_LIMIT``.

Run: ``python bench/bench_diff.py``.
"""

from __future__ import annotations

import math
import random
import time

from studio.views import diffing

VOCABULARIES = {"8 words": 8, "300 words": 300, "all distinct": None}


def texts(words: int, one_line: bool, vocabulary: int | None, every: int) -> tuple[str, str]:
    """An instruction and its edit with one word in ``every`` changed."""
    rng = random.Random(7)
    pool = [f"w{i}" for i in range(vocabulary or words)]
    old_words = [rng.choice(pool) if vocabulary else pool[i] for i in range(words)]
    new_words = ["CHANGED" if i % every == 0 else w for i, w in enumerate(old_words)]
    sep = " " if one_line else "\n"
    return sep.join(old_words), sep.join(new_words)


def render_seconds(old: str, new: str) -> float:
    """What a Compare page does with one pair: both panes and the statistics."""
    diffing._cached_word_diff.cache_clear()
    started = time.perf_counter()
    diffing.side_by_side_markdown(old, new)
    diffing.diff_stats(old, new)
    return time.perf_counter() - started


def main() -> None:
    print(f"pairwise limit {diffing.PAIR_LIMIT:,} item pairs")
    print(f"  {'shape':44s} {'10k words':>10s} {'20k words':>10s} {'ratio':>6s}")
    for one_line in (True, False):
        for name, vocabulary in VOCABULARIES.items():
            for every in (97, 3):
                times = [render_seconds(*texts(n, one_line, vocabulary, every))
                         for n in (10_000, 20_000)]
                shape = (f"{'one line' if one_line else 'one word per line':17s} "
                         f"{name:12s} 1 in {every:<3d} changed")
                print(f"  {shape:44s} {times[0]:9.3f}s {times[1]:9.3f}s "
                      f"{times[1] / max(times[0], 1e-9):6.1f}")
    side = int(math.sqrt(diffing.PAIR_LIMIT)) // 2
    old, new = texts(side, True, 2, 5)
    print(f"worst case under the limit ({side} words, 2 distinct, 1 in 5 changed): "
          f"{render_seconds(old, new):.3f}s")


if __name__ == "__main__":
    main()
