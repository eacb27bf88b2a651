"""What a submission may import in the child: the frameworks its exercises allow; any other
framework imports but raises FrameworkUsed when used (a numpy exercise scores 0 for calling
one), or reads as not installed; and `autograder.check`, which a notebook calls, does
nothing here."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

FRAMEWORKS = ("tensorflow", "jax", "jaxlib", "keras", "tf_keras", "torch", "autograd")


# Imported with the framework. Keras is not: TensorFlow imports it (and matplotlib with it)
# only when it is installed, 1-2 s of every TensorFlow child's start-up, so the grader
# allows "keras" only to a submission whose code names it (grading.child_frameworks).
COMPANIONS = {"jax": ("jaxlib",)}


class FrameworkUsed(RuntimeError):
    """A numpy exercise reached for a framework: the rule must be the learner's own."""


class _GuardModule(types.ModuleType):
    def __getattr__(self, attribute: str):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        raise FrameworkUsed(
            f"{self.__name__}.{attribute} was used. In the classroom grader a numpy exercise "
            "must be your own rule: TensorFlow and JAX are not available to it."
        )


class _FrameworkGuard(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`import tensorflow` succeeds, but any use of it raises FrameworkUsed."""

    def __init__(self, guarded: tuple[str, ...]) -> None:
        self.guarded = guarded

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.guarded:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _GuardModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module) -> None:
        return None


class _Absent(importlib.abc.MetaPathFinder):
    """The frameworks a framework round does not allow are not installed, as far as it sees.

    It stands in front of the interpreter's own finders and answers None for those names,
    exactly what an uninstalled package gives: `import jax` raises ModuleNotFoundError and
    `importlib.util.find_spec("keras")` is None, which TensorFlow's start-up expects when it
    looks for Keras (a finder that raised there would break `import tensorflow`)."""

    def __init__(self, absent: tuple[str, ...], finders: list) -> None:
        self.absent = absent
        self.finders = finders

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.absent:
            return None
        for finder in self.finders:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                return spec
        return None

    def invalidate_caches(self) -> None:
        for finder in self.finders:
            getattr(finder, "invalidate_caches", lambda: None)()


def install(allowed: list[str]) -> None:
    """Guard every framework this round's exercises may not use.

    In a numpy round, `import tensorflow` succeeds but any use raises FrameworkUsed, so the
    verdict can say what happened. In a framework round, the others are simply absent
    (ModuleNotFoundError): TensorFlow would otherwise import JAX too (seconds of start-up),
    and it imports fine without it.
    """
    permitted = {
        name for name in FRAMEWORKS for a in allowed if name == a or name in COMPANIONS.get(a, ())
    }
    guarded = tuple(name for name in FRAMEWORKS if name not in permitted)
    for name in list(sys.modules):
        if name.split(".")[0] in guarded:
            del sys.modules[name]
    if permitted:
        sys.meta_path[:] = [_Absent(guarded, list(sys.meta_path))]
    else:
        sys.meta_path.insert(0, _FrameworkGuard(guarded))
    # Check cells become no-ops: the real checker is not here, so it cannot be patched.
    check = _NoCheck("autograder.check")
    package = types.ModuleType("autograder")
    package.__path__ = []
    package.check = check
    sys.modules["autograder"] = package
    sys.modules["autograder.check"] = check


class _NoCheck(types.ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args, **kwargs: None
