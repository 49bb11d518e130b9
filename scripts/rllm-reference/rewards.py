#!/usr/bin/env python3
"""Record rLLM's countdown and math rewards on fixed cases for envs/text's tests.

Needs, from rllm-org/rllm at commit 7982c508 (the search tool's fetch, then
`git show 7982c508:PATH`): rllm/rewards/countdown_reward.py,
rllm/rewards/math_utils/utils.py and rllm/rewards/math_reward.py, saved in
one directory DIR as countdown_reward.py, math_utils.py, math_reward.py.
Runs with Debian's python3-sympy and python3-pylatexenc; rLLM's own imports
are stubbed:

    /usr/bin/python3 scripts/rllm-reference/rewards.py DIR \
        envs/text/countdown/testdata/rllm_countdown.json \
        envs/text/qa/testdata/rllm_math.json
"""
import json
import os
import sys
import tempfile
import types

src, countdown_out, math_out = sys.argv[1], sys.argv[2], sys.argv[3]

# Stubs for the rllm modules the reward files import.
rllm = types.ModuleType("rllm")
class Action:
    def __init__(self, action=None):
        self.action = action
rllm.Action = Action
sys.modules["rllm"] = rllm
glob = types.ModuleType("rllm.globals")
glob.THOUGHT_DELIMITER_END = "</think>"
sys.modules["rllm.globals"] = glob
rt = types.ModuleType("rllm.rewards.reward_types")
class RewardOutput:
    def __init__(self, reward, metadata=None, is_correct=None):
        self.reward, self.metadata, self.is_correct = reward, metadata or {}, is_correct
class RewardConfig:
    apply_format_reward = False
    correct_reward = 1.0
    incorrect_reward = 0.0
    format_error_reward = 0.0
    unk_error_reward = 0.0
    toolcall_bonus = 0.5
class RewardType:
    MATH = "MATH"
rt.RewardOutput, rt.RewardConfig, rt.RewardType = RewardOutput, RewardConfig, RewardType
sys.modules["rllm.rewards"] = types.ModuleType("rllm.rewards")
sys.modules["rllm.rewards.reward_types"] = rt

def load(name, path):
    mod = types.ModuleType(name)
    mod.__file__ = path
    exec(compile(open(path).read(), path, "exec"), mod.__dict__)
    sys.modules[name] = mod
    return mod

cd = load("rllm.rewards.countdown_reward", os.path.join(src, "countdown_reward.py"))
mu = load("rllm.rewards.math_utils.utils", os.path.join(src, "math_utils.py"))
sys.modules["rllm.rewards.math_utils"] = types.ModuleType("rllm.rewards.math_utils")
mr = load("rllm.rewards.math_reward", os.path.join(src, "math_reward.py"))

countdown_cases = [
    ([1, 2, 3], 6, "<answer>1+2+3</answer>"),
    ([1, 2, 3], 6, "<answer> (1 + 2) * 3 </answer>"),
    ([1, 2, 3], 9, "<answer> (1 + 2) * 3 </answer>"),
    ([44, 19, 35], 98, "<answer>44 + 19 + 35</answer>"),
    ([44, 19, 35], 98, "Let me think.\n<answer>44 + 19 + 35</answer>"),
    ([44, 19, 35], 98, "<answer>44 + 19</answer>"),
    ([44, 19, 35], 98, "<answer>44 + 19 + 35 + 0</answer>"),
    ([44, 19, 35], 98, "44 + 19 + 35"),
    ([44, 19, 35], 98, "<answer>44 + 19 + 35"),
    ([4, 2, 8], 16, "<answer>8 / 2 * 4</answer>"),
    ([4, 2, 8], 1, "<answer>4 / 8 * 2</answer>"),
    ([3, 3, 5], 3, "<answer>3 / 3 * ... </answer>"),
    ([2, 3, 7], 1, "<answer>7 // 3 - 2 + 0</answer>"),
    ([2, 3, 7], 7, "<answer>7 // 3 ** 2</answer>"),
    ([2, 3, 7], 8, "<answer>(7 - 3) ** 2 / 2</answer>"),
    ([1, 5, 5], 0, "<answer>5 / (5 - 5) + 1</answer>"),
    ([1, 5, 5], 5, "<answer>5 + 5 - 5</answer>"),
    ([1, 2], 3, "<answer>x = 1 + 2</answer>"),
    ([1, 2], 3, "<answer>1 + 2 = 3</answer>"),
    ([1, 2], 3, "<answer>1+2</answer> and later <answer>2+1</answer>"),
    ([1, 2], 3, "<answer>2+1</answer> and later <answer>1*2</answer>"),
    ([1, 2], 3, "<answer>\n1+2\n</answer>"),
    ([1, 2], 3, "<answer></answer>"),
    ([1, 2], 3, "Assistant: <answer>1+2</answer>"),
    ([1, 2], 3, "<answer>1+2</answer> Assistant: nothing"),
    ([1, 2], 3, "<|im_start|>assistant\n<answer>1 + 2</answer>"),
    ([10, 2], 5, "<answer>10/2</answer>"),
    ([10, 3], 3.3333333, "<answer>10/3</answer>"),
    ([1, 2, 3], 7, "<answer>1 + 2 * 3</answer>"),
    ([1, 2, 3], 7, "<answer>1 + 2(3)</answer>"),
    ([1, 2, 3], 6, "<answer>01 + 2 + 3</answer>"),
    ([1, 2, 3], 6, "<answer>1. + 2 + 3</answer>"),
    ([1, 2, 3], 6, "<answer>1 + 2 + 3.</answer>"),
    ([1, 2, 3], 6, "<answer>-(-1) + 2 + 3</answer>"),
    ([1, 2, 3], 6, "<answer>+1 + +2 + 3</answer>"),
    ([1, 2, 3], 6, "<answer>((1 + 2) + 3</answer>"),
    ([1, 2, 3], 6, "<answer>\u0661 + 2 + 3</answer>"),
    ([1, 2, 3], 6, "<answer>1\u00a0+ 2 + 3</answer>"),
    ([1, 2, 3], 6, "<answer>1 +\t2 + 3</answer>"),
    ([1, 2, 3], 6, "<answer>()</answer>"),
    ([2, 3, 4], 0.125, "<answer>2 ** -3 * 4 / 4</answer>"),
    ([5, 100], 10, "<answer>100 ** 0.5 + 5 - 5</answer>"),
    ([25, 3, 2], 56, "<answer>(25 + 3) * 2</answer>"),
    ([], 5, "<answer>5</answer>"),
    ([7], None, "<answer>7</answer>"),
    ([1, 2, 3], 6, "<answer>1+2+3</answer><answer>"),
    ([1, 2, 3], 6, "<ANSWER>1+2+3</ANSWER>"),
    ([1, 1, 2], 4, "<answer>1 + 1 + 2</answer>"),
    ([1, 1, 2], 4, "<answer>2 + 2</answer>"),
    ([1, 2, 3], 6, "<answer>1e0 + 2 + 3</answer>"),
    ([6, 4], 1.5, "<answer>6 / 4</answer>"),
    ([9, 3], 2, "<answer>9 / 3 - 1</answer>"),
]
cout = []
for nums, target, sol in countdown_cases:
    score = cd.compute_score(sol, {"target": target, "numbers": nums}) if target is not None and nums else None
    out = cd.countdown_reward_fn({"target": target, "nums": nums}, sol)
    cout.append({"nums": nums, "target": target, "solution": sol, "compute_score": score,
                 "reward": out.reward, "is_correct": out.is_correct, "metadata": out.metadata,
                 "extracted": cd.extract_solution(sol)})
json.dump({"cases": cout}, open(countdown_out, "w"), indent=0, ensure_ascii=False)

math_cases = [
    ("\\boxed{42}", "42"), ("The answer is \\boxed{42}.", "42"), ("\\boxed{41}", "42"),
    ("no box here: 42", "42"), ("\\boxed{\\frac{1}{2}}", "\\frac12"), ("\\boxed{0.5}", "\\frac{1}{2}"),
    ("\\boxed{1/2}", "\\frac{1}{2}"), ("\\boxed{2/4}", "\\frac{1}{2}"), ("\\boxed{\\dfrac{3}{4}}", "0.75"),
    ("\\boxed{x = 5}", "5"), ("\\boxed{5 \\text{ cm}}", "5"), ("\\boxed{90^\\circ}", "90"), ("\\boxed{90^{\\circ}}", "90"),
    ("\\boxed{\\$5}", "5"), ("\\boxed{50\\%}", "50"), ("\\boxed{.5}", "0.5"), ("\\boxed{\\sqrt3}", "\\sqrt{3}"),
    ("\\boxed{\\left(1, 2\\right)}", "(1,2)"), ("\\boxed{(1,2)}", "(2,1)"), ("\\boxed{[1, 2)}", "[1,2)"),
    ("\\boxed{1,000}", "1000"), ("\\boxed{1{,}000}", "1000"), ("\\boxed{7 3/4}", "7\\frac{3}{4}"),
    ("\\boxed{3 million}", "3000000"), ("\\boxed{\\text{(A)}}", "A"), ("\\boxed{B}", "b"), ("\\boxed{10 meters}", "10"),
    ("\\boxed{{5}}", "5"), ("\\boxed{5.0}", "5"), ("\\boxed{-3}", "-3"), ("\\boxed{- 3}", "-3"),
    ("\\boxed{\\frac{\\sqrt{2}}{2}}", "\\frac{1}{\\sqrt{2}}"), ("\\boxed{\\sqrt{8}}", "2\\sqrt{2}"),
    ("\\boxed{x^2+2x+1}", "(x+1)^2"), ("\\boxed{(x+1)(x-1)}", "x^2-1"), ("\\boxed{2\\pi}", "2\\pi"),
    ("\\boxed{\\pi r^2}", "r^2\\pi"), ("\\boxed{3\\cdot 4}", "12"), ("\\boxed{3\\times 4}", "12"),
    ("\\boxed{\\infty}", "\\infty"), ("\\boxed{12}", "\\boxed{12}"), ("\\fbox{7}", "7"),
    ("first \\boxed{1} then \\boxed{2}", "2"), ("\\boxed{\\frac{a}{b}}", "a/b"), ("\\boxed{\\frac{1}{3}}", "0.333"),
    ("\\boxed{0.3333333333}", "\\frac13"), ("<|begin_of_box|>17<|end_of_box|>", "17"), ("<think>hmm \\boxed{3}</think> \\boxed{4}", "4"),
    ("<think>hmm \\boxed{3}</think> \\boxed{4}", "3"), ("\\boxed{}", "0"), ("\\boxed{5", "5"), ("\\boxed{x \\in [2, 5]}", "[2,5]"),
    ("\\boxed{\\{1, 2\\}}", "\\{1,2\\}"), ("\\boxed{2^{10}}", "1024"), ("\\boxed{2^10}", "1024"), ("\\boxed{1e3}", "1000"),
    ("\\boxed{\\tfrac{1}{2}}", "\\frac{1}{2}"), ("\\boxed{k = \\frac{1}{2}}", "\\frac{1}{2}"), ("\\boxed{\\text{Monday}}", "monday"),
    ("\\boxed{6}", ["5", "6"]), ("\\boxed{6}", 6), ("\\boxed{6.0}", 6.0), ("\\boxed{\\sqrt{2}}", "1.414"),
    ("\\boxed{3\\sqrt{2}}", "\\sqrt{18}"), ("\\boxed{\\frac{2}{4}}", "\\frac{1}{2}"), ("\\boxed{\\frac{1}{2}}", "1/2"),
    ("\\boxed{x+y}", "y+x"), ("\\boxed{xyz}", "zyx"), ("\\boxed{5!}", "120"), ("\\boxed{12 hours}", "12"),
    ("\\boxed{\\$1,234.50}", "1234.5"), ("\\boxed{10\\%}", "0.1"), ("\\boxed{-\\frac{1}{2}}", "-0.5"),
]
mout = []
for given, truth in math_cases:
    ans = mu.extract_answer(given)
    t = truth if isinstance(truth, (list, int, float)) else truth
    r = mr.RewardMathFn(RewardConfig())({"ground_truth": t}, given)
    rec = {"response": given, "ground_truth": truth, "extracted": ans, "reward": r.reward, "is_correct": r.is_correct}
    if isinstance(truth, str):
        gt = mu.extract_answer(truth) if "\\boxed" in truth else truth
        if ans is not None and gt is not None:
            rec["mathd"] = [mu.mathd_normalize_answer(ans), mu.mathd_normalize_answer(gt)]
            rec["normalize"] = [mu._normalize(ans), mu._normalize(gt)]
            rec["grade_mathd"] = mu.grade_answer_mathd(ans, gt)
            rec["grade_sympy"] = mu.grade_answer_sympy(ans, gt)
    mout.append(rec)
json.dump({"cases": mout}, open(math_out, "w"), indent=0, ensure_ascii=False)
