package data

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/agents/lm/textagent"
	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/envs/tasks"
	"github.com/agenttrainer/agenttrainer/envs/text"
	"github.com/agenttrainer/agenttrainer/trainer/textrl"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	o, err := Parse(args)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	err = Run(context.Background(), o, &out, &out)
	return out.String(), err
}

// Training and validation sets of every generating text environment share
// no task, and each validation task's demonstration is a solved chat.
func TestTextTasksAndDemos(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		env  string
		args []string
	}{
		{"TextFrozenLake-v0", []string{"--arg", "size=4", "--arg", "max_steps=8"}},
		{"Arithmetic-v0", []string{"--arg", "digits=2"}},
		{"Countdown-v0", []string{"--arg", "count=3"}},
	} {
		train := filepath.Join(dir, tt.env+"-train.jsonl")
		val := filepath.Join(dir, tt.env+"-val.jsonl")
		demos := filepath.Join(dir, tt.env+"-demos.jsonl")
		if _, err := run(t, append([]string{"tasks", "--env", tt.env, "--n", "100", "--seed", "1", "--out", train}, tt.args...)...); err != nil {
			t.Fatal(err)
		}
		if _, err := run(t, append([]string{"tasks", "--env", tt.env, "--n", "30", "--seed", "2", "--exclude", train, "--out", val}, tt.args...)...); err != nil {
			t.Fatal(err)
		}
		spec, _ := text.Lookup(tt.env)
		a, _ := tasks.LoadTasks(train)
		b, _ := tasks.LoadTasks(val)
		if len(a) != 100 || len(b) != 30 {
			t.Fatalf("%s: %d and %d tasks", tt.env, len(a), len(b))
		}
		keys := map[string]bool{}
		for _, r := range a {
			k, _ := spec.Key(r)
			keys[k] = true
		}
		for _, r := range b {
			if k, _ := spec.Key(r); keys[k] {
				t.Fatalf("%s: validation task %v is a training task", tt.env, r)
			}
		}
		if out, err := run(t, "demos", "--env", tt.env, "--tasks", val, "--out", demos); err != nil || !strings.Contains(out, "wrote 30") {
			t.Fatalf("%s demos: %v %s", tt.env, err, out)
		}
		f, _ := os.Open(demos)
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		n := 0
		for sc.Scan() {
			var tr struct {
				Messages []struct{ Role, Content string }
				Success  bool
			}
			if err := json.Unmarshal(sc.Bytes(), &tr); err != nil || !tr.Success || tr.Messages[len(tr.Messages)-1].Role != "assistant" {
				t.Fatalf("%s demo line %d: %v %+v", tt.env, n+1, err, tr)
			}
			n++
		}
		f.Close()
		if n != 30 {
			t.Fatalf("%d demonstrations", n)
		}
	}
}

func TestTextDataUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"tasks", "--out", "x.jsonl"}, "needs --env ID and --out FILE"},
		{[]string{"tasks", "--env", "Chess-v0", "--out", "x.jsonl"}, "not a text environment"},
		{[]string{"tasks", "--env", "QA-v0", "--out", "x.jsonl"}, "makes no tasks of its own"},
		{[]string{"tasks", "--env", "Arithmetic-v0", "--out", "x.txt"}, "name the file .jsonl or .csv"},
		{[]string{"demos", "--env", "Arithmetic-v0", "--out", "x.jsonl"}, "--tasks FILE"},
		{[]string{"demos", "--env", "Arithmetic-v0", "--tasks", "t.jsonl", "--out", "x.csv"}, "name the file .jsonl"},
		{[]string{"tasks", "--env", "Arithmetic-v0", "--arg", "novalue", "--out", "x.jsonl"}, "want key=value"},
		{[]string{"chess"}, "it writes frozenlake, tasks or demos"},
	} {
		_, err := run(t, tt.args...)
		var ue *cmdutil.UsageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want a usage error saying %q", tt.args, err, tt.want)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"tasks", "--env", "Arithmetic-v0", "--arg", "digits=40", "--out", filepath.Join(dir, "a.jsonl")}, "digits must be 1 to 18"},
		{[]string{"tasks", "--env", "Arithmetic-v0", "--arg", "digit=4", "--out", filepath.Join(dir, "a.jsonl")}, `unknown argument "digit"`},
		{[]string{"tasks", "--env", "Countdown-v0", "--out", filepath.Join(dir, "c.csv")}, "name the file .jsonl"},
		{[]string{"tasks", "--env", "Arithmetic-v0", "--exclude", filepath.Join(dir, "missing.jsonl"), "--out", filepath.Join(dir, "a.jsonl")}, "does not exist"},
		{[]string{"demos", "--env", "QA-v0", "--tasks", writeFile(t, dir, "q.jsonl", `{"question": "q"}`), "--out", filepath.Join(dir, "d.jsonl")}, "task 1"},
	} {
		_, err := run(t, tt.args...)
		var ce *cmdutil.ConfigError
		if err == nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want a config error saying %q", tt.args, err, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "a.jsonl")); err == nil {
		t.Error("a failed command left a file")
	}
}

func writeFile(t *testing.T, dir, name, body string) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Both scratchpads keep the answer the agent hands the environment, so the
// rewritten demonstration still wins: reversed-digits thinks the digits
// last-first, padded-digits thinks them with leading zeros to the set's
// widest answer (4 digits for sums of 3-digit numbers).
func TestThinkDigits(t *testing.T) {
	for _, kind := range []string{"reversed-digits", "padded-digits"} {
		t.Run(kind, func(t *testing.T) { testThink(t, kind) })
	}
}

func testThink(t *testing.T, kind string) {
	dir := t.TempDir()
	val := filepath.Join(dir, "val.jsonl")
	demos := filepath.Join(dir, "demos.jsonl")
	if _, err := run(t, "tasks", "--env", "Arithmetic-v0", "--n", "40", "--seed", "3", "--arg", "digits=3", "--out", val); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "demos", "--env", "Arithmetic-v0", "--tasks", val, "--think", kind, "--out", demos); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	b, _ := os.ReadFile(demos)
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var tr textrl.Transcript
		if err := json.Unmarshal([]byte(line), &tr); err != nil {
			t.Fatal(err)
		}
		env, err := text.Make("Arithmetic-v0", tr.Task, nil)
		if err != nil {
			t.Fatal(err)
		}
		agent, _ := textagent.New("single_turn", nil)
		obs, info, _ := env.Reset(nil)
		agent.UpdateFromEnv(obs, 0, false, info)
		got := tr.Messages[1].Content
		think, answer, _ := strings.Cut(strings.TrimPrefix(got, "<think>"), "</think>")
		want := answer
		if kind == "reversed-digits" {
			r := []rune(answer)
			slices.Reverse(r)
			want = string(r)
		} else {
			a, _ := tr.Task.Int("a", -1)
			b, _ := tr.Task.Int("b", -1)
			want = fmt.Sprintf("%04d", a+b) // the tasks' operation is "+"
		}
		if think != want {
			t.Fatalf("line %d: %q thinks %q, want %q", i+1, got, think, want)
		}
		if _, reward, _, _, _ := env.Step(agent.UpdateFromModel(got)); reward != 1 {
			t.Fatalf("line %d: %q is not rewarded", i+1, got)
		}
	}
	if _, err := run(t, "demos", "--env", "TextFrozenLake-v0", "--tasks", val, "--think", kind, "--out", demos); err == nil || !strings.Contains(err.Error(), "single-turn") {
		t.Fatalf("a multi-turn task took a scratchpad: %v", err)
	}
}

// The coords scratchpads name where P and G stand in the observation just
// before each move (row and column from 1), coords-neighbours also the
// tiles around P, and the agent still reads the move after them: replaying
// each demonstration through the environment and the agent wins every
// episode.
func TestThinkCoords(t *testing.T) {
	for _, tt := range []struct {
		kind  string
		args  map[string]any
		think string
	}{
		{"coords", map[string]any{"system_prompt": "", "accumulate_history": false}, "^P([1-9])([1-9])G([1-9])([1-9])() ```[A-Za-z]+```$"},
		{"coords-neighbours", map[string]any{"system_prompt": "", "accumulate_history": false, "observation_only": true},
			"^P([1-9])([1-9])G([1-9])([1-9])([_OG#]{4}) ```[A-Za-z]+```$"},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			dir := t.TempDir()
			tasks := filepath.Join(dir, "tasks.jsonl")
			demos := filepath.Join(dir, "demos.jsonl")
			if _, err := run(t, "tasks", "--env", "TextFrozenLake-v0", "--n", "30", "--seed", "5", "--arg", "size=4", "--out", tasks); err != nil {
				t.Fatal(err)
			}
			args := []string{"demos", "--env", "TextFrozenLake-v0", "--tasks", tasks, "--think", tt.kind, "--out", demos}
			for k, v := range tt.args {
				args = append(args, "--agent-arg", fmt.Sprintf("%s=%v", k, v))
			}
			if out, err := run(t, args...); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			b, _ := os.ReadFile(demos)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			think := regexp.MustCompile(tt.think)
			var env text.Env
			var agent textagent.Agent
			var obs string
			wins, neighbours := 0, map[string]int{}
			for i, line := range lines {
				var tr textrl.Transcript
				if err := json.Unmarshal([]byte(line), &tr); err != nil {
					t.Fatal(err)
				}
				if tr.Turn <= 1 { // 0: a one-turn episode, written whole
					var err error
					if env, err = text.Make("TextFrozenLake-v0", tr.Task, nil); err != nil {
						t.Fatal(err)
					}
					agent, _ = textagent.New("frozenlake", tt.args)
					var info text.Info
					obs, info, _ = env.Reset(nil)
					agent.UpdateFromEnv(obs, 0, false, info)
				}
				if want := agent.Messages()[len(agent.Messages())-1].Content; tr.Messages[len(tr.Messages)-2].Content != want {
					t.Fatalf("line %d: the user turn is %q, the agent shows %q", i+1, tr.Messages[len(tr.Messages)-2].Content, want)
				}
				got := tr.Messages[len(tr.Messages)-1].Content
				m := think.FindStringSubmatch(got)
				if m == nil {
					t.Fatalf("line %d: %q is not %s", i+1, got, tt.think)
				}
				p := tileAt(obs, "P")
				if want := p + tileAt(obs, "G"); m[1]+m[2]+m[3]+m[4] != want {
					t.Fatalf("line %d: %q, but the observation has P and G at %s:\n%s", i+1, got, want, obs)
				}
				if m[5] != "" {
					if want := around(obs, int(p[0]-'0'), int(p[1]-'0')); m[5] != want {
						t.Fatalf("line %d: %q, but the tiles left, right, above and below P are %s:\n%s", i+1, got, want, obs)
					}
					neighbours[m[5]]++
				}
				next, reward, done, info, err := env.Step(agent.UpdateFromModel(got))
				if err != nil {
					t.Fatal(err)
				}
				obs = next
				agent.UpdateFromEnv(next, reward, done, info)
				if done && reward == 1 {
					wins++
				}
			}
			if wins != 30 {
				t.Fatalf("%d of 30 replayed demonstrations won", wins)
			}
			if tt.kind == "coords-neighbours" && len(neighbours) < 5 {
				t.Fatalf("the neighbours hardly vary over %d moves: %v", len(lines), neighbours)
			}
			if _, err := run(t, "demos", "--env", "Arithmetic-v0", "--tasks", tasks, "--think", tt.kind, "--out", demos); err == nil || !strings.Contains(err.Error(), "FrozenLake") {
				t.Fatalf("%s took a task without a grid: %v", tt.kind, err)
			}
		})
	}
}

// around is the tiles left of, right of, above and below row, col (from
// 1) in a rendered lake, "#" off it.
func around(obs string, row, col int) string {
	var grid [][]string
	for _, line := range strings.Split(obs, "\n") {
		if fields := strings.Fields(line); len(fields) >= 2 {
			grid = append(grid, fields)
		}
	}
	s := ""
	for _, d := range [][2]int{{0, -1}, {0, 1}, {-1, 0}, {1, 0}} {
		r, c := row-1+d[0], col-1+d[1]
		if r < 0 || r >= len(grid) || c < 0 || c >= len(grid[r]) {
			s += "#"
		} else {
			s += grid[r][c]
		}
	}
	return s
}

// tileAt is where tile stands in a rendered lake, row and column from 1,
// as two digits.
func tileAt(obs, tile string) string {
	row := 0
	for _, line := range strings.Split(obs, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		row++
		if col := slices.Index(fields, tile); col >= 0 {
			return fmt.Sprintf("%d%d", row, col+1)
		}
	}
	return "??"
}
