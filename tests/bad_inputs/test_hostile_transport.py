"""No project from the browser makes the server reach an address it names (issue 30, item 1).

A real TCP listener on 127.0.0.1 stands for an internal service, a metadata endpoint or an
attacker's host. Every project of the corpus points somewhere at it (base URLs and headers in
every spelling and nesting ADK, google-genai, LiteLLM and Potato accept, proxies, addresses in
model names, environment interpolation, files by URL) and goes through every way the studio
starts a browser project: Projects → Import (the upload), the YAML editor's save, a stored
project started from the Run page, *Try it*, and a stored run resumed, forked, aligned,
re-scored or scored on its test set from the studio. Each is refused naming its field, and the
listener never sees a connection. The server has keys in its environment, as a real one does,
so a request that left would carry one.

The projects the allow-list accepts that still hold the listener's address as data (an output
schema's ``$ref``, a URL in an instruction or a row) run to the end with the scripted model,
and the listener sees nothing from them either.
"""

from __future__ import annotations

import copy
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import yaml

from studio.engine.hosting.build import create_run
from studio.model.config import EvolutionConfig
from studio.model.errors import ConfigError
from studio.model.records import CriticSpec
from studio.projects.aligning import start_align, start_rescore
from studio.projects.files import parse_project
from studio.projects.forking import start_fork
from studio.projects.probe import probe_sync
from studio.projects.testsets import score_test_from_browser
from studio.projects.workspace import (
    import_yaml,
    resume_run,
    save_project,
    start_project_run,
    stored_project,
)
from tests.bad_inputs.conftest import project
from tests.helpers import demo_spec, trainset, wait_until

SERVER_KEYS = {"GOOGLE_API_KEY": "AIzaSyD-server-key-0123456789abcdefghijk",
               "OPENAI_API_KEY": "sk-server-key-0123456789abcdef",
               "ANTHROPIC_API_KEY": "sk-ant-server-key-0123456789"}
UNSET = ("OLLAMA_API_BASE", "HOSTED_VLLM_API_BASE", "LM_STUDIO_API_BASE", "LLAMAFILE_API_BASE",
         "XINFERENCE_API_BASE", "LITELLM_PROXY_API_BASE", "APIGEE_PROXY_URL",
         "OPENAI_API_BASE", "OPENAI_BASE_URL", "STUDIO_ALLOW_CODE_REFS")


class Listener:
    """A TCP listener that records every connection (any protocol: HTTP, TLS, a proxy's
    CONNECT), and answers HTTP 500."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.connections: list[bytes] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    self.connections.append(conn.recv(4096))
                    conn.sendall(b"HTTP/1.1 500 x\r\ncontent-length: 0\r\n\r\n")
                except OSError:
                    self.connections.append(b"")

    def close(self) -> None:
        self.sock.close()


@contextmanager
def listening() -> Iterator[Listener]:
    listener = Listener()
    try:
        yield listener
    finally:
        listener.close()


@pytest.fixture
def listener(monkeypatch):
    for name, value in SERVER_KEYS.items():
        monkeypatch.setenv(name, value)
    for name in UNSET:
        monkeypatch.delenv(name, raising=False)
    with listening() as found:
        yield found


def _judged(metric: str, options: dict[str, Any], **criterion: Any) -> dict[str, Any]:
    return {"type": "adk_metrics", "adk_metrics": {"criteria": {metric: {
        "threshold": 0.5, **criterion, "judge_model_options": {
            "judge_model": "gemini-2.5-flash", "num_samples": 1, **options}}}}}


def _config(config: dict[str, Any], metric: str = "final_response_match_v2") -> dict[str, Any]:
    return _judged(metric, {"judge_model_config": config})


def _judge_model(model: str) -> dict[str, Any]:
    return _judged("final_response_match_v2", {"judge_model": model})


def _evaluator(evaluator: dict[str, Any]) -> dict[str, Any]:
    return {"type": "evaluator", "evaluator": evaluator}


def hostile(url: str, port: int) -> list[tuple[str, dict[str, Any], str]]:
    """(name, project, a fragment of the refusal's field) for each hostile project."""
    host = f"127.0.0.1:{port}"
    rubric = [{"rubric_id": "r", "rubric_content": {"text_property": "good"}}]
    cases: list[tuple[str, dict[str, Any], str]] = [
        # ---- google-genai's http_options under ADK's judge, every spelling and nesting
        ("the reported case", {"critic": _config({"http_options": {"base_url": f"{url}/x/"}})},
         "judge_model_config.http_options"),
        ("camelCase", {"critic": {"type": "adk_metrics", "adk_metrics": {"criteria": {
            "final_response_match_v2": {"threshold": 0.5, "judgeModelOptions": {
                "judgeModel": "gemini-2.5-flash", "judgeModelConfig": {
                    "httpOptions": {"baseUrl": url}}}}}}}}, "httpOptions"),
        ("headers only", {"critic": _config({"http_options": {"headers": {"Host": host}}})},
         "http_options"),
        ("api version", {"critic": _config({"http_options": {"api_version": "../../x"}})},
         "http_options"),
        ("client proxy", {"critic": _config({"http_options": {"client_args": {"proxy": url}}})},
         "http_options"),
        ("async client proxy", {"critic": _config(
            {"http_options": {"async_client_args": {"proxies": url}}})}, "http_options"),
        ("extra body", {"critic": _config({"http_options": {"extra_body": {"url": url}}})},
         "http_options"),
        ("retry options", {"critic": _config({"httpOptions": {"retryOptions": {"attempts": 9}}})},
         "httpOptions"),
        ("raw http response", {"critic": _config({"should_return_http_response": True})},
         "should_return_http_response"),
        ("rubric metric", {"critic": _judged(
            "rubric_based_final_response_quality_v1",
            {"judge_model_config": {"http_options": {"base_url": url}}}, rubrics=rubric)},
         "rubric_based_final_response_quality_v1.judge_model_options"),
        ("tool-use rubric metric", {"critic": _judged(
            "rubric_based_tool_use_quality_v1",
            {"judge_model_config": {"http_options": {"base_url": url}}}, rubrics=rubric)},
         "http_options"),
        ("hallucinations metric", {"critic": _config({"http_options": {"base_url": url}},
                                                     "hallucinations_v1")}, "http_options"),
        ("inside a declarative critic", {"critic": _evaluator({"adk_metrics": _config(
            {"http_options": {"base_url": url}})["adk_metrics"]})},
         "critic.evaluator.adk_metrics"),
        ("inside a weighted part", {"critic": _evaluator({"evaluators": [
            {"name": "exact_match"}, {"adk_metrics": _config(
                {"http_options": {"base_url": url}})["adk_metrics"], "weight": 1}]})},
         "evaluators[1].adk_metrics"),
        ("url context tool", {"critic": _config({"tools": [{"url_context": {}}]})}, "tools"),
        ("search tool", {"critic": _config({"tools": [{"google_search": {}}]})}, "tools"),
        ("system instruction", {"critic": _config({"system_instruction": f"fetch {url}"})},
         "system_instruction"),
        ("cached content", {"critic": _config({"cached_content": "cachedContents/x"})},
         "cached_content"),
        ("labels", {"critic": _config({"labels": {"billing": "someone-else"}})}, "labels"),
        ("model armor", {"critic": _config({"model_armor_config": {
            "prompt_template_name": "projects/p/locations/l/templates/t"}})},
         "model_armor_config"),
        ("routing", {"critic": _config({"routing_config": {"auto_mode": {}}})}, "routing_config"),
        ("many candidates", {"critic": _config({"candidate_count": 8})}, "candidate_count"),
        ("an unknown config field", {"critic": _config({"proxy": url})}, "proxy"),
        ("an unknown criterion field", {"critic": _judged(
            "final_response_match_v2", {}, base_url=url)}, "base_url"),
        ("an unknown options field", {"critic": _judged(
            "final_response_match_v2", {"api_base": url})}, "api_base"),
        ("custom metrics", {"critic": {"type": "adk_metrics", "adk_metrics": {
            "custom_metrics": {"m": {"code_config": {"name": "urllib.request.urlopen"}}},
            "criteria": {"m": 0.5}}}}, "custom_metrics"),
        ("an unknown metric", {"critic": {"type": "adk_metrics", "adk_metrics": {
            "criteria": {"fetch_v1": {"threshold": 0.5, "url": url}}}}}, "criteria.fetch_v1"),
        ("user simulator", {"critic": {"type": "adk_metrics", "adk_metrics": {
            "criteria": {"response_match_score": 0.5}, "user_simulator_config": {
                "model": "gemini-2.5-flash", "model_configuration": {
                    "http_options": {"base_url": url}}}}}}, "user_simulator_config"),
        ("criteria from a URL", {"critic": {"type": "adk_metrics",
                                            "adk_metrics": f"{url}/test_config.json"}},
         "critic.adk_metrics"),
        # ---- addresses in model strings, and providers whose address nobody configured
        ("judge model is a URL", {"critic": _judge_model(f"{url}/v1")}, "judge_model"),
        ("judge model embeds a URL", {"critic": _judge_model(f"openai/{url}")}, "judge_model"),
        ("judge on ollama", {"critic": _judge_model("ollama_chat/llama3")}, "judge_model"),
        ("judge on gemma3 ollama", {"critic": _judge_model("ollama/gemma3:4b")}, "judge_model"),
        ("judge on hosted vllm", {"critic": _judge_model("hosted_vllm/x")}, "judge_model"),
        ("judge on llamafile", {"critic": _judge_model("llamafile/x")}, "judge_model"),
        ("judge on lm studio", {"critic": _judge_model("lm_studio/x")}, "judge_model"),
        ("judge on a proxy", {"critic": _judge_model("litellm_proxy/x")}, "judge_model"),
        ("judge on apigee", {"critic": _judge_model("apigee/gemini-2.5-flash")},
         "judge_model"),
        ("judge by ADK class", {"critic": _judge_model("LiteLlm:openai/gpt-4o")},
         "judge_model"),
        ("judge on a Vertex endpoint", {"critic": _judge_model(
            "projects/p/locations/us-central1/endpoints/123")}, "judge_model"),
        ("judge on custom openai", {"critic": _judge_model("custom_openai/x")}, "judge_model"),
        ("judge on openai-like", {"critic": _judge_model("openai_like/x")}, "judge_model"),
        ("agent on ollama", {"agent": {"model": "ollama_chat/llama3"}}, "agent.model"),
        ("agent on xinference", {"agent": {"model": "xinference/x"}}, "agent.model"),
        ("agent model is an env variable", {"agent": {"model": "${OPENAI_API_BASE}"}},
         "agent.model"),
        ("agent model is LiteLLM's secret syntax", {"agent": {
            "model": "os.environ/OPENAI_API_BASE"}}, "agent.model"),
        ("agent on huggingface by URL", {"agent": {"model": f"huggingface/{url}"}},
         "agent.model"),
        ("critic agent on vllm", {"critic": {"type": "agent", "model": "hosted_vllm/x"}},
         "critic.model"),
        ("reflection on ollama", {"reflection": {"model": "ollama/llama3"}},
         "reflection.model"),
        ("a workflow agent on docker", {"agent": None, "agents": [
            {"name": "a", "model": "docker_model_runner/x"},
            {"name": "b", "model": "scripted/demo"}]}, "agents[0].model"),
        # ---- judges of the studio's own evaluators
        ("rubric judge on ollama", {"critic": _evaluator({"evaluator": "rubric_dag", "params": {
            "preset": "answer_quality", "model": "ollama_chat/x"}})}, "params.model"),
        ("Potato base_url", {"critic": _evaluator({"evaluator": "rubric_dag", "params": {
            "preset": "answer_quality", "config": {"ai_support": {
                "endpoint_type": "openai", "ai_config": {"model": "gpt-4o",
                                                         "base_url": url}}}}})},
         "ai_config.base_url"),
        ("Potato vllm endpoint", {"critic": _evaluator({"evaluator": "groundedness", "params": {
            "config": {"judge_alignment": {"ai_support": {
                "endpoint_type": "vllm", "ai_config": {"model": "x"}}}}}})},
         "endpoint_type"),
        ("Potato api key", {"critic": _evaluator({"evaluator": "context_relevance", "params": {
            "config": {"ai_support": {"api_key": "sk-attacker", "base_url": url}}}})},
         "ai_support"),
        ("Potato on ollama", {"critic": _evaluator({"evaluator": "agent_as_judge", "params": {
            "config": {"ai_support": {"endpoint_type": "ollama", "model": "llama3"}}}})},
         "endpoint_type"),
        ("judge param api_base", {"critic": _evaluator({"evaluator": "llm_trajectory_judge",
                                                        "params": {"api_base": url}})},
         "params.api_base"),
        ("judge block on vllm", {"critic": _evaluator({"agent_as_judge": {
            "criteria": "good", "model": "hosted_vllm/x"}})}, "agent_as_judge.model"),
        ("weighted judge on ollama", {"critic": _evaluator({"evaluators": [{
            "agent_as_judge": {"criteria": "good", "model": "ollama_chat/x"}}]})},
         "agent_as_judge.model"),
        ("embedding model by URL", {"critic": _evaluator({"evaluator": "embedding_distance",
                                                          "params": {"model_name": url}})},
         "params.model_name"),
        ("embedding model by path", {"critic": _evaluator({"evaluator": "embedding_distance",
                                                           "params": {"model_name": "/etc"}})},
         "params.model_name"),
        # ---- code and files
        ("a function tool that fetches", {"agent": {"tools": ["urllib.request:urlopen"]}},
         "tools"),
        ("an agent reference", {"agent": {"ref": "urllib.request:urlopen"}}, "agent.ref"),
        ("a dataset by URL", {"dataset": {"train": {"path": f"{url}/rows.csv"}}},
         "dataset.train.path"),
        ("an image by URL", {"dataset": {"train": [{"topic": "a", "photo": f"{url}/x.png"}],
                                         "images": ["photo"]}}, "photo"),
    ]
    return cases


def _project(sections: dict[str, Any]) -> dict[str, Any]:
    data = project(**{k: v for k, v in sections.items() if v is not None and k != "critic"})
    if "critic" in sections:  # replaced whole, not merged into the base critic
        data["critic"] = sections["critic"]
    for key, value in sections.items():
        if value is None:
            data.pop(key, None)
    return data


def _refused(action, fragment: str) -> ConfigError:
    with pytest.raises(ConfigError) as refused:
        action()
    assert fragment in refused.value.where or fragment in str(refused.value), str(refused.value)
    return refused.value


def test_the_corpus_is_large_and_every_case_is_distinct(listener):
    cases = hostile(listener.url, listener.port)
    assert len(cases) >= 50
    assert len({name for name, _, _ in cases}) == len(cases)
    assert len({yaml.safe_dump(data) for _, data, _ in cases}) == len(cases)


@pytest.mark.slow  # the corpus through five entry points each, with ADK and LiteLLM loaded
def test_no_browser_project_reaches_the_listener_through_import_editor_start_or_try(
        store, saved, listener):
    for name, sections, fragment in hostile(listener.url, listener.port):
        data = _project(sections)
        text = yaml.safe_dump(data, sort_keys=False)
        error = _refused(lambda text=text: import_yaml(store, text, "evil.yaml"), fragment)
        assert error.where.startswith("evil.yaml"), (name, error.where)
        edited = parse_project(text, source="YAML editor")
        _refused(lambda edited=edited: save_project(store, edited, None), fragment)
        legacy = store.save_project(f"legacy {name}", text)  # stored by an older version
        _refused(lambda legacy=legacy: start_project_run(
            store, legacy.id, EvolutionConfig(max_iterations=1)), fragment)
        if "dataset" not in sections:  # Try it runs one row the page gives, not a file
            _refused(lambda edited=edited: probe_sync(edited, {"topic": "x"}), fragment)
        store.delete_project(legacy.id)
    assert store.list_runs() == [] and saved()
    assert listener.connections == []


STORED_CRITICS = {
    "http options": CriticSpec(type="evaluator", evaluator={"adk_metrics": {"criteria": {
        "final_response_match_v2": {"threshold": 0.5, "judge_model_options": {
            "judge_model": "gemini-2.5-flash", "num_samples": 1, "judge_model_config": {
                "http_options": {"base_url": "{url}"}}}}}}}),
    "judge on ollama": CriticSpec(type="evaluator", evaluator={
        "agent_as_judge": {"criteria": "good", "model": "ollama_chat/llama3"}}),
}


def _stored_critic(name: str, url: str) -> CriticSpec:
    spec = copy.deepcopy(STORED_CRITICS[name])
    return CriticSpec.model_validate_json(spec.model_dump_json().replace("{url}", url))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(STORED_CRITICS))
def test_a_stored_run_holding_an_address_is_refused_on_every_studio_path(store, listener,
                                                                        name):
    """A run stored before the allow-list (or by the CLI user) is not started from the studio."""
    critic = _stored_critic(name, listener.url)
    run = create_run(store, spec=demo_spec().model_copy(update={"critic": critic}),
                     trainset=trainset(2), testset=trainset(1),
                     config=EvolutionConfig(max_iterations=1))
    where = f"run {run.id}"
    for action in (lambda: resume_run(store, run.id),
                   lambda: start_fork(store, run.id, 0, settings={"max_iterations": 1}),
                   lambda: score_test_from_browser(store, run.id),
                   lambda: start_align(store, run.id),
                   lambda: start_rescore(store, run.id, run.id)):
        _refused(action, where)
    assert [r.id for r in store.list_runs()] == [run.id]
    assert store.get_run(run.id).status.value == "pending"
    assert listener.connections == []


def test_a_fork_from_the_studio_may_not_bring_its_own_transport(store, listener):
    run = create_run(store, spec=demo_spec(), trainset=trainset(2),
                     config=EvolutionConfig(max_iterations=1))
    critic = yaml.safe_dump(_config({"http_options": {"base_url": listener.url}}))
    _refused(lambda: start_fork(store, run.id, 0, critic_yaml=critic), "http_options")
    _refused(lambda: start_fork(store, run.id, 0, settings={
        "rate_limits": {"scripted/demo": 1}}), "settings.rate_limits")
    assert [r.id for r in store.list_runs()] == [run.id]


ACCEPTED = {
    "an output schema's $ref": {"agent": {"output_schema": {
        "type": "object", "properties": {"x": {"$ref": "{url}/schema.json"}}}}},
    "a schema match's $ref": {"critic": _evaluator({"evaluator": "json_schema_match", "params": {
        "schema": {"type": "object", "properties": {"x": {"$ref": "{url}/s.json"}}}}})},
    "a URL in the instruction and the rows": {
        "agent": {"instruction": "Fetch {url}/x and write a haiku about {topic}."},
        "dataset": {"train": [{"topic": "{url}/a"}, {"topic": "{url}/b"}]}},
    "a URL in a rubric": {"critic": _evaluator({"evaluator": "rubric_dag", "params": {
        "model": "scripted/demo", "dag": {"root": "q", "nodes": {"q": {
            "question": "Is {url} mentioned?", "choices": ["yes", "no"],
            "branches": {"yes": {"score": 1.0}, "no": {"score": 0.0}}}}}}})},
}


@pytest.mark.slow  # real runs
@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_an_address_held_as_data_is_never_fetched(store, listener, name):
    text = yaml.safe_dump(_project(ACCEPTED[name])).replace("{url}", listener.url)
    record = import_yaml(store, text, "data.yaml")
    assert stored_project(store, record.id).name == record.name
    run = start_project_run(store, record.id, EvolutionConfig(max_iterations=1,
                                                              minibatch_size=2))
    wait_until(lambda: store.get_run(run.id).status.value in ("completed", "failed"), 120,
               message="the run to end")
    assert store.count_trials(run.id) > 0
    assert listener.connections == []
