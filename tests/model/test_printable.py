"""Model text made inert for terminals and CSV; JSON keeps the exact text, escaped."""

from __future__ import annotations

import io
import json

from studio.model.printable import PrintableStream, json_escaped_controls, printable

HOSTILE = ("\x1b]0;title\x07\x1b[2J\x1b]8;;http://evil\x1b\\x\x1b]8;;\x1b\\ \u202eabc\u202c "
           "\x9b1m \u200b \ud83d \U000e0041")


def test_printable_escapes_controls_formats_and_surrogates_and_keeps_text():
    shown = printable("写手 😀 café\n\t" + HOSTILE)
    assert shown.startswith("写手 😀 café\n\t")
    assert all(ch not in shown for ch in "\x1b\x07\x9b\u202e\u200b\ud83d\U000e0041")
    assert "\\x1b]0;title\\x07" in shown and "\\u202e" in shown and "\\ud83d" in shown
    shown.encode("utf-8")  # a lone surrogate no longer breaks writing


def test_json_escaping_keeps_the_exact_text():
    line = json.dumps({"text": HOSTILE}, ensure_ascii=False)
    escaped = json_escaped_controls(line)
    assert json.loads(escaped) == {"text": HOSTILE}
    assert all(ch not in escaped for ch in "\x9b\u202e\u200b\ud83d\U000e0041")


def test_the_stream_keeps_carriage_returns_for_the_progress_bar():
    raw = io.StringIO()
    PrintableStream(raw).write("\r[###] iteration 1/2 \x1b[2J\n")
    assert raw.getvalue() == "\r[###] iteration 1/2 \\x1b[2J\n"
