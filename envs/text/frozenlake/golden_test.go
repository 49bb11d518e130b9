package frozenlake

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	numeric "github.com/agenttrainer/agenttrainer/envs/frozenlake"
)

// goldenTask is one line of testdata/*.jsonl, recorded from rLLM's own
// FrozenLakeEnv (see testdata/README-rllm.md).
type goldenTask struct {
	Task     envs.Params `json:"task"`
	ResetObs string      `json:"reset_obs"`
	Steps    []struct {
		Action    int     `json:"action"`
		Obs       string  `json:"obs"`
		Reward    float64 `json:"reward"`
		Done      bool    `json:"done"`
		Effective bool    `json:"action_is_effective"`
	} `json:"steps"`
}

func loadGolden(t *testing.T) map[string][]goldenTask {
	t.Helper()
	files, _ := filepath.Glob("testdata/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no golden files in testdata/")
	}
	out := map[string][]goldenTask{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 16<<20)
		for line := 1; sc.Scan(); line++ {
			var g goldenTask
			dec := json.NewDecoder(strings.NewReader(sc.Text()))
			dec.UseNumber()
			if err := dec.Decode(&g); err != nil {
				t.Fatalf("%s:%d: %v", f, line, err)
			}
			out[f] = append(out[f], g)
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestGoldenRLLM replays every recorded task: the map and first observation
// from the row, then each action's observation, reward, done and
// action_is_effective, exactly as rLLM's from_dict(row), reset(row) and
// step(action) gave them.
func TestGoldenRLLM(t *testing.T) {
	tasks, steps, mismatches := 0, 0, 0
	for file, golden := range loadGolden(t) {
		for i, g := range golden {
			where := file + ":" + strconv.Itoa(i+1)
			e, err := New(g.Task)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			obs, _, err := e.Reset(g.Task)
			if err != nil {
				t.Fatalf("%s: reset: %v", where, err)
			}
			tasks++
			if obs != g.ResetObs {
				mismatches++
				t.Errorf("%s: reset observation\n%s\nrLLM's:\n%s", where, obs, g.ResetObs)
				continue
			}
			for k, s := range g.Steps {
				steps++
				obs, r, done, info, err := e.Step(strconv.Itoa(s.Action))
				if err != nil {
					t.Fatalf("%s step %d: %v", where, k+1, err)
				}
				if obs != s.Obs || r != s.Reward || done != s.Done || info["action_is_effective"] != s.Effective {
					mismatches++
					t.Errorf("%s step %d (action %d): got reward %v done %v effective %v\n%s\nrLLM's: reward %v done %v effective %v\n%s",
						where, k+1, s.Action, r, done, info["action_is_effective"], obs, s.Reward, s.Done, s.Effective, s.Obs)
					break
				}
			}
		}
	}
	t.Logf("%d tasks, %d steps, %d mismatches", tasks, steps, mismatches)
}

// TestNumericFrozenLakeDrawsTheSameMaps checks that the numeric environment
// with generator = "rllm" plays the very maps rLLM's text environment
// shows for the same rows.
func TestNumericFrozenLakeDrawsTheSameMaps(t *testing.T) {
	n := 0
	for file, golden := range loadGolden(t) {
		for i, g := range golden {
			e, err := New(g.Task)
			if err != nil {
				t.Fatal(err)
			}
			args := envs.Params{"generator": "rllm", "max_size": 16}
			for _, k := range []string{"seed", "size", "p"} {
				args[k] = g.Task[k]
			}
			f, err := numeric.NewFrozenLake(args)
			if err != nil {
				t.Fatalf("%s:%d: %v", file, i+1, err)
			}
			if got, want := f.MapString(), strings.Join(e.Map(), "/"); got != want {
				t.Errorf("%s:%d: numeric map %s, text map %s", file, i+1, got, want)
			}
			if got, want := f.ShortestPath(), e.ShortestPath(); got != want {
				t.Errorf("%s:%d: numeric shortest path %d, text %d", file, i+1, got, want)
			}
			n++
		}
	}
	t.Logf("%d maps compared", n)
}
