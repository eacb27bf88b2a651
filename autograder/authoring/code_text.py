"""The course's own English inside code cells, and its translation: one code, two texts.

A code cell exists once, in the English solution. What the course says inside it (comments,
docstrings, the sentences its cells print, a prediction cell's `# your guess: ...`) is text,
and the Chinese edition shows it in Chinese: the chapter's translation file
(`translations/zh-CN/NN_name.md`) holds, for a code cell, a section keyed as a prose section
is (`<!-- translates: CELL_ID FINGERPRINT -->`, the fingerprint over the cell's comments
and strings), made of pairs of fenced blocks, the English piece as the cell writes it and
its Chinese:

    ```python en
    # the forward pass records each operation
    ```
    ```python zh-CN
    # 前向计算记下每个运算
    ```

A piece is a run of whole-line comments at one indentation (or one line of it, or a comment
after code), or one string literal as written, quotes and prefix included
(`f"Not yet ({error}): ..."`). Only those tokens are replaced: the Chinese of a string must be
one literal of the same kind (prefix, and an f-string's same fields), that of a comment only
comment lines, so both editions run the same code (`same_code`). A code cell without a
section, and a chapter whose translation has none, is built exactly as before.

`english_prose` is the one rule for what counts as course-authored English: a sentence-like
run of ASCII words, not code (backticked spans, identifiers, dotted names, numbers); what
frameworks say is excluded where it is shown (tests/authoring/test_code_english.py).
"""

from __future__ import annotations

import ast
import hashlib
import io
import re
import tokenize
from dataclasses import dataclass

# Comments that tools read (and the solution markers): never translated; they end a run.
DIRECTIVE = re.compile(r"#\s*(NBVAL_\w+|noqa\b|type:|fmt:|pragma\b|ruff:)|### (BEGIN|END) SOLUTION")
# A word of English prose: letters only (an apostrophe or hyphen inside), not part of a name, a
# dotted path, a call or a number; and a run of two or more of them, one of three letters or more.
_WORD = r"(?<![\w.`'\"/\\{-])[A-Za-z]+(?:['-][A-Za-z]+)*(?![\w(`/\\}-]|\.\w|\[)"
PROSE_RUN = re.compile(rf"{_WORD}(?:[,;:]?[ \t]+{_WORD})+")
# Not prose: code spans, formulas, addresses, a call's arguments (`sum(x, axis, keepdims)`),
# an English gloss in full-width brackets after a Chinese term (余切向量（cotangent）), the
# terms the Chinese edition keeps in English (docs/zh-CN/terminology.toml: logits), and the
# numbers nan and inf as numpy and Python print them (`[0.6931    inf    inf]`).
CODE_SPANS = re.compile(
    r"`[^`\n]*`|\$[^$\n]*\$|https?://\S+|\w\([^()\n]*\)|（[^）\u4e00-\u9fff]*）|\blogits\b"
    r"|\b(?:nan|inf)\b"
)
FENCE = re.compile(r"^```python (en|zh-CN)\n(.*?)\n```[ \t]*$", re.MULTILINE | re.DOTALL)
# What a translated literal holds and an English one lacks: Chinese, or full-width punctuation.
CJK = re.compile(r"[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]")


def english_prose(text: str) -> list[str]:
    """The sentence-like English runs of `text` (empty for code and for Chinese)."""
    found = []
    for match in PROSE_RUN.finditer(CODE_SPANS.sub(" ", text)):
        words = re.findall(r"[A-Za-z']+", match.group(0))
        # a sentence joins two words by a space; a list of names only by commas (JAX, TensorFlow)
        joined = re.search(r"[A-Za-z'][ \t]+[A-Za-z]", match.group(0))
        if joined and any(len(word) >= 3 for word in words):
            found.append(match.group(0))
    return found


@dataclass(frozen=True)
class Piece:
    """A translatable piece of a cell: a comment run (`lines` of it) or one string literal."""

    kind: str  # "comment" or "string"
    text: str  # the key: comment lines without their indentation, or the literal as written
    start: tuple[int, int]  # (row from 0, column)
    end: tuple[int, int]
    indent: str = ""

    def lines(self) -> list[Piece]:
        """A comment run's single lines, each a piece of its own (a run's key failing)."""
        rows = self.text.split("\n")
        if self.kind != "comment" or len(rows) == 1:
            return [self]
        first = self.start[0]
        return [
            Piece("comment", row, (first + i, self.start[1]), (first + i, self.start[1] + len(row)))
            for i, row in enumerate(rows)
        ]


def _tokens(source: str) -> list[tokenize.TokenInfo]:
    """The cell's tokens; IPython's `%magic` and `!shell` lines count as blank."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n")]
    try:
        return list(tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []


def pieces(source: str) -> list[Piece]:
    """The cell's comments (whole-line runs at one indentation merged) and string literals."""
    rows = source.split("\n")
    found: list[Piece] = []
    for token in _tokens(source):
        (row, col), (end_row, end_col) = token.start, token.end
        row, end_row = row - 1, end_row - 1
        if token.type == tokenize.STRING:
            found.append(Piece("string", token.string, (row, col), (end_row, end_col)))
        elif token.type == tokenize.COMMENT and not DIRECTIVE.match(token.string):
            whole_line = not rows[row][:col].strip()
            last = found[-1] if found else None
            if (
                whole_line
                and last is not None
                and last.kind == "comment"
                and last.indent == rows[row][:col]
                and last.end[0] == row - 1
                and not rows[last.start[0]][: last.start[1]].strip()
            ):
                found[-1] = Piece(
                    "comment",
                    f"{last.text}\n{token.string}",
                    last.start,
                    (row, end_col),
                    last.indent,
                )
            else:
                indent = rows[row][:col] if whole_line else "\n"  # "\n": after code
                found.append(Piece("comment", token.string, (row, col), (row, end_col), indent))
    return found


def string_text(literal: str) -> str:
    """A literal's words: its value, an f-string's fields left out."""
    try:
        node = ast.parse(literal.strip(), mode="eval").body
    except SyntaxError:
        return literal
    if isinstance(node, ast.JoinedStr):
        return " ".join(
            part.value
            for part in node.values
            if isinstance(part, ast.Constant) and isinstance(part.value, str)
        )
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def piece_words(piece: Piece) -> str:
    """What a reader reads of a piece: a comment's text, a string's value."""
    if piece.kind == "comment":
        return "\n".join(line.lstrip("#") for line in piece.text.split("\n"))
    return string_text(piece.text)


def prose_pieces(source: str) -> list[Piece]:
    """The pieces of a cell that hold English prose."""
    return [piece for piece in pieces(source) if english_prose(piece_words(piece))]


def text_pieces(source: str) -> list[Piece]:
    """The pieces of a cell holding words (two letters or more): its comments and strings."""
    return [piece for piece in pieces(source) if re.search(r"[A-Za-z]{2}", piece_words(piece))]


def fingerprint(source: str) -> str:
    """Twelve hex digits of SHA-256 over a code cell's text pieces: what its section
    translates (a change to the code around them leaves it as it is, and so does a change
    to the rule for English prose)."""
    joined = "\0".join(piece.text for piece in text_pieces(source))
    return hashlib.sha256(joined.encode()).hexdigest()[:12]


def parse_pairs(text: str, where: str) -> dict[str, str]:
    """A code section's pairs: English piece -> its Chinese."""
    blocks = FENCE.findall(text)
    if [language for language, _ in blocks] != ["en", "zh-CN"] * (len(blocks) // 2):
        raise ValueError(f"{where}: a code section alternates ```python en and ```python zh-CN")
    return {blocks[i][1]: blocks[i + 1][1] for i in range(0, len(blocks), 2)}


def format_pairs(pairs: dict[str, str]) -> str:
    return "\n".join(
        f"```python en\n{english}\n```\n```python zh-CN\n{chinese}\n```"
        for english, chinese in pairs.items()
    )


def stub_pairs(source: str) -> dict[str, str]:
    """A new code section: each English piece, its Chinese still the English."""
    return {piece.text: piece.text for piece in prose_pieces(source)}


def _replacement(piece: Piece, chinese: str, where: str) -> str:
    """The Chinese of a piece as it goes into the cell, refused where it would change code."""
    if piece.kind == "comment":
        rows = chinese.split("\n")
        if not all(row.startswith("#") for row in rows):
            raise ValueError(f"{where}: the Chinese of {piece.text!r} must be comment lines")
        return f"\n{piece.indent}".join(rows) if piece.indent != "\n" else rows[0]
    english, translated = _tokens(piece.text), _tokens(chinese)
    strings = [token for token in translated if token.type == tokenize.STRING]
    if (
        len(strings) != 1
        or strings[0].string != chinese.strip()
        or not _same_kind(english[0].string, chinese.strip())
    ):
        raise ValueError(
            f"{where}: the Chinese of {piece.text[:60]!r} must be one string literal of the "
            "same kind (prefix, quotes and an f-string's fields)"
        )
    return chinese.strip()


def _fields(literal: str) -> list[str]:
    node = ast.parse(literal, mode="eval").body
    if not isinstance(node, ast.JoinedStr):
        return []
    return sorted(ast.unparse(part) for part in node.values if isinstance(part, ast.FormattedValue))


def _same_kind(english: str, chinese: str) -> bool:
    """Two literals with the same prefix and quotes and (f-strings) the same fields."""

    def opening(literal: str) -> str:
        return re.match(r"[A-Za-z]*('''|\"\"\"|'|\")", literal).group(0).lower()

    return opening(english) == opening(chinese) and _fields(english) == _fields(chinese)


def translate(source: str, pairs: dict[str, str], where: str = "cell") -> str:
    """The cell with each piece that `pairs` translates replaced by its Chinese. A comment
    run is looked up whole, else line by line."""
    if not pairs:
        return source
    replacements = []
    for piece in pieces(source):
        for part in [piece] if piece.text in pairs else piece.lines():
            if part.text in pairs:
                replacements.append((part, _replacement(part, pairs[part.text], where)))
    rows = source.split("\n")
    offsets = [0]
    for row in rows:
        offsets.append(offsets[-1] + len(row) + 1)
    for piece, text in sorted(replacements, key=lambda item: item[0].start, reverse=True):
        begin = offsets[piece.start[0]] + piece.start[1]
        source = source[:begin] + text + source[offsets[piece.end[0]] + piece.end[1] :]
    return source


def unused(source: str, pairs: dict[str, str]) -> list[str]:
    """The English pieces of `pairs` the cell no longer holds (stale pairs)."""
    present = {part.text for piece in pieces(source) for part in {piece, *piece.lines()}}
    return [english for english in pairs if english not in present]


def _skeleton(source: str) -> list[tokenize.TokenInfo]:
    skipped = {tokenize.COMMENT, tokenize.NL, tokenize.ENDMARKER}
    return [token for token in _tokens(source) if token.type not in skipped]


# A language code as a literal: the edition passes its own (the install cell's
# `stop_if_restart_needed(language="en")`, which runs before the chapter's check.language).
LANGUAGE_LITERALS = {'"en"', '"zh-CN"'}


def same_code(english: str, edition: str) -> bool:
    """Whether two cells run the same code: the same tokens but comments, and each string the
    same or, in the edition, a Chinese literal of the same kind (or its language code)."""
    ours, theirs = _skeleton(english), _skeleton(edition)
    if len(ours) != len(theirs):
        return False
    for a, b in zip(ours, theirs, strict=True):
        if a.type != b.type:
            return False
        if a.string != b.string and not (
            a.type == tokenize.STRING
            and (
                (CJK.search(b.string) and _same_kind(a.string, b.string))
                or {a.string, b.string} <= LANGUAGE_LITERALS
            )
        ):
            return False
    return True
