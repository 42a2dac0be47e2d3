"""Images (and videos) as agent inputs: checked and bounded in datasets, sent to the agent as ADK
inline-data parts, through LiteLLM to the scripted model, and through a whole evolve() run."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io

import pytest

from studio import EvolutionConfig, evolve, image_file
from studio.model import limits, records
from studio.model.errors import DatasetError
from studio.model.media import data_uri, example_media, sniff_type
from studio.model.records import (
    AgentSpec,
    example_input_text,
    example_state,
    validate_examples,
)
from studio.runtime.agents import build_agent
from studio.runtime.execution import AgentExecutor
from studio.runtime.providers._protocol import build_request

COLOURS = {"red": (220, 30, 30), "green": (30, 200, 60), "blue": (30, 60, 220)}


def picture(colour: str = "red", fmt: str = "PNG", size: tuple[int, int] = (24, 16)) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", size, COLOURS[colour]).save(out, format=fmt)
    return out.getvalue()


MP4 = b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2" + b"\x00\x00\x00\x08free" * 4
WEBM = b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\xf7\x81\x01\x42\x82\x84webm" + b"\x00" * 16


def uri(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- checking


@pytest.mark.parametrize("data, expected", [
    (picture(fmt="PNG"), "image/png"), (picture(fmt="JPEG"), "image/jpeg"),
    (picture(fmt="GIF"), "image/gif"), (picture(fmt="WEBP"), "image/webp"),
    (MP4, "video/mp4"), (WEBM, "video/webm"),
    (picture(fmt="BMP"), None), (b"<svg xmlns='http://www.w3.org/2000/svg'/>", None),
    (b"\x00\x00\x00\x14ftypqt  \x00\x00\x00\x00", None),  # QuickTime
    (b"\x00\x00\x00\x1cftypavif\x00\x00\x00\x00", None),  # AVIF
    (b"%PDF-1.7", None), (b"", None),
])
def test_the_type_is_read_from_the_bytes(data, expected):
    assert sniff_type(data) == expected


def test_a_data_uri_is_decoded_and_relabelled_with_the_type_its_bytes_have():
    jpeg = picture(fmt="JPEG")
    rows = validate_examples([{"photo": uri(jpeg, "image/png"), "q": "what?"}])
    assert rows[0]["photo"] == data_uri(jpeg, "image/jpeg")
    media = example_media(rows[0])
    assert [(m.field, m.mime_type, m.data) for m in media] == [("photo", "image/jpeg", jpeg)]


def oversize_png() -> str:
    return uri(picture() + b"\x00" * limits.MAX_IMAGE_BYTES)


@pytest.mark.parametrize("value, message", [
    ("data:image/png;base64,!!!not base64!!!", "base64 does not decode"),
    ("data:image/png,rawbytes", "must be base64"),
    ("data:image/png;base64", "needs a comma"),
    (uri(b"<svg onload='alert(1)'/>", "image/svg+xml"), "not a supported image or video"),
    (uri(picture(fmt="BMP"), "image/bmp"), "the bytes are not PNG, JPEG, GIF, WEBP, MP4 or WEBM"),
    (uri(MP4, "image/png"), "declared image/png but the bytes are video/mp4"),
    (oversize_png(), f"the limit is {limits.MAX_IMAGE_BYTES:,}"),
    ("data:video/mp4;base64," + "A" * (limits.MAX_VIDEO_BYTES * 4 // 3 + 8), "the limit is"),
])
def test_a_bad_image_is_refused_naming_the_row_and_the_column(value, message):
    rows = [{"photo": uri(picture()), "q": "a"}, {"photo": value, "q": "b"}]
    with pytest.raises(DatasetError) as caught:
        validate_examples(rows, name="trainset")
    assert caught.value.where == "trainset[1].photo"
    assert message in caught.value.message


@pytest.mark.parametrize("row, where, message", [
    ({"q": "a", "photos": [uri(picture())]}, "trainset[0].photos", "its own column"),
    ({"q": "a", "meta": {"x": uri(picture())}}, "trainset[0].meta", "its own column"),
    ({"q": "a", "expected": uri(picture())}, "trainset[0].expected", "the critic compares"),
    ({f"p{i}": uri(picture()) for i in range(limits.MAX_MEDIA_PER_EXAMPLE + 1)},
     "trainset[0]", f"the limit is {limits.MAX_MEDIA_PER_EXAMPLE}"),
])
def test_images_in_the_wrong_place_are_refused(row, where, message):
    with pytest.raises(DatasetError) as caught:
        validate_examples([row], name="trainset")
    assert caught.value.where == where and message in caught.value.message


def test_a_split_s_images_are_bounded_together(monkeypatch):
    image = picture()
    monkeypatch.setattr(records, "MAX_DATASET_MEDIA_BYTES", len(image) * 2)
    validate_examples([{"photo": uri(image)}] * 2)
    with pytest.raises(DatasetError) as caught:
        validate_examples([{"photo": uri(image)}] * 3, name="valset")
    assert caught.value.where == "valset[2]" and "add up to more than" in caught.value.message


def test_image_file_reads_a_file_as_a_data_uri(tmp_path):
    (tmp_path / "cat.gif").write_bytes(picture(fmt="GIF"))
    (tmp_path / "notes.txt").write_text("not an image")
    assert image_file(tmp_path / "cat.gif") == data_uri(picture(fmt="GIF"), "image/gif")
    with pytest.raises(DatasetError, match="not a supported image"):
        image_file(tmp_path / "notes.txt")
    with pytest.raises(DatasetError, match="image file not found"):
        image_file(tmp_path / "dog.png")
    with pytest.raises(DatasetError, match="not a regular file"):
        image_file(tmp_path)


# --------------------------------------------------------------------------- text and state


def test_input_text_and_state_hold_a_label_never_the_base64():
    example = {"photo": uri(picture()), "question": "What colour is it?", "expected": "red"}
    assert example_input_text(example) == "photo: [image: photo]\nquestion: What colour is it?"
    assert example_input_text(example, "question") == "What colour is it?"
    assert example_input_text(example, "photo") == "[image: photo]"
    assert example_state(example) == {"photo": "[image: photo]",
                                      "question": "What colour is it?"}
    assert example_state({"clip": uri(MP4, "video/mp4")}) == {"clip": "[video: clip]"}


# --------------------------------------------------------------------------- through ADK + LiteLLM


def run_agent(model: str, example: dict, instruction: str = "Look at {photo}."):
    agent = build_agent(AgentSpec(name="looker", model=model, instruction=instruction))
    executor = AgentExecutor(max_retries=0)
    return asyncio.run(executor.execute(agent, example_input_text(example),
                                        state=example_state(example),
                                        media=example_media(example)))


def test_the_image_reaches_the_scripted_model_as_an_image_part(script):
    png, gif = picture("green"), picture("blue", "GIF")
    model = script(lambda request: f"saw {len(request.media)}")
    example = {"photo": uri(png), "sketch": uri(gif, "image/gif"), "question": "Same colour?"}
    result = run_agent(model, example)
    assert result.ok and result.output == "saw 2"
    request = script.requests(model)[-1]
    assert [(m.kind, m.mime_type, m.size, m.sha256) for m in request.media] == [
        ("image", "image/png", len(png), sha(png)), ("image", "image/gif", len(gif), sha(gif))]
    assert "Look at [image: photo]." in request.system  # {photo} is filled with the label
    assert "photo: [image: photo]" in request.last_user
    assert "base64" not in request.prompt_text


def test_a_video_reaches_the_scripted_model_as_a_video_part(script):
    model = script(lambda request: ",".join(m.kind for m in request.media))
    result = run_agent(model, {"clip": uri(MP4, "video/mp4"), "task": "Describe it."},
                       instruction="Describe the clip.")
    assert result.ok and result.output == "video"
    seen = script.requests(model)[-1].media[0]
    assert (seen.mime_type, seen.size, seen.sha256) == ("video/mp4", len(MP4), sha(MP4))


def test_a_text_only_model_reads_a_marker_for_the_image():
    from studio.runtime.providers.local import LocalModelProvider

    messages = [{"role": "user", "content": [
        {"type": "text", "text": "photo: [image: photo]"},
        {"type": "image_url", "image_url": {"url": uri(picture())}}]}]
    request = LocalModelProvider()._request("local/smollm2", messages, {})
    assert request.messages == [{"role": "user",
                                 "content": "photo: [image: photo]\n[image: image/png]"}]
    assert build_request("scripted/x", messages, {}).media[0].mime_type == "image/png"


@pytest.mark.local_model
def test_the_embedded_model_answers_an_example_with_an_image():
    result = run_agent("local/smollm2", {"photo": uri(picture()), "question": "Colour?"},
                       instruction="Answer in one word.")
    assert result.ok, result.error
    assert result.output.strip()


# --------------------------------------------------------------------------- a whole run


def colour_world(script):
    """The agent names the image's colour only when told to; the critic looks at the same
    image and scores 1 when the answer names its colour; the reflection asks for the colour."""
    colour_of = {sha(picture(c)): c for c in COLOURS}

    def seen_colour(request) -> str:
        assert len(request.media) == 1, "every call carries exactly the example's image"
        return colour_of[request.media[0].sha256]

    def reply(request):
        if "## Component Text to Improve" in request.prompt_text:
            assert "base64" not in request.prompt_text
            return "Name the colour of the attached image in one word."
        if request.json_schema:
            right = seen_colour(request) in request.last_user.split("Output")[-1]
            return {"score": 1.0 if right else 0.0,
                    "feedback": "names the colour" if right else "does not name the colour"}
        return seen_colour(request) if "colour" in request.system else "a picture"

    return script("colours", reply)


def colour_agents(model: str, instruction: str = "Describe {photo}."):
    from studio.critics.agent import SimpleCriticOutput

    agent = build_agent(AgentSpec(name="looker", model=model, instruction=instruction))
    critic = build_agent(AgentSpec(name="critic", model=model, instruction="Judge it.",
                                   output_schema=SimpleCriticOutput.model_json_schema()))
    return agent, critic


def test_evolve_with_an_image_dataset_end_to_end(script, store, tmp_path):
    model = colour_world(script)
    for colour in COLOURS:
        (tmp_path / f"{colour}.png").write_bytes(picture(colour))
    trainset = [{"photo": image_file(tmp_path / f"{c}.png"), "question": "What is this?"}
                for c in COLOURS]
    agent, critic = colour_agents(model)
    result = asyncio.run(evolve(agent=agent, trainset=trainset, critic=critic, store=store,
                                config=EvolutionConfig(max_iterations=1, minibatch_size=3)))
    assert (result.original_score, result.final_score) == (0.0, 1.0)
    assert "colour" in result.evolved_components["instruction"]
    run_id = store.list_runs()[0].id
    stored = store.examples(run_id)
    assert [e.data["photo"] for e in stored] == [t["photo"] for t in trainset]
    trials = store.trials(run_id)
    assert trials and all(t.input_text == "photo: [image: photo]\nquestion: What is this?"
                          for t in trials)
    requests = script.requests(model)
    agent_calls = [r for r in requests if not r.json_schema and "## Component" not in r.system]
    assert len(agent_calls) == len(trials)
    assert all(r.media[0].sha256 in {sha(picture(c)) for c in COLOURS} for r in agent_calls)


def test_an_export_leaves_images_out_and_keeps_their_labels(script, store):
    from studio.projects.export import jsonl_lines

    model = colour_world(script)
    trainset = [{"photo": data_uri(picture(c), "image/png"), "question": "What is this?"}
                for c in COLOURS]
    agent, critic = colour_agents(model, "Describe it.")
    asyncio.run(evolve(agent=agent, trainset=trainset, critic=critic, store=store,
                       config=EvolutionConfig(max_iterations=1, minibatch_size=3)))
    exported = "".join(jsonl_lines(store, store.list_runs()[0].id))
    assert exported.count('"input": "photo: [image: photo]') == len(store.trials(
        store.list_runs()[0].id))
    assert "base64" not in exported and len(exported) < 20_000


@pytest.mark.slow
def test_images_cross_to_worker_processes(tmp_path, monkeypatch):
    """With ``processes=2`` the examples (data URIs) go to the worker processes, whose scripted
    echo model answers with the marker of the image it received."""
    from studio.engine import build_engine, create_run
    from studio.engine.scoring import processes
    from studio.model.records import CriticSpec, ReflectionSpec, RunSpec
    from studio.store import open_store

    monkeypatch.setattr(processes.ProcessFanOut, "ready",  # every batch in the processes
                        property(lambda self: all(f.result(60) for f in self._warming)))
    shipped = []
    real = processes.ProcessFanOut.run_shard

    async def recording(self, components, examples, input_key):
        shipped.extend(example["photo"] for example in examples)
        return await real(self, components, examples, input_key)

    monkeypatch.setattr(processes.ProcessFanOut, "run_shard", recording)
    spec = RunSpec(agent=AgentSpec(name="looker", model="scripted/echo", instruction="Look."),
                   critic=CriticSpec(type="evaluator", evaluator={"evaluator": "contains"}),
                   reflection=ReflectionSpec(model="scripted/demo"))
    rows = [{"photo": data_uri(picture(c), "image/png"), "expected": "[image: image/png]"}
            for c in COLOURS]
    store = open_store(f"sqlite:///{tmp_path}/p.db", cached=False)
    try:
        run_id = create_run(store, spec=spec, trainset=rows,
                            config=EvolutionConfig(max_iterations=1, processes=2)).id
        asyncio.run(build_engine(store, run_id).run())
        trials = store.trials(run_id)
        assert len(shipped) == len(trials) > 0 and set(shipped) == {r["photo"] for r in rows}
        assert all(t.score == 1.0 for t in trials), [t.output for t in trials]
    finally:
        store.close()
