"""The scripted endpoint streams a reply when asked (Strands' OpenAI model always streams): the
real ``openai`` client reassembles the same content and tool calls from its events."""

from __future__ import annotations

import json

import openai
from fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401


def test_a_streamed_reply_carries_the_content_the_tool_calls_and_the_usage(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script(
        Reply(tool_calls=(("search_notes", {"query": "bins"}),)), Reply(content="Thursday.")
    )
    client = openai.OpenAI(base_url=fake_openai.base_url, api_key="k", max_retries=0)
    replies = []
    for _ in range(2):
        stream = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "Which evening?"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        replies.append(list(stream))
    calls = [
        (call.function.name, json.loads(call.function.arguments or ""))
        for chunk in replies[0]
        for choice in chunk.choices
        for call in choice.delta.tool_calls or ()
        if call.function is not None
    ]
    assert calls == [("search_notes", {"query": "bins"})]
    finish = [c.finish_reason for chunk in replies[0] for c in chunk.choices if c.finish_reason]
    assert finish == ["tool_calls"]
    text = "".join(c.delta.content or "" for chunk in replies[1] for c in chunk.choices)
    usage = replies[1][-1].usage
    assert text == "Thursday." and usage is not None and usage.total_tokens == 18
