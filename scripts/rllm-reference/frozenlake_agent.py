#!/usr/bin/env python3
"""Record rLLM's FrozenLakeAgent on fixed inputs for agents/lm/textagent's tests.

Needs rLLM's rllm/agents/frozenlake_agent.py at commit 7982c508 (the search
tool's fetch of rllm-org/rllm, then `git show 7982c508:rllm/agents/frozenlake_agent.py`).
The agent imports only rllm.types and two module names, which are stubbed
here, so no rLLM install is needed:

    python3 scripts/rllm-reference/frozenlake_agent.py AGENT.py \
        agents/lm/textagent/testdata/rllm_frozenlake_agent.json
"""
import json
import os
import shutil
import sys
import tempfile

agent_src, out_path = sys.argv[1], sys.argv[2]
root = tempfile.mkdtemp()
stubs = {
    "rllm/__init__.py": "",
    "rllm/types.py": '''
class Action:
    def __init__(self, action=None): self.action = action
class Step:
    def __init__(self, chat_completions=None, thought="", action=None, model_response="", observation=None, **kw):
        self.chat_completions = chat_completions or []; self.thought = thought; self.action = action
        self.model_response = model_response; self.observation = observation
        self.reward = 0.0; self.done = False; self.info = {}
class Trajectory:
    def __init__(self): self.steps = []
''',
    "rllm/agents/__init__.py": "",
    "rllm/agents/agent.py": "class BaseAgent: pass\n",
    "rllm/agents/system_prompts.py": "",
    "rllm/environments/__init__.py": "",
    "rllm/environments/frozenlake/__init__.py": "",
    "rllm/environments/frozenlake/frozenlake.py": "class FrozenLakeEnv:\n    INVALID_ACTION = 0\n",
}
for path, text in stubs.items():
    os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
    with open(os.path.join(root, path), "w") as f:
        f.write(text)
shutil.copy(agent_src, os.path.join(root, "rllm/agents/frozenlake_agent.py"))
sys.path.insert(0, root)
from rllm.agents.frozenlake_agent import FrozenLakeAgent  # noqa: E402

cases = ["```Up```", "I think ```left``` no wait ```Right```", "```  DOWN \n```", "```3```", "```5```", "```04```",
         "no block", "```Up", "``````", "``` up```x```left```", "think</think>```Left```", "```\u0661```", "```R\u0130GHT```",
         "```\x1cup\x1f```", "```ｕｐ```", "```Up``` ```down ```", "text\n```\nDown\n```\n", "```up```\n\n```", "```²```"]
out = []
a = FrozenLakeAgent()
for c in cases:
    try:
        out.append({"response": c, "thought_action": list(a._parse_model_response(c))})
    except Exception as e:
        out.append({"response": c, "error": type(e).__name__})
tr = []
for opts in [dict(), dict(max_steps=4, use_accumulate_thinking=False, use_accumulate_history=False)]:
    a = FrozenLakeAgent(**opts)
    obs = [" P \t _ \t\n _ \t G \t", " P \t _ \t\n _ \t G \t", " _ \t P \t\n _ \t G \t", " _ \t _ \t\n _ \t √ \t"]
    resps = ["<think>hmm</think>I go ```Up```", "```Right```", "then ```Down```"]
    a.update_from_env(obs[0], 0, False, {})
    actions = []
    for i, r in enumerate(resps):
        actions.append(a.update_from_model(r).action)
        a.update_from_env(obs[i + 1], 1.0 if i == 2 else 0.0, i == 2, {"k": i})
    tr.append({"opts": opts, "actions": actions, "messages": a.chat_completions,
               "steps": [{"thought": s.thought, "action": s.action, "reward": s.reward, "done": s.done,
                          "obs": s.observation, "n_chat": len(s.chat_completions)} for s in a.trajectory.steps]})
with open(out_path, "w") as f:
    json.dump({"parse": out, "transcripts": tr}, f, indent=1, ensure_ascii=False)
