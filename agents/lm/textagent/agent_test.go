package textagent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
)

// rllmRecord is testdata/rllm_frozenlake_agent.json, recorded from rLLM's
// FrozenLakeAgent by scripts/rllm-reference/frozenlake_agent.py.
type rllmRecord struct {
	Parse []struct {
		Response      string   `json:"response"`
		ThoughtAction []string `json:"thought_action"`
		Error         string   `json:"error"`
	} `json:"parse"`
	Transcripts []struct {
		Opts     map[string]any `json:"opts"`
		Actions  []string       `json:"actions"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Steps []struct {
			Thought, Action, Obs string
			Reward               float64
			Done                 bool
			NChat                int `json:"n_chat"`
		} `json:"steps"`
	} `json:"transcripts"`
}

func loadRecord(t *testing.T) rllmRecord {
	b, err := os.ReadFile("testdata/rllm_frozenlake_agent.json")
	if err != nil {
		t.Fatal(err)
	}
	var r rllmRecord
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Parse) == 0 || len(r.Transcripts) == 0 {
		t.Fatal("empty record")
	}
	return r
}

func TestFrozenLakePromptsAreRLLMs(t *testing.T) {
	for _, tt := range []struct{ name, prompt, sha string }{
		{"SYSTEM_PROMPT", FrozenLakeSystemPrompt, "acd5bd2f25a5dc2c9e6939d990e080dc039253027ddde3c2131fd38f87278a7c"},
		{"MULTI_SHOT_SYSTEM_PROMPT", FrozenLakeMultiShotSystemPrompt, "eb7e17af7e91e50911a686f665603ad79bf22388c5f6962d4b04b2f6a9cfece5"},
	} {
		sum := sha256.Sum256([]byte(tt.prompt))
		if got := hex.EncodeToString(sum[:]); got != tt.sha {
			t.Errorf("%s: SHA-256 %s, rLLM's is %s", tt.name, got, tt.sha)
		}
	}
}

func TestParseFrozenLakeResponseAsRLLM(t *testing.T) {
	for _, c := range loadRecord(t).Parse {
		thought, action := ParseFrozenLakeResponse(c.Response)
		if c.Error != "" {
			// rLLM's int() raised; here the answer is the invalid action.
			if action != "0" {
				t.Errorf("%q: action %q; rLLM raised %s, which we read as invalid", c.Response, action, c.Error)
			}
			continue
		}
		if thought != c.ThoughtAction[0] || action != c.ThoughtAction[1] {
			t.Errorf("%q: thought %q action %q, rLLM's %q %q", c.Response, thought, action, c.ThoughtAction[0], c.ThoughtAction[1])
		}
	}
}

// The agent's chat and steps over a short game equal rLLM's, with the
// defaults and with max_steps, accumulate_thinking=false and
// accumulate_history=false.
func TestFrozenLakeAgentTranscriptAsRLLM(t *testing.T) {
	obs := []string{" P \t _ \t\n _ \t G \t", " P \t _ \t\n _ \t G \t", " _ \t P \t\n _ \t G \t", " _ \t _ \t\n _ \t √ \t"}
	resps := []string{"<think>hmm</think>I go ```Up```", "```Right```", "then ```Down```"}
	for _, tr := range loadRecord(t).Transcripts {
		args := envs.Params{}
		for k, v := range tr.Opts {
			switch k {
			case "max_steps":
				args["max_steps"] = v
			case "use_accumulate_thinking":
				args["accumulate_thinking"] = v
			case "use_accumulate_history":
				args["accumulate_history"] = v
			}
		}
		a, err := New("frozenlake", args)
		if err != nil {
			t.Fatal(err)
		}
		a.UpdateFromEnv(obs[0], 0, false, nil)
		var actions []string
		for i, r := range resps {
			actions = append(actions, a.UpdateFromModel(r))
			rew := 0.0
			if i == 2 {
				rew = 1
			}
			a.UpdateFromEnv(obs[i+1], rew, i == 2, map[string]any{"k": i})
		}
		if strings.Join(actions, ",") != strings.Join(tr.Actions, ",") {
			t.Errorf("%v: actions %v, rLLM's %v", tr.Opts, actions, tr.Actions)
		}
		msgs := a.Messages()
		if len(msgs) != len(tr.Messages) {
			t.Fatalf("%v: %d messages, rLLM has %d", tr.Opts, len(msgs), len(tr.Messages))
		}
		for i, m := range msgs {
			if m.Role != tr.Messages[i].Role || m.Content != tr.Messages[i].Content {
				t.Errorf("%v: message %d\n%s: %q\nrLLM's\n%s: %q", tr.Opts, i, m.Role, m.Content, tr.Messages[i].Role, tr.Messages[i].Content)
			}
		}
		steps := a.Trajectory().Steps
		if len(steps) != len(tr.Steps) {
			t.Fatalf("%d steps, rLLM has %d", len(steps), len(tr.Steps))
		}
		for i, s := range steps {
			w := tr.Steps[i]
			if s.Thought != w.Thought || s.Action != w.Action || s.Observation != w.Obs || s.Reward != w.Reward || s.Done != w.Done || len(s.ChatCompletions) != w.NChat {
				t.Errorf("%v: step %d = {%q %q %q %v %v %d}, rLLM's %+v", tr.Opts, i, s.Thought, s.Action, s.Observation, s.Reward, s.Done, len(s.ChatCompletions), w)
			}
		}
	}
}

func TestDigitsOfAnyScript(t *testing.T) {
	if n, ok := pyDigits("\u0663\u0660"); !ok || n != 30 {
		t.Errorf("int('٣٠') = %d, %v; Python reads 30", n, ok)
	}
}

func TestSingleTurnAgent(t *testing.T) {
	for _, tt := range []struct {
		name, response, action, thought string
	}{
		{"plain", "  42 \n", "42", ""},
		{"one think", "<think>add</think> \\boxed{42}", "\\boxed{42}", "<think>add</think>"},
		{"two thinks are kept whole", "a</think>b</think>c", "a</think>b</think>c", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New("single_turn", envs.Params{"system_prompt": "Be brief."})
			if err != nil {
				t.Fatal(err)
			}
			a.UpdateFromEnv("What is 6×7?", 0, false, nil)
			if got := a.UpdateFromModel(tt.response); got != tt.action {
				t.Fatalf("action %q, want %q", got, tt.action)
			}
			a.UpdateFromEnv("", 1, true, map[string]any{"correct": true})
			s := a.Trajectory().Last()
			if s.Thought != tt.thought || s.Reward != 1 || !s.Done || len(s.ChatCompletions) != 3 || len(a.Trajectory().Steps) != 1 {
				t.Fatalf("step %+v", s)
			}
		})
	}
	a := NewSingleTurn(SingleTurnOptions{AccumulateThinking: false})
	a.UpdateFromEnv("q1", 0, false, nil)
	a.UpdateFromModel("<think>x</think>A1")
	a.UpdateFromEnv("q2", 0, false, nil)
	a.UpdateFromModel("<think>y</think>A2")
	m := a.Messages()
	if m[1].Content != "A1" || m[3].Content != "<think>y</think>A2" {
		t.Fatalf("without accumulate_thinking: %q, %q", m[1].Content, m[3].Content)
	}
}

func TestNewRefusesBadArgs(t *testing.T) {
	for _, tt := range []struct {
		name string
		args envs.Params
		want string
	}{
		{"frozenlake", envs.Params{"max_step": 3}, `unknown argument "max_step"`},
		{"frozenlake", envs.Params{"max_steps": -2}, "max_steps must be a positive integer"},
		{"frozenlake", envs.Params{"accumulate_history": "yes"}, "accumulate_history must be true or false"},
		{"chess", nil, `unknown text agent "chess"`},
	} {
		if _, err := New(tt.name, tt.args); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %v: error %v, want %q", tt.name, tt.args, err, tt.want)
		}
	}
}

// A multi-turn environment that answers with text and a reward (a final
// "Correct!") keeps the reward on the answer it scores; an observation
// after the reset scores nothing.
func TestMultiTurnKeepsRewardsWithObservations(t *testing.T) {
	a, err := New("multi_turn", nil)
	if err != nil {
		t.Fatal(err)
	}
	a.UpdateFromEnv("What is 2+2?", 0, false, nil)
	a.UpdateFromModel("5")
	a.UpdateFromEnv("Wrong, try again.", -0.5, false, nil)
	a.UpdateFromModel("4")
	a.UpdateFromEnv("Correct!", 1, true, map[string]any{"solved": true})
	steps := a.Trajectory().Steps
	if len(steps) != 3 || steps[0].Reward != -0.5 || steps[1].Reward != 1 || !steps[1].Done || steps[1].Info["solved"] != true {
		t.Fatalf("steps %d: rewards %v %v, done %v", len(steps), steps[0].Reward, steps[1].Reward, steps[1].Done)
	}
	if steps[2].Observation != "Correct!" || steps[2].ChatCompletions != nil || steps[0].Reward+steps[1].Reward != 0.5 {
		t.Errorf("the final observation's step: %+v", steps[2])
	}
}

// system_prompt replaces rLLM's prompt, "" drops it, and without history
// the chat is the system prompt (if any) and the latest observation.
func TestFrozenLakeSystemPromptOption(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    envs.Params
		want    []string // roles of Messages() after two observations
		content string   // the first message's content
	}{
		{"rLLM's", envs.Params{}, []string{"system", "user", "assistant", "user"}, FrozenLakeSystemPrompt},
		{"replaced", envs.Params{"system_prompt": "Reach G."}, []string{"system", "user", "assistant", "user"}, "Reach G."},
		{"none", envs.Params{"system_prompt": ""}, []string{"user", "assistant", "user"}, "Current Observation (0): \nobs0\n" + flNotYet},
		{"none, no history", envs.Params{"system_prompt": "", "accumulate_history": false}, []string{"user"}, "Current Observation (1): \nobs1\n" + flNotYet},
		{"replaced, no history", envs.Params{"system_prompt": "Reach G.", "accumulate_history": false}, []string{"system", "user"}, "Reach G."},
		{"observation only", envs.Params{"system_prompt": "", "observation_only": true}, []string{"user", "assistant", "user"}, "obs0"},
		{"observation only, no history", envs.Params{"system_prompt": "", "accumulate_history": false, "observation_only": true}, []string{"user"}, "obs1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New("frozenlake", tt.args)
			if err != nil {
				t.Fatal(err)
			}
			a.UpdateFromEnv("obs0", 0, false, nil)
			a.UpdateFromModel("```Up```")
			a.UpdateFromEnv("obs1", 0, false, nil)
			m := a.Messages()
			var roles []string
			for _, x := range m {
				roles = append(roles, x.Role)
			}
			if strings.Join(roles, ",") != strings.Join(tt.want, ",") || m[0].Content != tt.content {
				t.Fatalf("roles %v (want %v), first %q (want %q)", roles, tt.want, m[0].Content, tt.content)
			}
		})
	}
	if _, err := New("frozenlake", envs.Params{"system_prompt": 3}); err == nil {
		t.Fatal("a numeric system_prompt was accepted")
	}
	if _, err := New("frozenlake", envs.Params{"observation_only": "yes"}); err == nil {
		t.Fatal("observation_only = \"yes\" was accepted")
	}
	// Observation only still notes an answer that changed nothing.
	a, err := New("frozenlake", envs.Params{"observation_only": true, "max_steps": 5})
	if err != nil {
		t.Fatal(err)
	}
	a.UpdateFromEnv("obs0", 0, false, nil)
	a.UpdateFromModel("```Up```")
	a.UpdateFromEnv("obs0", 0, false, nil)
	m := a.Messages()
	if want := "obs0" + flInvalid + fmt.Sprintf(flRemaining, 4); m[len(m)-1].Content != want {
		t.Fatalf("the user turn after an invalid move is %q, want %q", m[len(m)-1].Content, want)
	}
}
