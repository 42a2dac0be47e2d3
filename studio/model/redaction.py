"""Keep API keys out of everything the studio shows, logs and exports.

The policy: what the loop reads back (trials, proposals, people's feedback, dataset rows) is
stored raw, because reflection and a resumed run must read what the critic and the person wrote;
every exit redacts: pages (:func:`studio.views.markdown.escape_markdown` and the UI's loaders),
the terminal (:class:`studio.model.printable.PrintableStream`), logs (:func:`redact_studio_logs`)
and exports. Run errors, run specs and configs are redacted when stored: no loop reads them as
text to learn from, and they are where a key would be written literally.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import re
from collections.abc import Sequence
from enum import Enum
from typing import Any, TypeVar

_T = TypeVar("_T")

_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSW(OR)?D|PASSPHRASE|CREDENTIAL|(^|_)AUTH($|_)|PRIVATE|"
    r"SIGNATURE|_PWD$|DSN$|DATABASE_URL$|DB_URL$", re.IGNORECASE)
"""Any environment variable whose name says it holds a secret (``AWS_BEARER_TOKEN_BEDROCK``,
``LITELLM_MASTER_KEY``, ``WATSONX_APIKEY``...): matched by name, never by a fixed list."""
_NOT_SECRET_NAME = re.compile(r"^(KEYBOARD|XAUTHORITY|SSH_AUTH_SOCK|GPG_AGENT_INFO)|_PATH$|_FILE$|"
                              r"_DIR$", re.IGNORECASE)
_MIN_SECRET_LENGTH = 8
_URL_PASSWORD = re.compile(
    r"(?<![a-zA-Z0-9+.-])(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]+:)[^@\s/]+@")
"""Starts only where a scheme can start, so a long run of letters is scanned once, not once
per letter (that was quadratic: 0.7 s for 20,000 characters)."""
_URL_NAME = re.compile(r"DSN$|DATABASE_URL$|DB_URL$", re.IGNORECASE)
_URL_PASSWORD_VALUE = re.compile(r"://[^:/@\s]*:([^@\s]+)@")
_KEY_SHAPED = re.compile(
    r"\b(sk(?=[-_])|xai(?=-)|gsk(?=_)|AIza)(?=[-_A-Za-z]*[0-9])[-_A-Za-z0-9]{16,}")
"""A provider's key by its shape (``sk-proj-...``, ``sk_live_...``, ``xai-...``, ``gsk_...``,
``AIza...``): the prefix, then a token with a digit. Without the separator and the digit,
ordinary words matched (``skip_perfect_score`` became ``sk-***`` in ``studio schema``)."""


@functools.lru_cache(maxsize=4096)
def looks_secret(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret."""
    return bool(_SECRET_NAME.search(name)) and not _NOT_SECRET_NAME.search(name)


def secret_values() -> list[str]:
    """Values of environment variables whose names say they are secrets (longest first, so a
    secret that contains another is replaced whole)."""
    values = {_secret_part(name, value) for name, value in os.environ.items()
              if looks_secret(name) and value}
    values = {value for value in values if value and could_be_secret(value)}
    return sorted(values, key=len, reverse=True)


def _secret_part(name: str, value: str) -> str:
    """The secret in a variable's value: of a database URL (``STUDIO_DB_URL``, ``DATABASE_URL``)
    only its password, so a message can still say which file or server it is about (a SQLite
    path holds no secret); the whole value otherwise."""
    if not _URL_NAME.search(name) or "://" not in value:
        return value
    match = _URL_PASSWORD_VALUE.search(value)
    return match.group(1) if match else ""


_COMMON_VALUE = re.compile(r"[A-Za-z]+|[0-9]+|true|false|none|null|localhost", re.IGNORECASE)


@functools.lru_cache(maxsize=256)
def could_be_secret(value: str) -> bool:
    """Whether an environment value is worth hiding wherever it appears in text. Too short,
    with spaces (``ADMIN_PASSWORD="three lines"``), a plain word or number, or only a few
    distinct characters: such a value also occurs in ordinary text (a critic's feedback, an
    instruction), and hiding it there changes what people read and what reflection reads."""
    return (len(value) >= _MIN_SECRET_LENGTH and not any(c.isspace() for c in value)
            and not _COMMON_VALUE.fullmatch(value) and len(set(value)) >= 5)


def redact(text: str, secrets: Sequence[str] | None = None) -> str:
    """Replace every secret value from the environment, URL passwords, and key-shaped tokens.

    ``secrets`` is :func:`secret_values` read once by a caller that redacts many strings of one
    record (the environment is read at every call otherwise)."""
    for value in secret_values() if secrets is None else secrets:
        if value in text:
            text = text.replace(value, "***")
    text = mask_url(text)
    return _KEY_SHAPED.sub(r"\1-***", text)


def redact_data(value: object, secrets: Sequence[str] | None = None) -> Any:
    """:func:`redact` applied to every string inside lists and dicts (keys kept); the
    environment is read once for the whole value."""
    if secrets is None:
        secrets = secret_values()
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {k: redact_data(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_data(v, secrets) for v in value]
    return value


def mask_url(text: str) -> str:
    """``postgresql://user:***@host/db``: the password of every URL in ``text`` hidden."""
    return _URL_PASSWORD.sub(r"\g<scheme>***@", text)


def mask(value: str | None) -> str:
    """Show that a key is set without revealing it: ``sk-...4f2a``."""
    if not value:
        return "not set"
    return f"{value[:3]}...{value[-4:]}" if len(value) > 12 else "set"


def redacted(record: _T, secrets: Sequence[str] | None = None) -> _T:
    """A copy of a stored record (a trial, a proposal, an example, a list of them) with every
    string inside redacted, for showing: records are stored raw (the loop reads them), so the
    UI's loaders pass what they read through this before any page sees it."""
    from pydantic import BaseModel  # here: `import studio` (which hooks the logs) stays light

    if secrets is None:
        secrets = secret_values()
    if isinstance(record, BaseModel):
        return record.model_copy(update={
            name: redacted(getattr(record, name), secrets)
            for name in type(record).model_fields if _holds_text(getattr(record, name))})
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return dataclasses.replace(record, **{
            f.name: redacted(getattr(record, f.name), secrets)
            for f in dataclasses.fields(record) if f.init and _holds_text(getattr(record, f.name))})
    if isinstance(record, Enum):
        return record
    if isinstance(record, list | tuple):
        items = [redacted(item, secrets) for item in record]
        if hasattr(record, "_fields"):  # a named tuple
            return type(record)(*items)
        return type(record)(items)
    if isinstance(record, dict):
        return {k: redacted(v, secrets) for k, v in record.items()}  # type: ignore[return-value]
    if isinstance(record, str):
        return redact(record, secrets)  # type: ignore[return-value]
    return record


def _holds_text(value: object) -> bool:
    from pydantic import BaseModel

    if isinstance(value, Enum):
        return False
    return isinstance(value, str | list | tuple | dict | BaseModel) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type))


def redact_studio_logs() -> None:
    """Redact every log record of the studio's own loggers (``studio.*``) when it is made: its
    message (arguments filled in) and its traceback text. Model text and error messages reach
    logs through many calls; one hook covers them all, whatever handler writes the record."""
    previous = logging.getLogRecordFactory()
    if getattr(previous, "redacts", False):
        return

    def factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if record.name == "studio" or record.name.startswith("studio."):
            _redact_record(record)
        return record

    factory.redacts = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


def _redact_record(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a bad format string is the handler's to report
        return
    secrets = secret_values()
    record.msg, record.args = redact(message, secrets), None
    if record.exc_info and record.exc_info[1] is not None:
        record.exc_text = redact(logging.Formatter().formatException(record.exc_info), secrets)
