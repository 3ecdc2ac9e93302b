"""A ReAct code agent for AppWorld: the model writes Python, `world.execute` runs it against the
apps and returns the output, up to `max_interactions` times or until the task is marked complete;
then `world.evaluate()` runs the task's tests. Standard library and `openai` only (the harness
runs in AppWorld's environment).

The world is anything with AppWorld's interface as used here: `AppWorld(task_id=...,
experiment_name=...)` as a context manager, `world.task.instruction`, `world.task.supervisor`
(`first_name`, `last_name`, `email`, `phone_number`), `world.execute(code) -> str`,
`world.task_completed() -> bool` and `world.evaluate()` (a tracker with `passes` and `failures`).
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any, Callable, ContextManager, Protocol

from openai import AsyncOpenAI, BadRequestError

from benchmark.runs import ask


class World(Protocol):
    task: Any

    def execute(self, code: str) -> str: ...

    def task_completed(self) -> bool: ...

    def evaluate(self) -> Any: ...


WorldFactory = Callable[..., ContextManager[World]]
Recall = Callable[[str], "tuple[str, list[str]]"]

PROMPT = """I supervise you, an AI assistant that does my day-to-day tasks on my apps (spotify, venmo, \
gmail, file system, phone, ...) fully on its own, through their APIs in a Python REPL. Each of your replies \
is one block of Python code; the environment runs it and shows you its output, and you go on from there.

Find the APIs you need with:
    print(apis.api_docs.show_app_descriptions())
    print(apis.api_docs.show_api_descriptions(app_name='spotify'))
    print(apis.api_docs.show_api_doc(app_name='spotify', api_name='login'))
and call one as apis.<app>.<api>(...). My accounts' passwords, my addresses and payment cards are \
in the supervisor app (apis.supervisor....).

Rules:
- Reply with plain Python code only; put any thoughts in comments.
- Write small steps and check what they return before changing anything that cannot be undone.
- Variables persist between your code blocks. Only the standard library is available; the file system in \
tasks is the file_system app, not the machine's.
- Read every page of paged APIs. Get the current date and time from Python (datetime.now()), never from memory.
- People I mention (friends, family, ...) are in my phone's contacts.
- When done, call apis.supervisor.complete_task(), with answer=<the answer> when the task asks for \
information (just the entity or the number). If you cannot do it, call \
apis.supervisor.complete_task(status="fail").
- Decide everything yourself; never ask me.
{experience}
My name is {first_name} {last_name}; my email is {email} and my phone number is {phone_number}.

Task: {instruction}"""

EXPERIENCE = "\nExperience from similar tasks, which may help:\n{text}\n"

_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


def prompt(world: World, experience: str) -> str:
    supervisor = world.task.supervisor
    return PROMPT.format(experience=EXPERIENCE.format(text=experience) if experience else "",
                         instruction=world.task.instruction,
                         **{k: getattr(supervisor, k, "") for k in ("first_name", "last_name", "email", "phone_number")})


def code_of(reply: str) -> str:
    """The code in a reply: the fenced blocks when the model fenced it, else all of it."""
    blocks = _FENCE.findall(reply)
    return "\n".join(blocks) if blocks else reply


async def run_task(client: AsyncOpenAI, model: str, make_world: WorldFactory, task_id: str, *, experiment: str,
                   recall: Recall | None = None, temperature: float = 0.0, max_interactions: int = 30,
                   max_output: int = 2048, extra_body: dict[str, Any] | None = None) -> dict[str, Any]:
    """One run of a task: `success` (every test passed: task goal completion), `score` (the same
    as 0 / 1), `test_pass_rate`, tokens, seconds, interactions, the conversation, the ids of the
    lessons `recall` (given the instruction: prompt text and ids) put into the prompt, and why
    the endpoint refused a request (HTTP 400, e.g. past the context), which ends the run."""
    started = time.perf_counter()
    usage = {"prompt_tokens": 0, "completion_tokens": 0}
    interactions = 0
    with make_world(task_id=task_id, experiment_name=experiment) as world:
        instruction = str(world.task.instruction)
        experience, memory_ids = await asyncio.to_thread(recall, instruction) if recall else ("", [])
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt(world, experience)}]
        refused = ""
        while interactions < max_interactions and not world.task_completed():
            try:
                response = await ask(client, usage, model=model, messages=messages, temperature=temperature,
                                     extra_body=extra_body)
            except BadRequestError as exc:  # e.g. the conversation outgrew the context: the run ends here
                refused = str(exc)[:1000]
                break
            interactions += 1
            reply = response.choices[0].message.content or ""
            output = world.execute(code_of(reply))
            messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": output[:max_output]}]
        tracker = world.evaluate()
        passed, failed = len(tracker.passes), len(tracker.failures)
    success = failed == 0 and passed > 0
    return {"success": success, "score": float(success), "test_pass_rate": round(passed / max(1, passed + failed), 4),
            **usage,
            "seconds": round(time.perf_counter() - started, 3), "interactions": interactions,
            "instruction": instruction, "messages": messages, "memory_ids": memory_ids, "refused": refused}
