"""Every prompt template renders with its documented variables, in every language; a missing
variable is an error; a user folder overrides templates by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reme.errors import PromptError
from reme.prompts import LANGUAGES, TEMPLATES, PromptLibrary

SAMPLES: dict[str, Any] = {
    "user_name": "Alice",
    "conversation": "[0] [2024-05-03 10:00] Alice: I moved to Berlin last week",
    "today": "2024-05-03",
    "existing": [{"id": 0, "content": "Alice lives in Paris", "time": "2023-01-10"}],
    "query": "Where does Alice live?",
    "max_queries": 3,
    "task": "Alice asks: rate all liked songs 5 stars",
    "trajectory": "[0] user: rate my liked songs\n[1] assistant: calling spotify.review_song",
    "score": 1.0,
    "best": "[0] assistant: used review_song", "best_score": 1.0,
    "worst": "[0] assistant: used get_song_rating", "worst_score": 0.0,
    "task_name": "Alice's spotify tasks",
    "candidates": [{"index": 0, "content": "Alice moved to Berlin", "time": "2024-04-26", "category": "success",
                    "when_to_use": "When Alice rates songs"}],
    "experiences": [{"when_to_use": "When Alice rates songs", "content": "Use review_song"}],
    "top_k": 5,
    "tool_name": "Alice's web_search",
    "stats": {"calls": 3, "success_rate": 0.67, "time_mean": 1.2, "time_p95": 2.0, "tokens_mean": 300,
              "tokens_p95": 400, "top_failures": [{"message": "timeout", "count": 1}]},
    "calls": [{"input": {"q": "x"}, "output": "y", "success": False, "time_cost": 2.0, "token_cost": 400,
               "error": "timeout"}],
    "previous": "",
    "previous_summary": "## Goal\nHelp Alice settle in Berlin",
    "memories": [{"index": 0, "content": "Marine biology.", "problem": "a fragment, not a sentence"}],
}


def test_every_template_on_disk_is_documented_and_every_documented_one_exists() -> None:
    root = PromptLibrary().builtin_dir
    on_disk = {str(p.relative_to(root)) for p in root.rglob("*.jinja")}
    documented = {f"{name}.{lang}.jinja" for name in TEMPLATES for lang in LANGUAGES}
    assert on_disk == documented


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_template_renders_with_its_documented_variables(name: str, language: str) -> None:
    library = PromptLibrary(language)
    text = library.render(name, **{v: SAMPLES[v] for v in TEMPLATES[name]})
    assert "Alice" in text
    assert "{{" not in text and "{%" not in text
    header = (library.builtin_dir / library.template_name(name)).read_text(encoding="utf-8").splitlines()[0]
    assert header == "{#- variables: " + ", ".join(TEMPLATES[name]) + " -#}"  # the file says what it takes


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_a_missing_variable_is_an_error_not_an_empty_string(name: str) -> None:
    library = PromptLibrary()
    for missing in TEMPLATES[name]:
        variables = {v: SAMPLES[v] for v in TEMPLATES[name] if v != missing}
        with pytest.raises(PromptError, match=missing):
            library.render(name, **variables)


def test_override_folder_replaces_a_template_by_name(tmp_path: Path) -> None:
    (tmp_path / "personal").mkdir()
    (tmp_path / "personal" / "rewrite.en.jinja").write_text("Custom for {{ user_name }}: {{ query }}")
    library = PromptLibrary("en", tmp_path)
    text = library.render("personal/rewrite", query="q?", user_name="Bob", today="x", max_queries=1)
    assert text == "Custom for Bob: q?"
    # templates it does not override still come from the built-in folder
    assert "JSON" in library.render("personal/extract", user_name="Bob", conversation="c", today="2024-01-01")


def test_bad_language_folder_or_template_name_are_prompt_errors(tmp_path: Path) -> None:
    with pytest.raises(PromptError, match="language"):
        PromptLibrary("fr")
    with pytest.raises(PromptError, match="does not exist"):
        PromptLibrary("en", tmp_path / "nope")
    with pytest.raises(PromptError, match="no prompt template"):
        PromptLibrary().render("personal/nothing")
    (tmp_path / "personal").mkdir()
    (tmp_path / "personal" / "extract.en.jinja").write_text("{% if %}")
    with pytest.raises(PromptError, match="line 1"):
        PromptLibrary("en", tmp_path).render("personal/extract", user_name="a", conversation="b", today="c")


def test_chinese_prompts_are_chinese() -> None:
    text = PromptLibrary("zh").render("personal/extract", **{v: SAMPLES[v] for v in TEMPLATES["personal/extract"]})
    assert "对话" in text and "JSON" in text
