"""What the checks and the grader say, in the notebook's language: English or Chinese.

One catalogue: every learner-facing message is written in English at the place that says it,
as a template, `say("{name} has shape {got}, expected {want}.", name=..., got=..., want=...)`,
and its Chinese lives in `autograder/locale/zh-CN/*.po` (gettext's format, read with Babel),
keyed by the English template. Numbers, shapes and code are filled into both alike.

Hints are declared as English text in the exercise modules; `say(hint)` looks the whole text up.
Messages made where this package cannot be imported (the harness, in the confined child) reach
the learner as English text; `localize(text)` matches them against the catalogue's templates.

The language is a context variable: a notebook sets it once (`check.language("zh-CN")`, a line
the Chinese edition's setup cell has), the grader sets it per submission from the notebook's
`course.language` metadata. `tests/locale/test_catalogue.py` fails when a message lacks its
Chinese, naming it. May import nothing of the grader (everything imports it).
"""

from __future__ import annotations

import contextvars
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

ENGLISH, CHINESE = "en", "zh-CN"
LANGUAGES = (ENGLISH, CHINESE)
FOLDER = Path(__file__).resolve().parent
FIELD = re.compile(r"\{(\w+)(?:![rsa])?(?::[^{}]*)?\}")
CJK_TEXT = re.compile(r"[\u4e00-\u9fff]")  # what Chinese text has and English text lacks

_language: contextvars.ContextVar[str] = contextvars.ContextVar("course_language")
# What set_language chose, for a kernel whose cells might each run in a fresh context.
_chosen: list[str] = []


def normalized(language: str | None) -> str:
    """ "zh", "zh_CN", "zh-cn" -> "zh-CN"; anything unknown (or None) -> English."""
    if language and language.replace("_", "-").lower().startswith("zh"):
        return CHINESE
    return ENGLISH


def current() -> str:
    """The language messages are said in: set here, else $COURSE_LANGUAGE, else English."""
    return (
        _language.get(None)
        or (_chosen[-1] if _chosen else None)
        or normalized(os.environ.get("COURSE_LANGUAGE"))
    )


def set_language(language: str) -> str:
    """Set the language of every message from now on in this context; returns it."""
    code = normalized(language)
    if language and code == ENGLISH and not language.lower().startswith("en"):
        raise ValueError(f"Unknown language {language!r}: use one of {', '.join(LANGUAGES)}.")
    _language.set(code)
    _chosen[:] = [code]
    return code


@contextmanager
def speaking(language: str | None) -> Iterator[str]:
    """Messages in `language` inside the block (the grader, one submission at a time)."""
    token = _language.set(normalized(language))
    try:
        yield current()
    finally:
        _language.reset(token)


@cache
def table(language: str) -> dict[str, str]:
    """English template -> its translation, from every .po file of the language."""
    if language == ENGLISH:
        return {}
    from babel.messages.pofile import read_po

    entries: dict[str, str] = {}
    for path in sorted((FOLDER / language).glob("*.po")):
        with path.open("rb") as handle:
            for message in read_po(handle):
                if message.id and message.string and not message.fuzzy:
                    entries[str(message.id)] = str(message.string)
    return entries


def say(template: str, /, **values: Any) -> str:
    """`template` in the current language, with `values` filled in (str.format's fields).
    Without values the text is used as it is (hints hold braces of code)."""
    text = table(current()).get(template, template) if current() != ENGLISH else template
    return text.format(**values) if values else text


# Fields that hold a framework's or Python's own words: kept verbatim (learners search them);
# "crashed" and "ran" hold dtype names (attempts.dtype_crash_hint), code a learner types.
VERBATIM_FIELDS = {
    "said",
    "first",
    "error",
    "message",
    "traceback",
    "type_name",
    "type",
    "crashed",
    "ran",
}
# A template matched against finished text needs this much of its own words: "got {name}"
# would match any text starting with "got" (a TensorFlow message, say).
MIN_LITERAL = 16


@cache
def _patterns(language: str, least: int) -> list[tuple[re.Pattern[str], str]]:
    """A regular expression for each template with fields and at least `least` characters of
    its own words: its fields match any text."""
    return [
        (template_pattern(english), _plain_fields(translation))
        for english, translation in table(language).items()
        if FIELD.search(english) and len(FIELD.sub("", english)) >= least
    ]


def template_pattern(template: str) -> re.Pattern[str]:
    """A regular expression matching the text `template` gives once its fields are filled in
    (each field any text, a repeated field the same text)."""
    parts, position, names = [], 0, set()
    for field in FIELD.finditer(template):
        parts.append(re.escape(template[position : field.start()]))
        name = field.group(1)
        parts.append(f"(?P={name})" if name in names else f"(?P<{name}>.+?)")
        names.add(name)
        position = field.end()
    parts.append(re.escape(template[position:]))
    return re.compile("".join(parts), re.DOTALL)


def _plain_fields(translation: str) -> str:
    """The translation with each field's conversion and format dropped ({x!r:>4} -> {x}):
    matched text is filled back in as it was printed."""
    return FIELD.sub(lambda field: "{" + field.group(1) + "}", translation)


def localize(text: str) -> str:
    """English text made elsewhere, in the current language: the whole text, else the first
    template it matches, else line by line; what the catalogue does not know stays English."""
    return _localized(text, MIN_LITERAL)


def _localized(text: str, least: int) -> str:
    """localize; inside a matched template (a field's text) short templates count too, as
    the context already says what the text is."""
    language = current()
    if language == ENGLISH or not text:
        return text
    known = table(language)
    if text in known:
        return known[text]
    for pattern, translation in _patterns(language, least):
        match = pattern.fullmatch(text)
        if match:
            return translation.format(
                **{
                    name: value
                    if name in VERBATIM_FIELDS or _number(value)
                    else _localized(value, 1)
                    for name, value in match.groupdict().items()
                }
            )
    if "\n" in text:
        return "\n".join(_localized(line, least) for line in text.split("\n"))
    return text


def _number(text: str) -> bool:
    """Whether a field's text is a number: printed as it is, never looked up (a catalogue may
    translate "4" as a prediction's choice, "4 倍", which a count of entries is not)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def language_of(metadata: dict[str, Any]) -> str:
    """A notebook's language, from its metadata's `course.language` (English when absent)."""
    course = metadata.get("course") if isinstance(metadata, dict) else None
    return normalized(course.get("language") if isinstance(course, dict) else None)
