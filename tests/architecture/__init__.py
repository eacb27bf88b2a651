"""How the package is laid out: import directions, module sizes, no code in strings, the grader
apart from the teaching helpers."""
