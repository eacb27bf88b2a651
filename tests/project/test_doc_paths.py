"""Every repository path the docs and the code's own explanations name exists.

A renamed module leaves its old name behind in prose (the harness's docstring named a
`grading.py` long after it was split up); nothing else would notice. What is read, and what
counts as a path:

* **Where**: docs/*.md, README*.md and CHANGELOG.md (inline `code` spans and the targets of
  relative links, not fenced blocks, which hold commands with example paths); in autograder/,
  coursekit/ and benchmarks/, the comments and docstrings of every .py file; the comments of
  the top-level configuration (requirements*.txt, pyproject.toml, environment.yml, Makefile,
  .ci/run, postBuild). Of these, every whitespace-separated word is a candidate, less any
  `#anchor`.
* **A path** is a word with a '/' whose first part is the name of a folder of the repository
  (`tests/sandbox/test_hostile.py`, `grading/verdicts.py`, `../README.md`), or a bare module
  name (`grade.py`). Not a path: words whose first part names no folder of the repository
  (a submission's `alice/hw.ipynb`, a child's `ctrl/child.py`), URLs, absolute paths
  (`/dev/shm`, a Gradescope `/autograder/references`), `~` and `$` paths, and examples with a
  placeholder (`<entry>`, `{name}`, `chNN_topic.py`, `...`).
* **Exists** when git knows it (tracked, or new and not ignored), relative to the repository's
  root, the naming file's folder or one above it, or the autograder package (docs say
  `grading/verdicts.py`); a glob (`tests/exercises/test_check_ch*.py`) must match a file; a
  bare module name must be some file's name.
"""

from __future__ import annotations

import ast
import fnmatch
import io
import re
import subprocess
import tokenize
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[2]
PLACEHOLDER = re.compile(r"[<>{}\[\]]|\.\.\.|NN|XX")
CODE_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
EDGES = "`'\"()[],;:.!?*"  # stripped from a word's ends ('*' only after the glob test)
DOCS = ("docs/*.md", "README*.md", "CHANGELOG.md")
CODE_FOLDERS = ("autograder", "coursekit", "benchmarks")
CONFIGURATION = (
    "requirements.txt",
    "requirements-grader.txt",
    "requirements-learner.txt",
    "pyproject.toml",
    "environment.yml",
    "Makefile",
    ".ci/run",
    "postBuild",
)


def known_files(root: Path) -> set[str]:
    """What git knows in `root`: tracked files and new ones it does not ignore."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            check=True,
            capture_output=True,
        )
        .stdout.decode()
        .split("\0")
    )
    return {path for path in listed if path and (root / path).is_file()}


def folders_of(files: set[str]) -> set[str]:
    return {
        str(parent)
        for path in files
        for parent in PurePosixPath(path).parents
        if str(parent) != "."
    }


def markdown_words(text: str) -> list[str]:
    """Words of inline code spans and relative link targets, fenced blocks left out."""
    prose = FENCE.sub("", text)
    words = [word for span in CODE_SPAN.findall(prose) for word in span.split()]
    links = [target.split("#")[0] for target in LINK.findall(prose)]
    return words + [link for link in links if link and ":" not in link]


def python_words(source: str) -> list[str]:
    """Words of a module's comments and docstrings."""
    texts = [
        token.string
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            texts.append(ast.get_docstring(node) or "")
    return [word for text in texts for word in text.split()]


def comment_words(text: str) -> list[str]:
    """Words after a '#' on each line of a configuration file."""
    return [
        word for line in text.splitlines() if "#" in line for word in line.split("#", 1)[1].split()
    ]


def words_of(name: str, text: str) -> list[str]:
    if name.endswith(".md"):
        return markdown_words(text)
    return python_words(text) if name.endswith(".py") else comment_words(text)


def as_path(word: str, folder_names: set[str]) -> str | None:
    """The repository path `word` names, or None when it names none (see the module's rules)."""
    if "/" not in word and ".py" not in word:
        return None  # most words: neither a folder path nor a module
    word = word.split("#")[0].strip(EDGES.replace("*", ""))
    if word.endswith("*") and "/" not in word:
        return None
    word = word.rstrip(EDGES)
    if (
        not word
        or "://" in word
        or word.startswith(("/", "~", "$", "-", "www."))
        or PLACEHOLDER.search(word)
        or "=" in word
    ):
        return None
    parts = PurePosixPath(word)
    if "/" not in word:
        return word if parts.suffix == ".py" and parts.stem.isidentifier() else None
    return word if parts.parts[0] in folder_names or parts.parts[0] == ".." else None


def exists(path: str, naming_file: str, files: set[str], folders: set[str]) -> bool:
    """Whether `path`, named in `naming_file`, is a file or folder git knows (module rules)."""
    if "/" not in path:
        return any(PurePosixPath(file).name == path for file in files)
    here = PurePosixPath(naming_file).parent
    bases = [PurePosixPath("."), *here.parents, here, PurePosixPath("autograder")]
    for base in bases:
        candidate = _normal(str(PurePosixPath(base, path.rstrip("/"))))
        if candidate in files or candidate in folders:
            return True
        if "*" in candidate and fnmatch.filter(files, candidate):
            return True
    return False


def _normal(path: str) -> str:
    """`docs/../README.md` -> `README.md` (links climb out of docs/)."""
    parts: list[str] = []
    for part in PurePosixPath(path).parts:
        if part == "..":
            parts = parts[:-1]
        elif part != ".":
            parts.append(part)
    return "/".join(parts)


def named_files(files: set[str]) -> list[str]:
    """The files whose words are read (the module's "Where")."""
    docs = [path for path in files if any(fnmatch.fnmatch(path, doc) for doc in DOCS)]
    code = [
        path
        for path in files
        if path.endswith(".py") and PurePosixPath(path).parts[0] in CODE_FOLDERS
    ]
    configuration = [path for path in CONFIGURATION if path in files]
    return sorted(docs + code + configuration)


def missing_paths(root: Path) -> list[str]:
    """'file: path' for every path a doc, comment or docstring names that does not exist."""
    files = known_files(root)
    folders = folders_of(files)
    names = {PurePosixPath(folder).name for folder in folders}
    missing = []
    for name in named_files(files):
        text = (root / name).read_text(encoding="utf-8")
        for word in words_of(name, text):
            path = as_path(word, names)
            if path and not exists(path, name, files, folders):
                missing.append(f"{name}: {path}")
    return sorted(set(missing))


HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*$", re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def broken_anchors(root: Path) -> list[str]:
    """'file: link' for every relative link whose #anchor names no heading of its target."""
    broken = []
    for name in [path for path in named_files(known_files(root)) if path.endswith(".md")]:
        for target in LINK.findall(FENCE.sub("", (root / name).read_text(encoding="utf-8"))):
            page, _, anchor = target.partition("#")
            if not anchor or ":" in page:
                continue
            file = root / _normal(str(PurePosixPath(name).parent / page)) if page else root / name
            headings = FENCE.sub("", file.read_text(encoding="utf-8")) if file.is_file() else ""
            if anchor not in {slug(heading) for heading in HEADING.findall(headings)}:
                broken.append(f"{name}: {target}")
    return broken


def test_every_link_to_a_section_names_a_heading_there():
    broken = broken_anchors(ROOT)
    assert not broken, "no such section:\n" + "\n".join(broken)


def test_a_link_to_a_missing_section_is_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\n## The `grade` command: flags\n")
    (tmp_path / "README.md").write_text(
        "[flags](docs/guide.md#the-grade-command-flags), [gone](docs/guide.md#gone),\n"
        "[here](#readme), [web](https://example.org/x#y)\n\n# README\n"
    )
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    assert broken_anchors(tmp_path) == ["README.md: docs/guide.md#gone"]


def test_every_path_the_docs_and_docstrings_name_exists():
    missing = missing_paths(ROOT)
    assert not missing, "named but not in the repository:\n" + "\n".join(missing)


def test_a_planted_bad_path_is_found_and_examples_are_not(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "tests" / "grading").mkdir(parents=True)
    (tmp_path / "tests" / "grading" / "test_grade.py").write_text("")
    (tmp_path / "autograder" / "grading").mkdir(parents=True)
    (tmp_path / "autograder" / "grading" / "grade.py").write_text(
        '"""Reads `grading/grade.py`; see autograder/grading.py and tests/test_gone.py,\n\n'
        'not tests/grading/test_grade.py, alice/hw.ipynb or ctrl/child.py."""\n'
        "# what grading/forkserver.py forked (tests/grading/)\n"
    )
    (tmp_path / "requirements.txt").write_text("# tests/grading/test_gone.py checks it\nx==1\n")
    (tmp_path / "README.md").write_text(
        "See [the guide](docs/guide.md), `autograder/grading/grade.py`, `grade.py`,\n"
        "`https://example.org/x.py`, `/dev/shm`, `chNN_topic.py`, `graded/<name>/results.json`,\n"
        "`autograder/grading/*.py`, `python -m autograder grade`, and [gone](docs/gone.md).\n"
        "```bash\npython -m autograder grade submissions/*.ipynb\n```\n"
    )
    (tmp_path / "docs" / "guide.md").write_text("Back to [README](../README.md); `grading.py`.\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    assert missing_paths(tmp_path) == [
        "README.md: docs/gone.md",
        "autograder/grading/grade.py: autograder/grading.py",
        "autograder/grading/grade.py: grading/forkserver.py",
        "autograder/grading/grade.py: tests/test_gone.py",
        "docs/guide.md: grading.py",
        "requirements.txt: tests/grading/test_gone.py",
    ]
