#!/usr/bin/env python3
"""Renders chat templates with Python's jinja2 as Hugging Face's transformers
does (apply_chat_template: ImmutableSandboxedEnvironment, trim_blocks and
lstrip_blocks, loopcontrols, tojson with ensure_ascii=False, raise_exception,
strftime_now) over generated conversations, and writes the golden file that
agents/lm/chat's TestJinja2Golden replays.

Usage: python3 scripts/chat-reference/render.py   (needs python3-jinja2)
"""
import datetime
import gzip
import json
import os
import random

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
CHAT = os.path.join(HERE, "..", "..", "agents", "lm", "chat", "testdata")
NOW = datetime.datetime(2024, 7, 26, 12, 0, 0)


def environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return NOW.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


CONTENTS = [
    "Hello!", "What is 2+2?", "", "  padded  ", "line one\nline two\n", "日本語で答えてください。", "مرحبا",
    "Emoji 👨‍👩‍👧 and 🇺🇸", "<|im_start|> inside text", "Tabs\tand\r\nCRLF", "{\"json\": true}", "a" * 300,
    "Quote ' and \" and \\ backslash", "x < y && y > z", "नमस्ते दुनिया", "\n\nleading newlines",
]
ASSISTANT = [
    "Sure.", "4", "", "<think>\nLet me think.\n</think>\n\nThe answer is 4.", "<think>\n\n</think>\n\nDirect answer.",
    "Before</think>after", "Multi\nline\nanswer\n", "  spaced  ", "<think>only thinking, cut off",
    "Answer with unicode: café ☕",
]
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city (°C)",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                     "required": ["city"]}}},
    {"type": "function", "function": {"name": "add", "description": "Add <a> & <b>",
                                      "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "number"}}}}},
]


def conversation(r):
    msgs = []
    if r.random() < 0.5:
        msgs.append({"role": "system", "content": r.choice(["You are a helpful assistant.", "", "Réponds en français.", "Be brief.\n"])})
    for _ in range(r.randint(1, 4)):
        msgs.append({"role": "user", "content": r.choice(CONTENTS)})
        if r.random() < 0.2:
            call = {"name": "get_weather", "arguments": r.choice([{"city": "Zürich"}, '{"city": "Paris"}', {"a": 1, "b": 2.5}])}
            if r.random() < 0.5:
                call = {"type": "function", "function": call}
            msgs.append({"role": "assistant", "content": r.choice(["", "Let me check."]), "tool_calls": [call]})
            for _ in range(r.randint(1, 2)):
                msgs.append({"role": "tool", "content": r.choice(["18°C, sunny", "{\"temp\": 18}", ""])})
        m = {"role": "assistant", "content": r.choice(ASSISTANT)}
        if r.random() < 0.1:
            m["reasoning_content"] = "Reasoning kept apart."
        msgs.append(m)
    if r.random() < 0.6:
        msgs.append({"role": "user", "content": r.choice(CONTENTS)})
    return msgs


def main():
    env = environment()
    names = ["qwen3", "qwen2.5", "llama3", "smollm2"]
    templates = {}
    for n in names:
        with open(os.path.join(CHAT, "templates", n + ".jinja"), encoding="utf-8") as f:
            templates[n] = env.from_string(f.read())
    r = random.Random(26)
    convs = [conversation(r) for _ in range(120)]
    # Edge cases: one message of each role, a conversation that ends with a
    # tool result, an empty list for templates that allow it.
    convs += [[{"role": "user", "content": "hi"}], [{"role": "system", "content": "s"}],
              [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": [{"name": "add", "arguments": {"a": 1}}]},
               {"role": "tool", "content": "3"}]]
    cases = []
    for i, msgs in enumerate(convs):
        for name in names:
            variants = [{}]
            if name == "qwen3":
                variants = [{}, {"enable_thinking": False}, {"enable_thinking": True}]
            for gen in (False, True):
                for extra in variants:
                    for tools in ([None, TOOLS] if name.startswith("qwen") and i % 4 == 0 else [None]):
                        kwargs = dict(messages=msgs, add_generation_prompt=gen, tools=tools,
                                      bos_token="<|begin_of_text|>" if name == "llama3" else "",
                                      eos_token="<|eot_id|>" if name == "llama3" else "<|im_end|>", **extra)
                        case = {"conversation": i, "template": name, "add_generation_prompt": gen, "vars": extra,
                                "tools": tools is not None}
                        try:
                            case["output"] = templates[name].render(**kwargs)
                        except jinja2.exceptions.TemplateError as e:
                            case["error"] = str(e)
                        cases.append(case)
    out = {"reference": "jinja2 " + jinja2.__version__ + " with transformers' settings", "tools": TOOLS,
           "conversations": convs, "cases": cases}
    path = os.path.join(CHAT, "jinja2_golden.json.gz")
    data = json.dumps(out, ensure_ascii=False).encode("utf-8")
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:  # mtime 0: reproducible bytes
        f.write(data)
    print(f"{len(convs)} conversations, {len(cases)} renderings ({sum('error' in c for c in cases)} refused) -> {path}")


if __name__ == "__main__":
    main()
