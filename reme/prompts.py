"""`PromptLibrary`: Jinja2 templates from `prompts/`, overridable by name from a user folder.

Templates are `<memory type>/<name>.<language>.jinja` (e.g. `personal/extract.en.jinja`). A user
folder given as `prompts.dir` is searched first, so `<dir>/personal/extract.en.jinja` replaces the
built-in one. Rendering is strict: a variable the template uses but the caller did not pass is an
error, never an empty string.

`TEMPLATES` documents every template and the variables it is rendered with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from reme.errors import PromptError

LANGUAGES = ("en", "zh")

TEMPLATES: dict[str, dict[str, str]] = {
    "personal/extract": {
        "user_name": "str: whose memories to extract",
        "conversation": "str: the lines worth reading, marked `> `, and the line before each, "
                        "`[index] [time] speaker: text`",
    },
    "personal/reconcile": {
        "user_name": "str: whose memories these are",
        "existing": "list of {id: int, content: str, time: str}: stored memories similar to the candidates",
        "candidates": "list of {index: int, content: str, time: str}: memories just extracted",
    },
    "personal/repair": {
        "user_name": "str: whose memories these are",
        "conversation": "str: the lines the memories cite and those around them, `[index] [time] speaker: text`",
        "memories": "list of {index: int, content: str, problem: str}: memories that cannot stand on their own",
    },
    "personal/rewrite": {
        "query": "str: the question to answer",
        "user_name": "str: whose memories will be searched",
        "today": "str: the current date (YYYY-MM-DD), to resolve relative dates against",
        "max_queries": "int: how many search queries to write at most",
    },
    "procedural/success": {
        "task": "str: the task the agent was given",
        "trajectory": "str: the run, one `[index] role: text` line per message",
        "score": "float: the run's outcome score",
    },
    "procedural/failure": {
        "task": "str: the task the agent was given",
        "trajectory": "str: the run, one `[index] role: text` line per message",
        "score": "float: the run's outcome score",
    },
    "procedural/comparative": {
        "task": "str: the task both runs worked on",
        "best": "str: the best-scoring run", "best_score": "float",
        "worst": "str: the worst-scoring run", "worst_score": "float",
    },
    "procedural/validate": {
        "task_name": "str: the task family the lessons are for",
        "candidates": "list of {index: int, category: str, when_to_use: str, content: str}",
    },
    "procedural/rerank": {
        "query": "str: the new task",
        "candidates": "list of {index: int, when_to_use: str, content: str}",
        "top_k": "int: how many to return at most",
    },
    "procedural/rewrite": {
        "query": "str: the new task",
        "experiences": "list of {when_to_use: str, content: str}",
    },
    "context/compact": {
        "previous_summary": "str: the summary so far (empty for the first compaction)",
        "conversation": "str: the messages to compact, one `[index] speaker: text` line each (long ones cut)",
    },
    "tool/guideline": {
        "tool_name": "str: the tool",
        "stats": "ToolStats: calls, success_rate, time_mean, time_p95, tokens_mean, tokens_p95, top_failures "
                 "(list of {message, count})",
        "calls": "list of {input, output, success, time_cost, token_cost, error}: recent calls",
        "previous": "str: the current guideline, empty for a new tool",
    },
}


def _builtin_dir() -> Path:
    # Installed: the wheel ships prompts/ as reme/prompt_templates. Source checkout: the top-level prompts/.
    here = Path(__file__).resolve().parent
    candidates = (here / "prompt_templates", here.parent / "prompts")
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise PromptError(f"the built-in prompts folder is missing (looked in {', '.join(map(str, candidates))})")


class PromptLibrary:
    """Renders `<type>/<name>` in a language, user overrides first."""

    def __init__(self, language: str = "en", override_dir: str | Path | None = None) -> None:
        if language not in LANGUAGES:
            raise PromptError(f"prompt language must be one of {', '.join(LANGUAGES)}, not {language!r}")
        self.language = language
        self.builtin_dir = _builtin_dir()
        folders = [self.builtin_dir]
        if override_dir is not None:
            override = Path(override_dir).expanduser()
            if not override.is_dir():
                raise PromptError(f"prompt override folder {override} does not exist")
            folders.insert(0, override)
        self.env = jinja2.Environment(loader=jinja2.FileSystemLoader([str(f) for f in folders]),
                                      undefined=jinja2.StrictUndefined, autoescape=False,
                                      keep_trailing_newline=False, trim_blocks=True, lstrip_blocks=True)

    def template_name(self, name: str, language: str | None = None) -> str:
        return f"{name}.{language or self.language}.jinja"

    def render(self, name: str, *, language: str | None = None, **variables: Any) -> str:
        """The text of template `name` (e.g. "personal/extract") rendered with `variables`."""
        file = self.template_name(name, language)
        try:
            return self.env.get_template(file).render(**variables).strip()
        except jinja2.TemplateNotFound:
            raise PromptError(f"no prompt template {file}") from None
        except jinja2.UndefinedError as exc:
            raise PromptError(f"prompt template {file}: {exc.message}") from None
        except jinja2.TemplateSyntaxError as exc:
            raise PromptError(f"prompt template {file} line {exc.lineno}: {exc.message}") from None

    def messages(self, name: str, **variables: Any) -> list[dict[str, str]]:
        """The template as a one-message chat, ready for `ChatModel`."""
        return [{"role": "user", "content": self.render(name, **variables)}]
