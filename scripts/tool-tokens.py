#!/usr/bin/env python3
"""Count the prompt tokens the tool definitions cost with Qwen3's chat template
and tokenizer (`make bench-tools`).

Input: the JSON that TestFirstRequestToolTokens writes with HESTIA_TOOLS_DUMP
({CASE: {"sent": [...], "available": [...]}}, tools in the OpenAI request
shape).
The prompt for a system message and "hi" is rendered by the real Qwen3 chat
template with and without the tools; the difference, tokenized by the
pure-Python Qwen BPE of ../shared/tools/probe-model (qwentok.py), is what the
tool list costs, the template's tool instructions included.

Usage: tool-tokens.py DUMP TOKENIZER_DIR PROBE_MODEL_DIR
"""
import json
import os
import sys

import jinja2


def render(template, tools):
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        # transformers' tojson: json.dumps with Python's default separators
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(msg):
        raise jinja2.TemplateError(msg)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    msgs = [{"role": "system", "content": "You are Hestia."}, {"role": "user", "content": "hi"}]
    return env.from_string(template).render(messages=msgs, tools=tools or None, add_generation_prompt=True)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    dump, tokdir, probedir = sys.argv[1:]
    sys.path.insert(0, probedir)
    import qwentok  # noqa: E402

    tok = qwentok.Tokenizer(tokdir)
    with open(os.path.join(tokdir, "tokenizer_config.json")) as f:
        template = json.load(f)["chat_template"]
    with open(dump) as f:
        d = json.load(f)
    base = len(tok.encode(render(template, [])))
    for case, lists in d.items():
        print(case + ":")
        for name in ("sent", "available"):
            tools = lists[name]
            n = len(tok.encode(render(template, tools))) - base
            chars = len(json.dumps(tools, separators=(",", ":"), ensure_ascii=False))
            print(f"  {name}: {len(tools)} tools, {chars} bytes, {n} Qwen3 tokens with the chat template")


if __name__ == "__main__":
    main()
