"""Word-level diffs, and Markdown that shows model-written text literally."""

from __future__ import annotations

import re

from studio.views.diffing import (
    diff_stats,
    inline_markdown,
    side_by_side,
    side_by_side_markdown,
    tokenize,
    word_diff,
)
from studio.views.markdown import escape_markdown


def test_tokenize_round_trips():
    text = "Write a haiku.\n  Rule: three lines (5-7-5)!"
    assert "".join(tokenize(text)) == text


def test_word_diff_marks_inserted_and_deleted_words():
    segments = word_diff("Write a short haiku.", "Write a long haiku now.")
    kinds = [(s.kind, s.text) for s in segments]
    assert ("delete", "short") in kinds
    assert ("insert", "long") in kinds
    assert any(k == "insert" and "now" in t for k, t in kinds)
    assert "".join(s.text for s in segments if s.kind != "insert") == "Write a short haiku."
    assert "".join(s.text for s in segments if s.kind != "delete") == "Write a long haiku now."


def test_side_by_side_splits_the_sides():
    left, right = side_by_side("a b c", "a x c")
    assert [s.kind for s in left] == ["equal", "delete", "equal"]
    assert [s.kind for s in right] == ["equal", "insert", "equal"]


def test_diff_stats_counts_words():
    stats = diff_stats("one two three", "one 2 three four")
    assert (stats.words_added, stats.words_removed, stats.unchanged) == (2, 1, False)
    assert diff_stats(" same ", "same").unchanged


def test_escape_markdown_neutralises_html_links_images_and_math():
    text = '<script>alert(1)</script> [x](http://e.com) ![i](http://e.com/i.png) $x$ **b** # h'
    escaped = escape_markdown(text)
    assert "<script>" not in escaped and "\\<script\\>" in escaped
    assert "](" not in escaped  # no link or image syntax survives
    assert "\\$x\\$" in escaped and "\\*\\*b\\*\\*" in escaped and "\\#" in escaped
    # every ASCII punctuation character is backslash-escaped
    assert not re.search(r"(?<!\\)[<>\[\]()!*_`$#]", escaped.replace("\\\\", ""))


def test_escape_markdown_keeps_lines_and_indentation():
    assert escape_markdown("a\n  b") == "a  \n\u00a0\u00a0b"


def test_highlights_use_streamlit_directives_around_escaped_text():
    left, right = side_by_side_markdown("Keep it.", "Keep it. <b>Bold</b> [link](x)")
    assert left == "Keep it\\."
    assert ":green-background[" in right
    assert "<b>" not in right and "\\<b\\>" in right
    assert "](x)" not in right


def test_deletions_are_struck_through_not_only_coloured():
    assert ":red-background[~~old~~]" in inline_markdown("old text", "text")


def test_multiline_changes_keep_directives_on_one_line():
    md = inline_markdown("line one", "line one\nRule: two\nRule: three")
    for line in md.split("  \n"):
        assert line.count("[") - line.count("\\[") == line.count("]") - line.count("\\]")


def test_empty_texts():
    assert side_by_side_markdown("", "") == ("*(empty)*", "*(empty)*")
    assert word_diff("", "new")[0].kind == "insert"
