"""The catalogue: every message the checks and the grader say has its Chinese, with the same
fields; the .po files hold exactly today's messages; a Chinese notebook's checks answer in
Chinese, with the same numbers as the English ones."""

from __future__ import annotations

import re

import pytest

from autograder import locale
from autograder.catalogue import assign, file_of_source, messages, read_catalogues
from autograder.catalogue import translation_problems as missing_translations
from autograder.exercises import EXERCISES
from autograder.locale import CHINESE, CJK_TEXT, FIELD, localize, say, speaking, template_pattern

ALL = [(file, text) for file, texts in messages().items() for text in texts]


def test_every_message_has_its_chinese_with_the_same_fields():
    problems = missing_translations(ALL, read_catalogues())
    assert not problems, (
        f"{len(problems)} messages lack their Chinese (run `python -m "
        "autograder messages`, then translate):\n" + "\n".join(problems)
    )


def test_the_check_names_a_message_without_chinese_and_a_field_lost():
    have = {"core": {"Hello {name}.": "你好。", "Bye.": ""}}
    problems = missing_translations(
        [("core", "Hello {name}."), ("core", "Bye."), ("core", "New one.")], have
    )
    assert len(problems) == 3
    assert "fields" in problems[0] and "Bye." in problems[1] and "New one." in problems[2]
    assert missing_translations([("core", " and ")], {"core": {" and ": "、"}}) == []


def test_the_po_files_hold_exactly_todays_messages():
    wanted = {file: set(texts) for file, texts in messages().items()}
    have = {file: set(entries) for file, entries in read_catalogues().items()}
    stale = {
        file: sorted(have[file] - wanted.get(file, set()))[:3]
        for file in have
        if have[file] - wanted.get(file, set())
    }
    assert not stale, f"messages no longer said (run `python -m autograder messages`): {stale}"


def test_an_exercises_labels_and_references_are_in_its_chapters_file():
    """The Chinese of a new exercise is written in one file: its chapter's .po."""
    files = {file: set(texts) for file, texts in messages().items()}
    for exercise in EXERCISES.values():
        chapter = files[f"ch{exercise.chapter}"]
        templates = [template_pattern(text) for text in chapter if FIELD.search(text)]
        labels = [case.label for case in exercise.edge_cases() if case.label]
        for text in [exercise.references_text, *labels]:
            filled = any(pattern.fullmatch(text) for pattern in templates)
            assert text in chapter or filled, (exercise.name, text)
    assert "the Q&A case, (2,2,2) @ (2,2)" in files["ch03"]
    assert "a weight shared by a batch" in files["ch03"]  # a label held in a variable
    assert not files["ch03"] & files["core"]


def test_a_text_two_chapters_say_is_translated_alike_in_both():
    seen: dict[str, tuple[str, str]] = {}
    for file, entries in read_catalogues().items():
        for text, translation in entries.items():
            first = seen.setdefault(text, (file, translation))
            assert first[1] == translation, (text, first[0], file)


def test_a_chapter_modules_own_words_go_to_its_file_and_shared_words_to_core():
    exercises = locale.FOLDER.parent / "exercises"
    assert file_of_source(exercises / "ch03_unbroadcasting.py") == "ch03"
    assert file_of_source(exercises / "common.py") == "core"
    assert file_of_source(locale.FOLDER.parent / "harness" / "ch02_reverse_mode_tape.py") == "core"
    placed = assign([("ch03", "a"), ("core", "a"), ("ch02", "b"), ("ch03", "b"), ("ch03", " ")])
    assert placed == {"core": ["a"], "ch02": ["b"], "ch03": ["b"]}


def test_say_fills_the_same_values_in_both_languages():
    template = "{name} has shape {got}, expected {expected}."
    english = say(template, name="g_x", got=(2, 3), expected=(3,))
    with speaking("zh-CN"):
        chinese = say(template, name="g_x", got=(2, 3), expected=(3,))
    assert english == "g_x has shape (2, 3), expected (3,)."
    assert CJK_TEXT.search(chinese)
    assert all(part in chinese for part in ("g_x", "(2, 3)", "(3,)"))


def test_text_made_in_the_child_is_translated_by_its_template():
    """The harness (confined child) says English; the report matches it to the template."""
    from autograder.harness import english
    from autograder.judging.attempts import raised_message

    text = english(
        "directional_derivative must return one number (the derivative of f along "
        "v), not an array of shape {shape}.",
        shape=(3, 2),
    )
    with speaking("zh-CN"):
        translated = localize(text)
        reported = raised_message("ValueError", text)
    assert CJK_TEXT.search(translated) and "(3, 2)" in translated
    assert translated in reported and "ValueError" in reported  # Python's names stay
    assert localize(text) == text  # English outside the Chinese context


def test_a_framework_message_inside_a_template_is_left_as_the_framework_wrote_it():
    said = "got an unexpected keyword argument 'variables'"
    with speaking("zh-CN"):
        text = localize(
            f"grad_fn must return one gradient per input of the custom-gradient "
            f"function, in order. (TensorFlow said: {said})"
        )
    assert said in text and CJK_TEXT.search(text)


def test_an_unknown_language_is_refused_and_zh_variants_are_chinese():
    with pytest.raises(ValueError, match="Unknown language"):
        locale.set_language("fr")
    assert [locale.normalized(code) for code in ("zh", "zh_CN", "zh-cn", None, "en")] == [
        CHINESE,
        CHINESE,
        CHINESE,
        "en",
        "en",
    ]


def test_framework_error_messages_stay_verbatim_in_english():
    error = "In[0] and In[1] has different ndims: [3] vs. [3,4] [Op:MatMul]"
    with speaking("zh-CN"):
        text = say("raised {type_name}: {error}", type_name="InvalidArgumentError", error=error)
    assert error in text and re.search(CJK_TEXT, text)
