"""The agent: OpenAI function calling over BFCL's stateful backends, turn by turn, as BFCL's own
OpenAI function-calling handler runs a multi-turn entry; then BFCL's multi-turn checker scores it.

Per turn the user's message is added and the model is called until it answers without tool
calls (or with calls that do not decode); each step's calls are decoded with BFCL's
`convert_to_function_call` and executed by `execute_multi_turn_func_call`, whose backend
instances (file system, trading bot, ...) keep their state across the turns of one run. More
than BFCL's `MAXIMUM_STEP_LIMIT` steps in a turn ends the run (scored as force-terminated), and so
does a request the endpoint refuses (HTTP 400, e.g. a conversation longer than the context).
Scoring replays the decoded calls and the ground truth on fresh instances and compares state and
results after every turn (`multi_turn_checker`), exactly as BFCL's evaluation does.
"""

from __future__ import annotations

import copy
import json
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

from bfcl_eval.constants.default_prompts import MAXIMUM_STEP_LIMIT
from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (execute_multi_turn_func_call,
                                                                     is_empty_execute_response)
from bfcl_eval.model_handler.model_style import ModelStyle
from bfcl_eval.model_handler.utils import (convert_to_function_call, convert_to_tool,
                                           func_doc_language_specific_pre_processing)
from openai import AsyncOpenAI, BadRequestError

from benchmark.bfcl.data import CATEGORY, Task
from benchmark.runs import ask

EXPERIENCE = "Task:\n{query}\n\nSome Related Experience to help you to complete the task:\n{experience}"
"""How the original ReMe's BFCL agent put retrieved experience into the task's first message."""


def tools_of(task: Task) -> list[dict[str, Any]]:
    """The task's functions as OpenAI tools, converted as BFCL's OpenAI handler converts them."""
    functions = func_doc_language_specific_pre_processing(copy.deepcopy(task.functions), CATEGORY)
    tools: list[dict[str, Any]] = convert_to_tool(functions, GORILLA_TO_OPENAPI, ModelStyle.OpenAI_Completions)
    return tools


@dataclass
class Call:
    """One tool call of a step: native (the endpoint's `tool_calls`) or read from the reply text."""

    id: str
    name: str
    arguments: str  # JSON text, as OpenAI sends it


_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCED = re.compile(r"```(?:json|JSON|tool_call)?\s*\n?(.*?)```", re.DOTALL)


def _loads(text: str) -> Any:
    """JSON, or JSON whose braces were doubled (`{{"name": ...}}`, as some chat templates show
    tool calls to the model); None when neither parses."""
    for candidate in (text, text.replace("{{", "{").replace("}}", "}")):
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return None


def json_tool_calls(content: str, names: set[str]) -> list[Call]:
    """Tool calls a model wrote as JSON in its reply text instead of the endpoint's `tool_calls`:
    `<tool_call>{...}</tool_call>` blocks (Qwen / Hermes style), a fenced JSON block, or the whole
    reply; each object `{"name": ..., "arguments": {...}}` (also `parameters` / `args`, or wrapped
    in `{"function": ...}`), alone or in a list. Calls naming a function the task does not offer
    are dropped; no calls (plain text) gives []."""
    blocks = _TAGGED.findall(content) or _FENCED.findall(content) or [content.strip()]
    found: list[Any] = []
    for block in blocks:
        data = _loads(block.strip())
        if data is None:  # several objects one after another, one per line
            data = [d for d in (_loads(line.strip()) for line in block.splitlines() if line.strip()) if d is not None]
        found += data if isinstance(data, list) else [data]
    calls = []
    for item in found:
        if isinstance(item, dict) and isinstance(item.get("function"), dict):
            item = item["function"]
        if not isinstance(item, dict) or item.get("name") not in names:
            continue
        arguments = next((item[k] for k in ("arguments", "parameters", "args") if k in item), {})
        if isinstance(arguments, str):
            parsed = _loads(arguments)
            arguments = parsed if isinstance(parsed, dict) else arguments
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        calls.append(Call(id=f"call_{uuid.uuid4().hex[:12]}", name=item["name"], arguments=text))
    return calls


def _failed(result: str) -> bool:
    return result.startswith("Error during execution") or result.startswith('{"error"')


async def run_task(client: AsyncOpenAI, model: str, task: Task, *, tag: str, experience: str = "",
                   temperature: float = 0.0, extra_body: dict[str, Any] | None = None,
                   json_calls: bool = False) -> dict[str, Any]:
    """One run of `task`: its score (1.0 when BFCL's checker accepts it), the checker's verdict,
    tokens, seconds, steps, the conversation (`messages`) and every executed call (`calls`).
    `tag` names this run's backend instances; it must be unique among runs in flight. With
    `json_calls`, a reply without `tool_calls` whose text holds calls written as JSON
    (`json_tool_calls`) is taken as those calls (`text_calls` counts such steps)."""
    started = time.perf_counter()
    tools = tools_of(task)
    names = {t["function"]["name"] for t in tools}
    text_calls = 0
    messages: list[dict[str, Any]] = []
    turns: list[list[Any]] = []  # per turn, per step: what the model answered ({name: arguments} or text)
    calls: list[dict[str, Any]] = []
    usage = {"prompt_tokens": 0, "completion_tokens": 0}
    steps = 0
    forced, refused = False, ""
    for index, turn in enumerate(task.question):
        turn = copy.deepcopy(turn)
        if index == 0 and experience:
            first = next(m for m in turn if m["role"] == "user")
            first["content"] = EXPERIENCE.format(query=first["content"], experience=experience)
        messages += turn
        answers: list[Any] = []
        for step in range(MAXIMUM_STEP_LIMIT + 1):
            try:
                response = await ask(client, usage, model=model, messages=messages, tools=tools,
                                     temperature=temperature, extra_body=extra_body)
            except BadRequestError as exc:  # e.g. the conversation outgrew the context: this run fails
                refused = str(exc)[:1000]
                break
            steps += 1
            message = response.choices[0].message
            tool_calls = [Call(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []
                          if c.type == "function"]
            if not tool_calls and json_calls and message.content:
                tool_calls = json_tool_calls(message.content, names)
                text_calls += bool(tool_calls)
            said: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
            if tool_calls:
                said["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                    "name": c.name, "arguments": c.arguments}} for c in tool_calls]
                if text_calls and not message.tool_calls:
                    said["content"] = ""  # the calls are in tool_calls now, not twice in the history
            messages.append(said)
            answer: Any = [{c.name: c.arguments} for c in tool_calls] or message.content or ""
            answers.append(answer)
            try:
                decoded: list[str] = convert_to_function_call(answer)
            except Exception:  # text, or arguments that are not JSON: the turn ends, as in BFCL
                decoded = []
            if is_empty_execute_response(decoded):
                # Keep the conversation valid for the next turn: every call gets an answer.
                messages += [{"role": "tool", "tool_call_id": c.id, "content": "Error: the call could not be decoded"}
                             for c in tool_calls]
                break
            results, _ = execute_multi_turn_func_call(decoded, task.initial_config, task.involved_classes, tag,
                                                      task.id)
            for call, source, result in zip(tool_calls, decoded, results):
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
                calls.append({"name": call.name, "arguments": call.arguments, "source": source,
                              "output": result, "success": not _failed(result)})
        else:
            forced = True
        turns.append(answers)
        if forced or refused:
            break
    if refused:
        forget(task, tag)
        verdict = {"valid": False, "error_type": "multi_turn:inference_error", "error_message": refused}
    else:
        verdict = check(task, turns, tag)
    return {"score": 1.0 if verdict["valid"] else 0.0, "success": verdict["valid"], **verdict,
            **usage, "seconds": round(time.perf_counter() - started, 3), "steps": steps, "text_calls": text_calls,
            "messages": messages, "calls": calls}


def check(task: Task, turns: list[list[Any]], tag: str) -> dict[str, Any]:
    """BFCL's verdict on a run's answers, decoded as its evaluation runner decodes them."""
    try:
        if len(turns) != len(task.ground_truth):
            return {"valid": False, "error_type": "multi_turn:force_terminated",
                    "error_message": f"the run stopped after {len(turns)} of {len(task.ground_truth)} turns"}
        decoded: list[list[list[str]]] = []
        for answers in turns:
            executable = []
            for answer in answers:
                try:
                    calls = convert_to_function_call(answer)
                except Exception:  # chat, not calls: ignored, as BFCL does
                    continue
                if not is_empty_execute_response(calls):
                    executable.append(calls)
            decoded.append(executable)
        entry = {"id": task.id, "initial_config": task.initial_config, "involved_classes": task.involved_classes}
        result = multi_turn_checker(decoded, task.ground_truth, entry, CATEGORY, tag)
        return {"valid": bool(result["valid"]), "error_type": result.get("error_type"),
                "error_message": result.get("error_message")}
    finally:
        forget(task, tag)


def forget(task: Task, tag: str) -> None:
    """Drop the backend instances BFCL keeps in its module's globals for this run (the agent's,
    and the checker's for the model and the ground truth), so memory stays flat over a long run."""
    registry = vars(multi_turn_utils)
    for prefix in (tag, f"{tag}_eval", f"{tag}_ground_truth_eval"):
        for name in task.involved_classes:
            registry.pop(f"{prefix}_{task.id}_{name.lower()}_instance", None)


def trajectory(task: Task, run: dict[str, Any]) -> dict[str, Any]:
    """A run as a ReMe trajectory: its messages as text (calls written as Python), its score."""
    messages = []
    for m in run["messages"]:
        content = m.get("content") or ""
        if m.get("tool_calls"):
            content = "\n".join([content] * bool(content) + [
                f"{c['function']['name']}({_arguments(c['function']['arguments'])})" for c in m["tool_calls"]])
        if content:
            messages.append({"role": m["role"], "content": content})
    return {"messages": messages, "score": run["score"], "query": task.query,
            "metadata": {"task_id": task.id, "error_type": run.get("error_type") or ""}}


def _arguments(raw: str) -> str:
    try:
        args = json.loads(raw)
    except ValueError:
        return raw
    return ", ".join(f"{k}={v!r}" for k, v in args.items()) if isinstance(args, dict) else raw
