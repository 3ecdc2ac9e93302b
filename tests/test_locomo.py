"""The LoCoMo harness end to end on the dev split: retrieval mode (no LLM) and full mode against
the scripted loopback LLM, through the same command line a user runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmark.locomo.data import CATEGORIES, load, parse_date
from benchmark.locomo.metrics import bleu1, evidence_scores, token_f1
from benchmark.locomo.run import main

from conftest import SHARED_DATA, shared_data
from openai_server import OpenAITestServer, prompt_of

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _dev_split() -> None:
    shared_data("locomo/locomo10_dev.json")


DEV = SHARED_DATA / "locomo" / "locomo10_dev.json"


def test_data_is_parsed_with_dates_captions_and_normalized_evidence() -> None:
    convs = load(DEV)
    assert [c.sample_id for c in convs] == ["conv-26", "conv-30", "conv-41", "conv-42", "conv-43"]
    first = convs[0]
    assert first.speakers == ("Caroline", "Melanie")
    assert parse_date("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00+00:00"
    turn = next(t for t in first.turns if t.dia_id == "D1:5")
    assert turn.content.startswith("Caroline: The transgender stories") and turn.content.endswith(
        "[shares a photo of a dog walking past a wall with a painting of a woman]")
    evidence = [e for c in convs for q in c.questions for e in q.evidence]
    assert all(re.fullmatch(r"D\d+:\d+", e) for e in evidence)  # 'D:11:26' and 'D8:6; D9:17' normalized
    assert sum(len(q.dropped_evidence) for c in convs for q in c.questions) == 1  # conv-42 cites a missing D10:19
    assert {q.category for c in convs for q in c.questions} == set(CATEGORIES)


def test_scores_follow_the_paper_definitions() -> None:
    ranked = [["D1:1"], ["D1:9", "D1:2"], ["D3:3"]] + [["x"]] * 20
    s = evidence_scores(ranked, ["D1:2", "D3:3", "D9:9"])
    assert s["recall@5"] == pytest.approx(200 / 3) and s["mrr"] == 50.0
    assert evidence_scores([["x"]] * 30, ["D1:1"])["mrr"] == 0.0
    assert token_f1("on 7 May 2023", "7 May 2023") == pytest.approx(100 * 2 * 0.75 / 1.75)
    assert bleu1("7 May 2023", "7 May 2023") == 100.0 and bleu1("", "x") == 0.0


def run_cli(tmp_path: Path, *args: str) -> dict[str, Any]:
    out = tmp_path / "result.json"
    code = main(["--data", str(DEV), "--output", str(out), "--embedding", "hash", *args])
    assert code == 0
    return json.loads(out.read_text())


def test_observations_are_stored_as_each_speakers_memories_citing_their_turns(tmp_path: Path) -> None:
    report = run_cli(tmp_path, "--conversations", "1", "--questions", "30", "--memories", "observations")
    assert report["memories"] == "observations"
    assert report["settings"]["memories"] == "observations"
    default = report["retrievers"]["default"]["overall"]
    assert default["n"] > 0 and 0 < default["recall@20"] <= 100  # facts map back to the turns they cite
    again = run_cli(tmp_path, "--conversations", "1", "--questions", "30", "--memories", "observations")
    assert again["retrievers"] == report["retrievers"]


def test_observation_nodes_follow_the_summarizer_layout() -> None:
    from benchmark.locomo.run import Corpus, observation_nodes

    conv = load(DEV, 1)[0]
    nodes = observation_nodes(conv)
    histories = {n.memory_id: n for n in nodes if n.memory_type.value == "history"}
    facts = [n for n in nodes if n.memory_type.value == "personal"]
    assert {n.memory_target for n in facts} == {"conv-26:Caroline", "conv-26:Melanie"}
    first = next(n for n in facts if n.content.startswith("Caroline attended an LGBTQ support group"))
    corpus = Corpus("observations", [conv])
    corpus.histories = histories
    assert corpus.ranked(conv, [first]) == [["D1:3"]]
    assert histories[first.ref_ids[0]].memory_target == first.memory_target  # cites its own speaker's copy


def test_turns_cite_their_session_in_order() -> None:
    from benchmark.locomo.run import turn_nodes

    conv = load(DEV, 1)[0]
    nodes = turn_nodes(conv)
    histories = {n.memory_id: n for n in nodes if n.memory_type.value == "history"}
    turns = [n for n in nodes if n.memory_type.value == "personal"]
    assert len(histories) == len(conv.sessions) and len(turns) == len(conv.turns)
    for node in turns:  # the neighbours of a turn are found through its session and its index there
        spans = histories[node.ref_ids[0]].metadata["messages"]
        assert spans[node.metadata["source_turns"][0]]["id"] == node.metadata["dia_id"]
    second = next(n for n in turns if n.metadata["dia_id"] == "D1:2")
    assert second.metadata["source_turns"] == [1] and second.memory_target == "conv-26"


def test_embedding_cache_is_reused_and_refuses_another_embedder(tmp_path: Path) -> None:
    cache = tmp_path / "vectors.jsonl"
    first = run_cli(tmp_path, "--conversations", "1", "--questions", "10", "--embedding-cache", str(cache))
    size = cache.stat().st_size
    again = run_cli(tmp_path, "--conversations", "1", "--questions", "10", "--embedding-cache", str(cache))
    assert again["retrievers"] == first["retrievers"] and cache.stat().st_size == size  # nothing embedded again
    with pytest.raises(SystemExit, match="another embedder"):
        run_cli(tmp_path, "--conversations", "1", "--questions", "10", "--embedding-cache", str(cache),
                "--embedding-model", "other")


def test_cross_validation_reports_out_of_fold_beside_in_sample(tmp_path: Path) -> None:
    report = run_cli(tmp_path, "--conversations", "2", "--questions", "15", "--cv")
    cv = report["cross_validation"]
    assert [f["held_out"] for f in cv["folds"]] == ["conv-26", "conv-30"]
    assert all(f["chosen"] in cv["grid"] for f in cv["folds"])
    oof, best = cv["out_of_fold"]["overall"], cv["in_sample_best"]["overall"]
    assert oof["n"] == best["n"] == report["retrievers"]["default"]["overall"]["n"]
    assert oof["recall@10"] <= best["recall@10"]  # a choice made on all the data is at least as good there
    assert cv["in_sample_default"]["overall"] == report["retrievers"]["default"]["overall"]
    for variant, weight in [("without_time", "time_weight"), ("without_naming", "named_weight")]:
        assert cv[f"out_of_fold_{variant}"]["overall"]["n"] == oof["n"]
        assert all(not f["chosen"][weight] for f in cv[f"folds_{variant}"])  # chosen among those settings only
    assert "out-of-fold, without naming" in (tmp_path / "result.md").read_text()


def test_retrieval_mode_reports_every_retriever_and_is_deterministic_and_resumable(tmp_path: Path) -> None:
    report = run_cli(tmp_path, "--conversations", "1", "--questions", "40")
    assert report["mode"] == "retrieval" and set(report["retrievers"]) == {"default", "keyword", "dense"}
    for result in report["retrievers"].values():
        overall = result["overall"]
        assert set(overall) == {"recall@5", "recall@10", "recall@20", "mrr", "n"}
        assert 0 <= overall["recall@5"] <= overall["recall@10"] <= overall["recall@20"] <= 100
        assert set(result["by_category"]) == {"multi-hop", "temporal", "open-domain", "single-hop"}
        assert overall["n"] == sum(g["n"] for g in result["by_category"].values())
    assert report["retrievers"]["default"]["overall"]["recall@20"] > 0
    table = (tmp_path / "result.md").read_text()
    assert "| default | overall (1-4) |" in table and "adversarial (5)" in table and "DRAGON" in table

    again = run_cli(tmp_path, "--conversations", "1", "--questions", "40")
    assert again["retrievers"] == report["retrievers"]

    # interrupt: drop the last ten answered questions, then resume
    partial = tmp_path / "result.partial.jsonl"
    lines = partial.read_text().splitlines()
    partial.write_text("\n".join(lines[:-10]) + "\n")
    resumed = run_cli(tmp_path, "--conversations", "1", "--questions", "40", "--resume")
    assert resumed["retrievers"] == report["retrievers"]
    with pytest.raises(SystemExit, match="other settings"):
        run_cli(tmp_path, "--conversations", "1", "--questions", "5", "--resume")


def test_missing_data_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["--data", str(tmp_path / "nope.json"), "--output", str(tmp_path / "r.json")]) == 2
    assert "no LoCoMo file" in capsys.readouterr().err
    monkeypatch.setenv("REME_OFFLINE", "1")
    monkeypatch.setattr("benchmark.locomo.data.CACHE", tmp_path / "cache" / "locomo10.json")
    assert main(["--output", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err
    assert "offline" in err and str(tmp_path / "cache" / "locomo10.json") in err


def test_reme_bench_locomo_is_the_same_command(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = subprocess.run([str(Path(sys.executable).parent / "reme"), "bench", "locomo", "--data", str(DEV),
                           "--output", str(out), "--embedding", "hash", "--conversations", "1", "--questions", "3"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["mode"] == "retrieval"


def scripted(server: OpenAITestServer) -> None:
    def extract(body: dict[str, Any]) -> dict[str, Any]:
        prompt = prompt_of(body)
        user = re.search(r"long-term memory about (\w+)", prompt).group(1)  # type: ignore[union-attr]
        said = re.findall(rf"^\[(\d+)\] \[[^\]]+\] {user}: (.*)$", prompt, re.MULTILINE)
        return {"memories": [{"content": f"{user} said: {text}", "kind": "fact", "time": None, "sources": [int(i)],
                              "importance": 0.5} for i, text in said[:3]]}

    def reconcile(body: dict[str, Any]) -> dict[str, Any]:
        n = len(re.findall(r"^\d+\. \[", prompt_of(body).split("Candidates:")[1], re.MULTILINE))
        return {"decisions": [{"candidate": i, "action": "ADD"} for i in range(n)]}

    server.script("Read the conversation below", extract)
    server.script("long-term memory consistent", reconcile)
    server.script("You prepare a search", {"queries": [], "start": None, "end": None})
    server.script("You answer a question about a long conversation", "7 May 2023")
    server.script(["label an answer", "Gold answer: 7 May 2023"], {"reasoning": "same date", "label": "CORRECT"})
    server.script("label an answer", {"reasoning": "different", "label": "WRONG"})


def test_full_mode_runs_the_whole_path_against_a_scripted_llm(tmp_path: Path) -> None:
    with OpenAITestServer() as server:
        scripted(server)
        report = run_cli(tmp_path, "--mode", "full", "--conversations", "1", "--questions", "3",
                         "--batch-size", "10", "--model", "answerer", "--judge-model", "judge",
                         "--base-url", server.base_url, "--api-key", "k")
        models = {body["model"] for body in server.chat_requests}
    assert models == {"answerer", "judge"}
    overall = report["retrievers"]["default"]["overall"]
    assert overall["n"] == 3 and overall["judge"] == pytest.approx(100 / 3, abs=0.01)  # only q0's gold is "7 May 2023"
    assert 0 < overall["f1"] <= 100 / 3 + 1e-6 and "recall@10" in overall and "mrr" in overall
    assert report["tokens"]["ingest"]["calls"] >= 4  # 19 sessions in 2 batches, two speakers each
    assert report["tokens"]["answer"]["calls"] == 3 and report["tokens"]["judge"]["calls"] == 3
    assert report["tokens"]["retrieve"]["calls"] == 3  # one rewrite per question, for both speakers at once
    assert report["latency_ms"]["answer_p50"] is not None
    assert "| default | overall (1-4) | 3 |" in (tmp_path / "result.md").read_text()
