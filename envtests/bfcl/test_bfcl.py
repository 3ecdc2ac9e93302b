"""The BFCL harness end to end: `python -m benchmark.bfcl` against the scripted OpenAI-compatible
server, with BFCL's real data, backends and multi-turn checker from bfcl-eval==2025.7.17. A model
that replays a task's ground-truth calls passes BFCL's checker; one that replays wrong calls fails."""

from __future__ import annotations

import ast
import asyncio
import importlib
import inspect
import json
from pathlib import Path
from typing import Any, Callable

from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
from openai_server import Message, OpenAITestServer

from benchmark.bfcl.data import load_tasks, package_data, split_ids
from benchmark.bfcl.run import TASK_NAME, main
from reme import ReMe

VAL = split_ids("val")[:3]  # multi_turn_base_0, _1, _2: file system, messages, tickets, tweets
SUMMARIZE = ["completed the task below successfully", "failed the task below", "Compare them",
             "Rate each candidate lesson", "Write the usage guideline"]


def tool_call(source: str, classes: list[str]) -> dict[str, Any]:
    """A ground-truth call written as Python (`sort('a.pdf')`) as an OpenAI tool call: positional
    arguments get their names from the backend method's signature."""
    call = ast.parse(source, mode="eval").body
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
    arguments = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    if call.args:
        for name in classes:
            cls = getattr(importlib.import_module(multi_turn_utils.CLASS_FILE_PATH_MAPPING[name]), name)
            if hasattr(cls, call.func.id):
                params = [p for p in inspect.signature(getattr(cls, call.func.id)).parameters if p != "self"]
                arguments.update({params[i]: ast.literal_eval(a) for i, a in enumerate(call.args)})
                break
    return {"name": call.func.id, "arguments": arguments}


def replay(plans: dict[str, list[list[str]]]) -> Callable[[dict[str, Any]], Message]:
    """A model that, in turn t of a task (known by its requests so far), makes the planned calls of
    turn t in one step, then says it is done."""
    tasks = {t.id: t for t in load_tasks(package_data(), list(plans))}

    def reply(body: dict[str, Any]) -> Message:
        messages = body["messages"]
        asked = [m["content"] for m in messages if m["role"] == "user"]
        # The task whose requests these are (two tasks may open with the same request).
        task = next(t for t in tasks.values() if t.query in asked[0] and
                    asked[1:] == [turn[0]["content"] for turn in t.question[1:len(asked)]])
        if messages[-1]["role"] == "tool":
            return Message("Done.")
        calls = plans[task.id][len(asked) - 1]
        return Message(tool_calls=[tool_call(c, task.involved_classes) for c in calls]) if calls else Message("No.")
    return reply


def ground_truth(ids: list[str]) -> dict[str, list[list[str]]]:
    return {t.id: t.ground_truth for t in load_tasks(package_data(), ids)}


def bench(llm: OpenAITestServer, tmp_path: Path, *args: str) -> dict[str, Any]:
    output = tmp_path / "bfcl.json"
    assert main(["--model", "test-model", "--base-url", llm.base_url, "--api-key", "k", "--output", str(output),
                 "--embedding", "hash", *args]) == 0
    assert output.with_suffix(".md").read_text().startswith("## BFCL-v3 multi_turn_base")
    report: dict[str, Any] = json.loads(output.read_text())
    return report


def agent_requests(llm: OpenAITestServer) -> list[dict[str, Any]]:
    return [b for b in llm.chat_requests if b.get("tools")]


def test_ground_truth_calls_pass_bfcl_checker_in_every_run(llm: OpenAITestServer, tmp_path: Path) -> None:
    llm.script("", replay(ground_truth(VAL)))
    report = bench(llm, tmp_path, "--tasks", "3", "--runs", "2", "--concurrency", "4")
    assert report["summary"]["val"] == {**report["summary"]["val"], "tasks": 3, "runs": 2, "avg@2": 1.0,
                                        "pass@2": 1.0}
    for task_id in VAL:
        assert [(r["success"], r["error_type"]) for r in report["tasks"]["val"][task_id]] == [(True, None)] * 2
    assert report["summary"]["val"]["prompt_tokens_per_run"] > 0
    first = load_tasks(package_data(), VAL[:1])[0]  # file system and tweets
    tools = [{t["function"]["name"] for t in b["tools"]} for b in agent_requests(llm)
             if first.query in b["messages"][0]["content"]]
    assert tools and all(t == {f["name"] for f in first.functions} for t in tools)  # BFCL's docs as OpenAI tools
    assert {"cd", "mkdir", "mv", "post_tweet"} <= tools[0]
    # Backend state is carried across turns: the second turn's `cd(folder='temp')` works only
    # because the first turn created it; its result reaches the model as a tool message.
    tool_results = [m["content"] for b in agent_requests(llm) for m in b["messages"] if m["role"] == "tool"]
    assert any('"current_working_directory": "temp"' in r for r in tool_results)
    assert not any(r.startswith(("Error during execution", '{"error"')) for r in tool_results)
    # Every backend instance of the runs was dropped once scored.
    assert not [k for k in vars(multi_turn_utils) if k.startswith("reme_")]

    before = len(llm.chat_requests)  # --resume: everything is checkpointed, nothing runs again
    again = bench(llm, tmp_path, "--tasks", "3", "--runs", "2", "--concurrency", "4", "--resume")
    assert len(llm.chat_requests) == before and again["summary"] == report["summary"]


def test_wrong_calls_fail_bfcl_checker(llm: OpenAITestServer, tmp_path: Path) -> None:
    plan = ground_truth(VAL[:1])
    turns = plan[VAL[0]]
    turns[0] = ["cd(folder='document')", "mkdir(dir_name='tmp')", "mv(source='final_report.pdf', destination='tmp')"]
    llm.script("", replay(plan))
    report = bench(llm, tmp_path, "--tasks", "1", "--runs", "1")
    (run,) = report["tasks"]["val"][VAL[0]]
    assert (run["score"], run["success"], run["error_type"]) == (0.0, False, "multi_turn:instance_state_mismatch")
    assert report["summary"]["val"]["avg@1"] == 0.0 and report["summary"]["val"]["pass@1"] == 0.0


def pool_line(when: str, content: str) -> str:
    return json.dumps({"workspace_id": "bfcl", "memory_id": "3bd4929d874a4750b0d4ab78c0246299",
                       "memory_type": "procedural", "when_to_use": when, "content": content, "score": 0,
                       "time_created": "2025-09-20 11:22:49", "time_modified": "2025-09-20 11:22:49",
                       "author": "qwen3-8b", "metadata": {"task_query": when, "utility": 0, "freq": 0}})


def test_pool_lessons_reach_the_prompt_and_their_usage_is_counted(llm: OpenAITestServer, tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text(pool_line("Move 'final_report.pdf' within document directory to 'temp' directory",
                              "cd into document first, create temp with mkdir, then mv the file") + "\n")
    llm.script("", replay(ground_truth(VAL[:1])))
    report = bench(llm, tmp_path, "--memory", "pool", str(pool), "--tasks", "1", "--runs", "2",
                   "--concurrency", "1", "--working-dir", str(tmp_path / "store"))
    first = agent_requests(llm)[0]["messages"][0]["content"]
    assert first.startswith("Task:\nMove 'final_report.pdf'")
    assert "Some Related Experience" in first and "create temp with mkdir" in first
    runs = report["tasks"]["val"][VAL[0]]
    assert all(r["success"] and len(r["memory_ids"]) == 1 for r in runs)

    async def counters() -> dict[str, Any]:
        async with ReMe(working_dir=tmp_path / "store", embedding={"backend": "hash", "dimensions": 384}) as reme:
            node = await reme.get_memory(runs[0]["memory_ids"][0], task_name=TASK_NAME)
            return node.metadata
    assert {k: v for k, v in asyncio.run(counters()).items() if k in ("freq", "utility")} == {"freq": 2, "utility": 2}


def lessons(body: dict[str, Any]) -> dict[str, Any]:
    return {"memories": [{"when_to_use": "When moving a report into a new folder of the document directory",
                          "content": "cd into document, mkdir the folder, then mv the file", "confidence": 0.9}]}


def test_learn_mode_summarizes_train_runs_then_uses_the_lessons_on_val(llm: OpenAITestServer, tmp_path: Path) -> None:
    train = split_ids("train")[:1]
    llm.script(SUMMARIZE[0], lessons)
    llm.script(SUMMARIZE[3], {"results": [{"index": 0, "score": 0.9}]})
    llm.script(SUMMARIZE[4], {"guideline": "Change directory one level at a time."})
    llm.script("", replay(ground_truth(train + VAL[:1])))
    report = bench(llm, tmp_path, "--memory", "learn", "--tasks", "1", "--runs", "1")
    assert report["summary"]["learn"]["avg@1"] == 1.0 and report["summary"]["val"]["avg@1"] == 1.0
    assert report["learned"]["lessons"] == 1 and report["learned"]["tools"] >= 2  # cd, mv, ...
    summaries = [b for b in llm.chat_requests if not b.get("tools")]
    assert any(SUMMARIZE[0] in m["content"] and "mv(" in m["content"] for b in summaries for m in b["messages"])
    val_first = next(b for b in agent_requests(llm) if split_ids("val")[0] != train[0] and
                     "Some Related Experience" in b["messages"][0]["content"])["messages"][0]["content"]
    assert "cd into document, mkdir the folder" in val_first
    assert "Tool guidelines:" in val_first and "Change directory one level at a time." in val_first
    assert report["tasks"]["val"][VAL[0]][0]["memory_ids"]


def test_a_refused_request_fails_that_run_and_the_benchmark_goes_on(llm: OpenAITestServer, tmp_path: Path) -> None:
    second = load_tasks(package_data(), VAL[1:2])[0]
    llm.script(second.query, status=400)  # e.g. a conversation longer than the model's context
    llm.script("", replay(ground_truth(VAL[:2])))
    report = bench(llm, tmp_path, "--tasks", "2", "--runs", "1")
    ok, refused = report["tasks"]["val"][VAL[0]][0], report["tasks"]["val"][VAL[1]][0]
    assert ok["success"] and (refused["success"], refused["error_type"]) == (False, "multi_turn:inference_error")
    assert "400" in refused["error_message"] and report["summary"]["val"]["avg@1"] == 0.5
    assert not [k for k in vars(multi_turn_utils) if k.startswith("reme_")]


def as_text(reply: Callable[[dict[str, Any]], Message], style: str) -> Callable[[dict[str, Any]], Message]:
    """The same model, writing its calls as JSON in the reply text (no `tool_calls`), as a small
    Qwen on llama.cpp does: `<tool_call>` blocks, or one JSON list with doubled braces."""
    def text(body: dict[str, Any]) -> Message:
        message = reply(body)
        if not message.tool_calls:
            return message
        if style == "tagged":
            return Message("\n".join(f"<tool_call>\n{json.dumps(c)}\n</tool_call>" for c in message.tool_calls))
        return Message("```json\n" + json.dumps(message.tool_calls).replace("{", "{{").replace("}", "}}") + "\n```")
    return text


def test_calls_written_as_json_text_pass_with_the_fallback_and_fail_without(llm: OpenAITestServer,
                                                                           tmp_path: Path) -> None:
    plan = ground_truth(VAL[:2])
    llm.script(load_tasks(package_data(), VAL[1:2])[0].query, as_text(replay(plan), "doubled"))
    llm.script("", as_text(replay(plan), "tagged"))
    report = bench(llm, tmp_path, "--tasks", "2", "--runs", "1", "--json-tool-calls")
    runs = [report["tasks"]["val"][t][0] for t in VAL[:2]]
    assert [r["success"] for r in runs] == [True, True] and all(r["text_calls"] > 0 for r in runs)
    assert report["settings"]["json_tool_calls"] is True
    # The calls went back to the model as tool calls with their results, not as text twice.
    later = [b for b in agent_requests(llm) if any(m["role"] == "tool" for m in b["messages"])]
    assert later and all(m.get("tool_calls") and not m["content"] for b in later for m in b["messages"]
                         if m["role"] == "assistant" and m.get("tool_calls"))
    plain = bench(llm, tmp_path / "plain", "--tasks", "2", "--runs", "1")
    assert [plain["tasks"]["val"][t][0]["success"] for t in VAL[:2]] == [False, False]


def test_json_tool_calls_reads_the_shapes_models_write_and_ignores_the_rest() -> None:
    from benchmark.bfcl.agent import json_tool_calls

    names = {"cd", "ls"}

    def read(text: str) -> list[tuple[str, Any]]:
        return [(c.name, json.loads(c.arguments)) for c in json_tool_calls(text, names)]

    assert read('{"name": "cd", "arguments": {"folder": "a"}}') == [("cd", {"folder": "a"})]
    assert read('<tool_call>\n{"name": "cd", "arguments": {"folder": "a"}}\n</tool_call>\n'
                '<tool_call>{"name": "ls", "arguments": {}}</tool_call>') == [("cd", {"folder": "a"}), ("ls", {})]
    assert read('Sure:\n```json\n[{"function": {"name": "ls", "parameters": {"a": true}}}]\n```') == [("ls", {"a": True})]
    assert read('{{"name": "cd", "arguments": {{"folder": "b"}}}}') == [("cd", {"folder": "b"})]
    assert read('{"name": "cd", "arguments": "{\\"folder\\": \\"c\\"}"}') == [("cd", {"folder": "c"})]
    assert read('{"name": "cd", "arguments": {}}\n{"name": "ls", "arguments": {}}') == [("cd", {}), ("ls", {})]
    assert read('{"name": "rm", "arguments": {}}') == [] and read("I moved the file.") == []
    assert read('{"answer": 4}') == [] and read("<tool_call>{broken") == []
