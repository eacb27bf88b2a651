"""Chapter 08 counts the lines of the learner's tape: code only, never blank lines, comments or
docstrings, for functions and for classes (whose source a notebook cannot give back whole)."""

from coursekit.capstone import code_lines, source_code_lines


def documented(x):
    """A docstring
    over two lines."""
    # a comment

    y = x + 1  # a trailing comment
    return y


class Box:
    """A class docstring."""

    def __init__(self, value):
        self.value = value

    def double(self):
        return 2 * self.value


def one_liner(x): return x


def test_only_code_lines_are_counted():
    assert code_lines(documented) == 3  # the def line, y = ..., return
    assert code_lines(one_liner) == 1
    assert code_lines(Box) == 1 + 2 + 2  # the class line and each method's two lines
    assert code_lines(documented, one_liner) == 4


def test_a_string_that_is_not_a_docstring_counts():
    source = 'def f():\n    x = 1\n    """not a docstring"""\n    return x\n'
    assert source_code_lines(source) == 4
