"""New values for the literals :mod:`studio.projects.agent_source` found, written in the
original's style, and the file rewritten around them with every other byte kept (libcst).

A string keeps its quotes and prefix (a one-line string given a new line becomes
triple-quoted), an implicit concatenation stays one (wrapped as its parts were, its parentheses
and comments kept), a schema is a dict literal, and a ``GenerateContentConfig(...)`` call keeps
its other arguments (a new field goes last, laid out as the others). Every new string literal
is checked to evaluate back to the text.
"""

from __future__ import annotations

import ast
import json
import pprint
import textwrap
import unicodedata
from collections.abc import Iterator
from typing import Any

import libcst as cst

from studio.model.errors import ConfigError
from studio.model.records import GenerationConfig, config_from_yaml
from studio.projects.agent_source import Found, SourceModule

CHUNK_WIDTH = 72
"""The width new parts of an implicitly concatenated literal are wrapped at, when the original's
parts were shorter (each part one line of source, as people write them)."""


def rewrite(module: SourceModule, replacements: dict[int, cst.BaseExpression]) -> str:
    """The module's source with each node (by ``id``) replaced: one pass, every other byte as
    it was."""
    class Replace(cst.CSTTransformer):
        # Any: libcst types the hook node-for-node (a TypeVar); a replacement is another kind
        def on_leave(self, original: Any, updated: Any) -> Any:
            return replacements.get(id(original), updated)

    return module.tree.visit(Replace()).code


def new_value(found: Found, component: str, text: str) -> cst.BaseExpression:
    """The literal that replaces ``found`` so it holds ``text`` (a component's text as the
    run stores it), written in the original's style.

    Raises:
        ConfigError: the text does not parse (a schema that is not JSON, a config that is not
            YAML): a stored candidate never has one.
    """
    if component == "instruction":
        return string_literal(text, found.node)
    if component == "output_schema":
        return _dict_literal(json.loads(text) if text.strip() else None, found)
    return _config_call(found.node, config_from_yaml(text))


def string_literal(text: str, like: cst.BaseExpression) -> cst.BaseExpression:
    """A string literal holding ``text``, in ``like``'s style: the same quotes and prefix
    (triple-quoted stays triple-quoted; a one-line string with a new line becomes
    triple-quoted), an implicit concatenation stays one, wrapped as its parts were, and the
    parentheses around it are kept."""
    first: cst.BaseExpression = like
    if isinstance(like, cst.ConcatenatedString):
        parts = list(_parts(like))
        simple = [p for p in parts if isinstance(p, cst.SimpleString) and len(p.quote) == 1]
        if len(simple) == len(parts):
            return _concatenation(text, like, simple)
        first = parts[0]
    node = _simple(text, first if isinstance(first, cst.SimpleString) else None)
    return node.with_changes(lpar=like.lpar, rpar=like.rpar)


def _simple(text: str, like: cst.SimpleString | None, *, multiline: bool = True
            ) -> cst.SimpleString:
    """``text`` as one literal with ``like``'s prefix and quotes; a text with a new line in a
    one-line quote becomes triple-quoted (``multiline``) or keeps ``\\n`` escapes."""
    prefix = like.prefix if like is not None else ""
    quote: str = like.quote if like is not None else '"'
    if multiline and len(quote) == 1 and "\n" in text:
        quote *= 3
    for candidate in (_quoted(text, prefix, quote),
                      _quoted(text, prefix.replace("r", "").replace("R", ""), quote),
                      repr(text)):
        if _evaluates_to(candidate, text):
            return cst.SimpleString(candidate)
    raise ConfigError("the text cannot be written as a Python string literal", where="text")


def _quoted(text: str, prefix: str, quote: str) -> str:
    """``text`` between ``quote``s, escaped as little as it needs (raw: not escaped at all;
    the caller checks the result evaluates back to ``text``)."""
    if "r" in prefix.lower():
        return f"{prefix}{quote}{text}{quote}"
    body = "".join(_escaped(ch, quote) for ch in text)
    if len(quote) == 3:
        body = body.replace(quote, quote[:2] + "\\" + quote[0])
        if body.endswith(quote[0]):
            body = body[:-1] + "\\" + quote[0]
    return f"{prefix}{quote}{body}{quote}"


def _escaped(ch: str, quote: str) -> str:
    if ch == "\\":
        return "\\\\"
    if ch == "\n":
        return ch if len(quote) == 3 else "\\n"
    if len(quote) == 1 and ch == quote:
        return "\\" + ch
    if ch == "\t":
        return ch
    if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
        return ch.encode("unicode_escape").decode("ascii")
    return ch


def _evaluates_to(code: str, text: str) -> bool:
    try:
        return ast.literal_eval(code) == text
    except (SyntaxError, ValueError):
        return False


def _parts(node: cst.ConcatenatedString) -> Iterator[cst.BaseExpression]:
    yield node.left
    right = node.right
    if isinstance(right, cst.ConcatenatedString):
        yield from _parts(right)
    else:
        yield right


def _between(node: cst.ConcatenatedString) -> list[cst.BaseParenthesizableWhitespace]:
    found = [node.whitespace_between]
    if isinstance(node.right, cst.ConcatenatedString):
        found.extend(_between(node.right))
    return found


def _concatenation(text: str, like: cst.ConcatenatedString, parts: list[cst.SimpleString]
                   ) -> cst.BaseExpression:
    """``text`` as an implicit concatenation like ``like``: one part per line of the text,
    long lines wrapped at spaces (no part longer than the longest original one, or
    :data:`CHUNK_WIDTH`), the original's line breaks and comments between the first parts."""
    width = max(CHUNK_WIDTH, *(len(str(p.evaluated_value)) for p in parts))
    chunks = [piece for line in text.splitlines(keepends=True) for piece in _wrap(line, width)]
    literals = [_simple(chunk, parts[0], multiline=False) for chunk in chunks] or \
        [_simple("", parts[0])]
    if len(literals) == 1:
        return literals[0].with_changes(lpar=like.lpar, rpar=like.rpar)
    spaces = _between(like)
    plain = _uncommented_space(spaces[0])
    node: cst.BaseExpression = literals[-1]
    for index in range(len(literals) - 2, -1, -1):
        space = spaces[index] if index < len(spaces) else plain
        node = cst.ConcatenatedString(left=literals[index], right=node,  # type: ignore[arg-type]
                                      whitespace_between=space)
    return node.with_changes(lpar=like.lpar, rpar=like.rpar)


def _wrap(line: str, width: int) -> list[str]:
    """``line`` in pieces of at most ``width`` characters, cut after spaces; joined they give
    ``line`` back exactly."""
    pieces = textwrap.wrap(line, width=width, drop_whitespace=False, replace_whitespace=False,
                           break_long_words=False, break_on_hyphens=False)
    return pieces if "".join(pieces) == line else [line]


def _dict_literal(value: object, found: Found) -> cst.BaseExpression:
    indent = " " * (found.module.positions[found.node].start.column)
    text = pprint.pformat(value, indent=1, width=88, sort_dicts=False)
    text = text.replace("\n", "\n" + indent)
    return cst.parse_expression(text).with_changes(lpar=found.node.lpar, rpar=found.node.rpar)


def _config_call(call: cst.BaseExpression, config: GenerationConfig) -> cst.BaseExpression:
    """The ``GenerateContentConfig(...)`` call with the evolved fields set: a field present is
    given its new value, a new one is added as the call's last argument (laid out as the
    arguments before it), one the config no longer sets is removed; other arguments stay as
    they were."""
    if not isinstance(call, cst.Call):  # _literal_value found a call there
        raise ConfigError("the generation config is not a GenerateContentConfig(...) call",
                          where="generate_content_config")
    values = config.model_dump()
    args: list[cst.Arg] = []
    for arg in call.args:
        name = arg.keyword.value if arg.keyword is not None else None
        if name in values:
            value = values.pop(name)
            if value is None:
                continue
            arg = arg.with_changes(value=cst.parse_expression(repr(value)))
        args.append(arg)
    for name, value in values.items():
        if value is not None:
            args = _appended(call, args, cst.Arg(
                value=cst.parse_expression(repr(value)), keyword=cst.Name(name),
                equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))))
    return call.with_changes(args=args)


def _appended(call: cst.Call, args: list[cst.Arg], new: cst.Arg) -> list[cst.Arg]:
    """``args`` with ``new`` last, laid out as the call's arguments are: the separator between
    two arguments (a line break and indent in a call written one argument a line) before it,
    and the call's trailing comma, if it has one, after it."""
    if not args:
        return [new]
    last = args[-1]
    trailing = last.comma if isinstance(last.comma, cst.Comma) else None
    between = next((_uncommented(a.comma) for a in reversed(args[:-1])
                    if isinstance(a.comma, cst.Comma)), None)
    if between is None:
        between = cst.Comma(whitespace_after=call.whitespace_before_args) if trailing else \
            cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return [*args[:-1], last.with_changes(comma=between),
            new.with_changes(comma=trailing or cst.MaybeSentinel.DEFAULT)]


def _uncommented(comma: cst.Comma) -> cst.Comma:
    """A separator without the comment an argument's line carried (it belongs to that line)."""
    return comma.with_changes(whitespace_after=_uncommented_space(comma.whitespace_after))


def _uncommented_space(space: cst.BaseParenthesizableWhitespace
                       ) -> cst.BaseParenthesizableWhitespace:
    """Whitespace with a line break, without the comment at the end of its first line."""
    if isinstance(space, cst.ParenthesizedWhitespace) and space.first_line.comment is not None:
        line = space.first_line.with_changes(comment=None, whitespace=cst.SimpleWhitespace(""))
        return space.with_changes(first_line=line)
    return space
