package hostile

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agenttrainer/agenttrainer/agents/lm/chat"
	"github.com/agenttrainer/agenttrainer/agents/lm/tokenizer"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/remote"
	"github.com/agenttrainer/agenttrainer/trainer/textrl"
)

// The remote text environment cases (issue 27): Python text servers that
// send huge observations, text that is not UTF-8, info that is not a JSON
// object, that die or hang in mid-episode or at start, played through the
// workflow engine (trainer/textrl) the way a training plays them. Each case
// runs the text driver — this test binary with HOSTILE_TEXT_DRIVER set, which
// plays the tasks with a scripted model and prints every episode's outcome
// as a JSON line — in a subprocess bounded in time and peak RSS. A bad
// episode must end with the error termination (masked) and a message that
// says what the server did, the episodes after it must be played, and
// nothing may panic or hang.

const textDriverEnv = "HOSTILE_TEXT_DRIVER"

// textDriverSpec is what a case asks the driver to play.
type textDriverSpec struct {
	Args        envs.Params   `json:"args"`  // remote-text's env.args
	Tasks       []envs.Params `json:"tasks"` // a misbehaving server's task says what to answer: {"say": [...]}
	Concurrency int           `json:"concurrency"`
	MaxPrompt   int           `json:"max_prompt"`
	TimeoutS    float64       `json:"timeout_s"` // per episode (0: none)
}

// textOutcome is one episode as the driver reports it.
type textOutcome struct {
	Task        int     `json:"task"`
	Termination string  `json:"termination"`
	Error       string  `json:"error"`
	Detail      string  `json:"detail"` // of the termination
	Reward      float64 `json:"reward"`
	Turns       int     `json:"turns"`
	Masked      bool    `json:"masked"`
	Correct     bool    `json:"correct"`
	LastObs     string  `json:"last_obs"`
}

// textDriverEnd is the driver's last line.
type textDriverEnd struct {
	Done      bool  `json:"done"`
	VmHWMKiB  int64 `json:"vmhwm_kib"`
	Episodes  int   `json:"episodes"`
	ElapsedMS int64 `json:"elapsed_ms"`
}

func init() {
	if spec := os.Getenv(textDriverEnv); spec != "" {
		os.Exit(textDriver(spec))
	}
}

// textDriver plays a spec's tasks through MultiTurn workflows of
// remote-text and the single-turn agent, with a scripted model.
func textDriver(specJSON string) int {
	var spec textDriverSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "text driver: bad spec:", err)
		return 2
	}
	t0 := time.Now()
	tok, err := tokenizer.NewChar("", nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	eos, _ := tok.TokenID("<|im_end|>")
	maxPrompt := spec.MaxPrompt
	if maxPrompt == 0 {
		maxPrompt = 16384
	}
	e, err := textrl.NewEngine(textrl.Options{Tokenizer: tok, Renderer: chat.NewChatML(chat.ChatMLOptions{}),
		Generator: &scriptedModel{tok: tok, eos: eos}, MaxPromptLength: maxPrompt, MaxResponseLength: 64,
		MaxConcurrent: max(spec.Concurrency, 1), Timeout: time.Duration(spec.TimeoutS * float64(time.Second))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	wf, err := textrl.MultiTurn(textrl.MultiTurnOptions{Env: remote.TextID, EnvArgs: spec.Args, Agent: "single_turn", MaxTurns: 20})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	groups, _, err := e.Run(context.Background(), spec.Tasks, 1, wf)
	if err != nil {
		fmt.Fprintln(os.Stderr, "text driver:", err)
		return 1
	}
	out := json.NewEncoder(os.Stdout)
	for i, g := range groups {
		ep := g[0]
		o := textOutcome{Task: i, Termination: string(ep.Termination), Reward: ep.Reward(), Masked: ep.Masked, Correct: ep.Correct}
		o.Error, _ = ep.Info["error"].(string)
		o.Detail, _ = ep.Info["termination_detail"].(string)
		if len(ep.Trajectories) > 0 && ep.Trajectories[0] != nil {
			tr := ep.Trajectories[0]
			o.Turns = len(tr.Steps)
			if last := tr.Last(); last != nil {
				o.LastObs = last.Observation
				if len(o.LastObs) > 200 {
					o.LastObs = o.LastObs[:200]
				}
			}
		}
		out.Encode(o)
	}
	end := textDriverEnd{Done: true, VmHWMKiB: vmHWM(), Episodes: len(groups), ElapsedMS: time.Since(t0).Milliseconds()}
	remote.CloseTextPools()
	out.Encode(end)
	return 0
}

// vmHWM is this process's peak resident set (its own, unlike ru_maxrss,
// which counts the memory of the process that started it).
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return -1
}

// scriptedModel answers from the chat so far: a misbehaving server's task
// ("ready: {...}") says what to answer turn by turn (then "stop"); the
// guessing game is played by binary search.
type scriptedModel struct {
	tok *tokenizer.Tokenizer
	eos int
}

var guessRange = regexp.MustCompile(`from (-?\d+) to (-?\d+)`)

func (s *scriptedModel) Generate(_ context.Context, reqs []textrl.Request) ([]textrl.Generation, error) {
	out := make([]textrl.Generation, len(reqs))
	for i, r := range reqs {
		ids := append(s.tok.Encode(answer(s.tok.Decode(r.PromptIDs)), false), s.eos)
		finish := textrl.FinishStop
		if len(ids) > r.Params.MaxTokens {
			ids, finish = ids[:r.Params.MaxTokens], textrl.FinishLength
		}
		lp := make([]float32, len(ids))
		for k := range lp {
			lp[k] = -0.1
		}
		out[i] = textrl.Generation{IDs: ids, LogProbs: lp, Finish: finish}
	}
	return out, nil
}

// answer is the scripted model's next answer to a ChatML prompt.
func answer(prompt string) string {
	var users, said []string
	for _, seg := range strings.Split(prompt, "<|im_start|>")[1:] {
		role, body, _ := strings.Cut(seg, "\n")
		body = strings.TrimSuffix(strings.TrimSuffix(body, "\n"), "<|im_end|>")
		switch role {
		case "user":
			users = append(users, body)
		case "assistant":
			if body != "" {
				said = append(said, body)
			}
		}
	}
	if len(users) == 0 {
		return "?"
	}
	if task, ok := strings.CutPrefix(users[0], "ready: "); ok {
		var t struct {
			Say []string `json:"say"`
		}
		json.Unmarshal([]byte(task), &t)
		if len(said) < len(t.Say) {
			return t.Say[len(said)]
		}
		return "stop"
	}
	m := guessRange.FindStringSubmatch(users[0])
	if m == nil {
		return "?"
	}
	lo, _ := strconv.Atoi(m[1])
	hi, _ := strconv.Atoi(m[2])
	for k, a := range said {
		g, _ := strconv.Atoi(a)
		if k+1 < len(users) {
			switch users[k+1] {
			case "Higher.":
				lo = g + 1
			case "Lower.":
				hi = g - 1
			}
		}
	}
	return strconv.Itoa((lo + hi) / 2)
}

// textDrive runs the driver for spec and returns the episodes and the end
// line (nil when it did not finish).
func textDrive(c *cx, spec textDriverSpec) ([]textOutcome, *textDriverEnd, res) {
	self, err := os.Executable()
	if err != nil {
		c.fail("the test binary: %v", err)
		return nil, nil, res{}
	}
	b, _ := json.Marshal(spec)
	r := c.startCmd(opt{env: []string{textDriverEnv + "=" + string(b)}}, self).wait()
	var eps []textOutcome
	var end *textDriverEnd
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	for sc.Scan() {
		line := sc.Bytes()
		if strings.Contains(string(line), `"done":true`) {
			end = &textDriverEnd{}
			json.Unmarshal(line, end)
			continue
		}
		var o textOutcome
		if json.Unmarshal(line, &o) == nil {
			eps = append(eps, o)
		}
	}
	if end != nil {
		c.mu.Lock()
		c.rssKiB = max(c.rssKiB, end.VmHWMKiB)
		c.mu.Unlock()
	}
	c.check(r.code == 0 && end != nil, "the driver exited %d without finishing: %s", r.code, lastLines(r.out, 4))
	return eps, end, r
}

func textServerArgs(script string, extra envs.Params, serverArgs ...string) envs.Params {
	cmd := append([]any{"python3", filepath.Join(repo, script)}, anyStrings(serverArgs)...)
	p := envs.Params{"command": cmd, "handshake_timeout_s": 60, "timeout_s": 60}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

func anyStrings(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

// say is a misbehaving server's task that answers with actions, then stop.
func say(actions ...string) envs.Params { return envs.Params{"say": anyStrings(actions)} }

const misbehavingText = "remote/testdata/misbehaving_text_server.py"

// checkEpisode checks one episode's outcome: its termination and, for an
// error, the words its message must hold; an error episode must be masked.
func (c *cx) checkEpisode(eps []textOutcome, i int, term string, wants ...string) {
	if !c.check(i < len(eps), "episode %d not reported (%d episodes)", i, len(eps)) {
		return
	}
	o := eps[i]
	c.check(o.Termination == term, "episode %d ended %s (%s), want %s", i, o.Termination, o.Error, term)
	for _, w := range wants {
		c.check(strings.Contains(o.Error, w), "episode %d's error lacks %q: %s", i, w, o.Error)
	}
	if term == "error" {
		c.check(o.Masked, "episode %d (%s) is not masked", i, term)
	}
	if term == "env_done" {
		c.check(o.Correct && o.Reward == 1, "episode %d: reward %v, correct %v", i, o.Reward, o.Correct)
	}
}

func remoteTextCases() []hcase {
	cs := []hcase{{
		name:   "remote-text/guess server through the workflow engine",
		expect: "16 episodes on 2 workers of remote/guess_server.py, all won by binary search in at most 7 turns",
		fast:   true,
		rssKiB: 512 << 10,
		skip:   noPython,
		run: func(c *cx) {
			var tasks []envs.Params
			for i := range 16 {
				tasks = append(tasks, envs.Params{"secret": 3 + 6*i, "low": 1, "high": 100})
			}
			eps, end, _ := textDrive(c, textDriverSpec{Args: textServerArgs("remote/guess_server.py", envs.Params{"workers": 2}), Tasks: tasks, Concurrency: 8})
			for i := range tasks {
				c.checkEpisode(eps, i, "env_done")
				if i < len(eps) {
					c.check(eps[i].Turns <= 7, "episode %d took %d turns", i, eps[i].Turns)
				}
			}
			if end != nil {
				c.note("%d episodes won in %d ms, peak RSS %d MiB", len(eps), end.ElapsedMS, end.VmHWMKiB>>10)
			}
		},
	}}
	// Failures of one episode: it ends with the error (masked), the
	// episode after it on the same server is played to the end.
	for _, s := range []struct {
		name, action string
		args         envs.Params
		wants        []string
	}{
		{"an observation over the client's limit (refused by the server)", "huge 5000000", nil,
			[]string{"the observation is 5000000 bytes, over the client's limit of 1048576 (env.args.max_observation_bytes)"}},
		{"an observation over the client's limit (sent anyway)", "raw-huge 60000000", nil,
			[]string{"the observation is 60000000 bytes, over the limit of 1048576 (env.args.max_observation_bytes)"}},
		{"an observation that is not UTF-8", "raw-latin1", nil, []string{"the observation is not UTF-8 text (byte 0xe9 at offset 3"}},
		{"info that is a list", "raw-info-list", nil, []string{`the reply's "info" is "[1,2]", want a JSON object`}},
		{"info the environment returns as a list", "info-not-dict", nil, []string{"info must be a dict or None, got list"}},
		{"a reward that is a string", "raw-reward-str", nil, []string{`"reward" is "\"1\"", want a finite number`}},
		{"a step reply without done", "raw-no-done", nil, []string{`"done" is absent, want true or false`}},
		{"an exception in the environment's step", "raise", nil, []string{"the environment failed: ValueError: the verifier broke", "server traceback"}},
	} {
		cs = append(cs, hcase{
			name:   "remote-text/" + s.name,
			expect: "that episode ends with the error termination (masked) saying what the server sent; the next episode on the same server is won",
			fast:   s.action == "raw-latin1",
			rssKiB: 512 << 10,
			skip:   noPython,
			run: func(c *cx) {
				eps, _, _ := textDrive(c, textDriverSpec{Args: textServerArgs(misbehavingText, s.args), Tasks: []envs.Params{say("hello", s.action), say("fine")}})
				c.checkEpisode(eps, 0, "error", s.wants...)
				c.checkEpisode(eps, 1, "env_done")
				if len(eps) > 0 {
					c.note("%s", firstLine(eps[0].Error))
				}
			},
		})
	}
	cs = append(cs, hcase{
		name:   "remote-text/an observation longer than a prompt",
		expect: "an observation of 3 MB under a raised max_observation_bytes ends the episode with max_prompt_length_exceeded, saying why; the next episode is won",
		rssKiB: 512 << 10,
		skip:   noPython,
		run: func(c *cx) {
			eps, _, _ := textDrive(c, textDriverSpec{Args: textServerArgs(misbehavingText, envs.Params{"max_observation_bytes": 8 << 20}), MaxPrompt: 4096,
				Tasks: []envs.Params{say("huge 3000000"), say("fine")}})
			c.checkEpisode(eps, 0, "max_prompt_length_exceeded")
			c.checkEpisode(eps, 1, "env_done")
			if len(eps) > 0 {
				c.check(strings.Contains(eps[0].Detail, "an observation of 3000000 bytes is over the 1048576 a prompt can hold"), "the termination's detail: %q", eps[0].Detail)
				c.note("%s", eps[0].Detail)
			}
		},
	})
	// Failures of the server: the episodes it held end with the error; with
	// env.args.restart_workers the next one runs on a fresh server.
	for _, s := range []struct {
		name, action string
		args         envs.Params
		wants        []string
		restart      bool
	}{
		{"a server that dies in mid-episode", "crash", nil, []string{"the server closed the connection", "exit status 3", "simulated crash"}, false},
		{"a server that dies in mid-episode, restarted", "crash", nil, []string{"simulated crash"}, true},
		{"a server that hangs in mid-episode", "hang", envs.Params{"timeout_s": 3}, []string{"no progress waiting for the reply within 3s (env.args.timeout_s)"}, false},
		{"a server that hangs in mid-episode, restarted", "hang", envs.Params{"timeout_s": 3}, []string{"no progress"}, true},
		{"a header that is not JSON", "raw-header", nil, []string{"frame header is not a valid JSON object"}, true},
		{"info nested 20,000 deep", "raw-info-deep", nil, []string{"exceeded max depth"}, true},
		{"garbage on the protocol stream", "raw-garbage", nil, []string{"not a protocol frame"}, true},
		{"a reply to an earlier request", "raw-wrong-id", nil, []string{"want 4 (the id of this request)"}, true},
		{"an error that names no session", "raw-error", nil, []string{"RuntimeError: the server's own state is corrupt"}, true},
		{"an observation over the frame limit", "raw-huge 2000000", envs.Params{"max_frame_bytes": 1 << 20}, []string{"frame announces a 2000000-byte payload, over the limit of 1048576"}, true},
	} {
		expect := "that episode ends with the error termination naming what happened; without env.args.restart_workers the next episode fails with the worker's error and says how to restart it"
		if s.restart {
			expect = "that episode ends with the error termination; the server is restarted once and the next episode is won"
		}
		cs = append(cs, hcase{
			name:   "remote-text/" + s.name,
			expect: expect,
			fast:   s.action == "crash" && !s.restart,
			rssKiB: 512 << 10,
			skip:   noPython,
			run: func(c *cx) {
				args := envs.Params{"restart_workers": s.restart}
				for k, v := range s.args {
					args[k] = v
				}
				var serverArgs []string
				if s.restart {
					serverArgs = []string{"--once-file", c.path("once")}
				}
				eps, end, r := textDrive(c, textDriverSpec{Args: textServerArgs(misbehavingText, args, serverArgs...), Tasks: []envs.Params{say("hello", s.action), say("fine")}})
				c.checkEpisode(eps, 0, "error", s.wants...)
				if s.restart {
					c.checkEpisode(eps, 1, "env_done")
					c.check(strings.Contains(r.out, "restarted it (restart 1 of at most 10"), "no restart reported: %s", lastLines(r.out, 2))
				} else {
					c.checkEpisode(eps, 1, "error", "env.args.restart_workers = true starts a failed worker again")
				}
				if len(eps) > 0 {
					c.note("%s", firstLine(eps[0].Error))
				}
				if end != nil {
					c.note("%d ms", end.ElapsedMS)
				}
			},
		})
	}
	return append(cs, remoteTextStartCases()...)
}

// remoteTextStartCases: servers that fail before serving, and the wrong
// kind of server.
func remoteTextStartCases() []hcase {
	return []hcase{
		{
			name:   "remote-text/a numeric server",
			expect: "every episode ends with the error termination saying the server is numeric and to use env.id = \"remote\"",
			skip:   noPython,
			run: func(c *cx) {
				eps, _, _ := textDrive(c, textDriverSpec{Args: textServerArgs("remote/cartpole_server.py", nil), Tasks: []envs.Params{{}, {}}})
				for i := range 2 {
					c.checkEpisode(eps, i, "error", `this server serves a numeric environment (observation vectors), not a text one: use env.id = "remote"`)
				}
				if len(eps) > 0 {
					c.note("%s", firstLine(eps[0].Error))
				}
			},
		},
		{
			name:   "remote-text/a server that hangs before its hello",
			expect: "the episodes end with the error termination naming env.args.handshake_timeout_s, after one handshake timeout (they wait on the same start)",
			skip:   noPython,
			run: func(c *cx) {
				args := envs.Params{"command": []any{"python3", "-c", "import time; time.sleep(3600)"}, "handshake_timeout_s": 3}
				eps, end, _ := textDrive(c, textDriverSpec{Args: args, Tasks: []envs.Params{{}, {}, {}, {}}, Concurrency: 4})
				for i := range 4 {
					c.checkEpisode(eps, i, "error", "no progress waiting for the reply within 3s (env.args.handshake_timeout_s)")
				}
				if end != nil {
					c.check(end.ElapsedMS < 20_000, "took %d ms", end.ElapsedMS)
					c.note("4 episodes failed in %d ms", end.ElapsedMS)
				}
			},
		},
		{
			name:   "remote-text/a server that cannot start",
			expect: "the episodes end with the error termination naming the command and its stderr",
			skip:   noPython,
			run: func(c *cx) {
				args := envs.Params{"command": []any{"python3", "-c", "import sys; sys.stderr.write('no module named verifier\\n'); sys.exit(5)"}}
				eps, _, _ := textDrive(c, textDriverSpec{Args: args, Tasks: []envs.Params{{}, {}}})
				for i := range 2 {
					c.checkEpisode(eps, i, "error", "exit status 5", "no module named verifier")
				}
				if len(eps) > 0 {
					c.note("%s", strings.ReplaceAll(firstLine(eps[0].Error), "\n", " "))
				}
			},
		},
		{
			name:   "remote-text/64 episodes on 4 workers, one crashing",
			expect: "the episodes on the crashed worker end with the error; it is restarted and every later episode is won",
			rssKiB: 768 << 10,
			skip:   noPython,
			run: func(c *cx) {
				var tasks []envs.Params
				for i := range 64 {
					if i == 20 {
						tasks = append(tasks, say("hello", "crash"))
					} else {
						tasks = append(tasks, say("one", "two"))
					}
				}
				eps, end, _ := textDrive(c, textDriverSpec{Args: textServerArgs(misbehavingText, envs.Params{"workers": 4, "restart_workers": true}, "--once-file", c.path("once")),
					Tasks: tasks, Concurrency: 16})
				failed := 0
				for i, o := range eps {
					if o.Termination == "error" {
						failed++
						c.check(strings.Contains(o.Error, "simulated crash") || strings.Contains(o.Error, "lost with its worker"), "episode %d: %s", i, o.Error)
						continue
					}
					c.checkEpisode(eps, i, "env_done")
				}
				if c.check(len(eps) == 64, "%d episodes reported", len(eps)) {
					c.check(eps[63].Termination == "env_done", "the last episode: %s", eps[63].Error)
				}
				c.check(failed >= 1 && failed <= 16, "%d episodes failed (the crashed worker holds at most 16)", failed)
				if end != nil {
					c.note("%d episodes failed with the crash, %d won, %d ms", failed, len(eps)-failed, end.ElapsedMS)
				}
			},
		},
	}
}

// firstLine is the first line of an episode's error, from what went wrong
// (after "request N): ").
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if i := strings.Index(s, "): "); i >= 0 && strings.Contains(s[:i], "(request ") {
		s = s[i+3:]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
