"""Chapter 08 counts the lines of the learner's own code: code only, never blank lines, comments
or docstrings, for functions and for classes (whose source a notebook cannot give back whole),
and never a learner copy's unanswered stub."""

import linecache

from coursekit.capstone import Count, code_lines, own_code_lines, source_code_lines


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


def one_liner(x): return x  # fmt: skip


def test_only_code_lines_are_counted():
    assert code_lines(documented) == 3  # the def line, y = ..., return
    assert code_lines(one_liner) == 1
    assert code_lines(Box) == 1 + 2 + 2  # the class line and each method's two lines
    assert code_lines(documented, one_liner) == 4


def test_a_string_that_is_not_a_docstring_counts():
    source = 'def f():\n    x = 1\n    """not a docstring"""\n    return x\n'
    assert source_code_lines(source) == 4


def _notebook(cells, folder):
    """Each cell's source run as a notebook runs it (its own file name, as IPython gives each
    cell), in one namespace."""
    namespace = {"__name__": "__main__"}
    for index, source in enumerate(cells):
        path = folder / f"cell{index}.py"
        path.write_text(source)
        linecache.checkcache(str(path))
        exec(compile(source, str(path), "exec"), namespace)
    return namespace


ENGINE_CELL = '''
def paste_here():
    """Replace this cell by your engine."""


def helper(x):
    return x


class Tensor:
    def __init__(self, value):
        self.value = helper(value)


def grad(f):
    return f
'''

STUB_CELL = '''
def train(x):
    """A learner copy's stub."""
    raise NotImplementedError("Exercise train: replace this line with your code.")
'''


def test_the_engine_is_every_definition_of_its_cells_and_a_stub_is_never_counted(tmp_path):
    namespace = _notebook([ENGINE_CELL, "def mlp(x):\n    return x\n", STUB_CELL], tmp_path)
    engine = own_code_lines(namespace, ("Tensor", "grad"))
    assert engine == Count(2 + 1 + 2 + 2)  # helper, Tensor's class line and method, grad
    loop = own_code_lines(namespace, functions=(namespace["mlp"], namespace["train"]))
    assert loop == Count(2, ["train"])
    assert own_code_lines(namespace, ("Tensor", "backward")).missing == ["backward"]
