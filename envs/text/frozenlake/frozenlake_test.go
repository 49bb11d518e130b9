package frozenlake

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
)

func TestBadTasksAreRefused(t *testing.T) {
	for _, tt := range []struct {
		name string
		task envs.Params
		want string
	}{
		{"no seed", envs.Params{"size": 4, "p": 0.8}, "seed is missing"},
		{"negative seed", envs.Params{"seed": -1, "size": 4, "p": 0.8}, "non-negative"},
		{"size 1", envs.Params{"seed": 1, "size": 1, "p": 0.8}, "size must be an integer from 2"},
		{"huge size", envs.Params{"seed": 1, "size": 1 << 40, "p": 0.8}, "size must be an integer from 2"},
		{"size as text", envs.Params{"seed": 1, "size": "four", "p": 0.8}, "size must be an integer"},
		{"NaN p", envs.Params{"seed": 1, "size": 4, "p": math.NaN()}, "p must be a probability"},
		{"negative p", envs.Params{"seed": 1, "size": 4, "p": -0.5}, "p must be a probability"},
		{"misspelt column", envs.Params{"seed": 1, "size": 4, "p": 0.8, "max_stpes": 3}, `unknown argument "max_stpes"`},
		{"slippery as text", envs.Params{"seed": 1, "size": 4, "p": 0.8, "is_slippery": "maybe"}, "is_slippery must be true or false"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := text.Make(ID, tt.task, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
}

func TestPAboveOneIsCappedAsRLLMDoes(t *testing.T) {
	e, err := New(envs.Params{"seed": 3, "size": 5, "p": 1.7})
	if err != nil {
		t.Fatal(err)
	}
	if m := strings.Join(e.Map(), ""); strings.Contains(m, "H") {
		t.Fatalf("p capped at 1 must give no holes, got %s", m)
	}
}

func TestActions(t *testing.T) {
	e, _ := New(envs.Params{"seed": 577090037, "size": 3, "p": 0.663767}) // SHF/GFF/FFF
	if _, _, _, _, err := e.Step("1"); err == nil {
		t.Fatal("a step before reset was accepted")
	}
	start, _, _ := e.Reset(nil)
	for _, tt := range []struct {
		action string
		err    bool
	}{{"", false}, {"0", false}, {" 0\n", false}, {"5", true}, {"-1", true}, {"Up", true}, {"2.0", true}, {"\xff\xfe", true}} {
		obs, r, done, info, err := e.Step(tt.action)
		if (err != nil) != tt.err {
			t.Fatalf("action %q: error %v", tt.action, err)
		}
		if !tt.err && (obs != start || r != 0 || done || info["action_is_effective"] != false) {
			t.Fatalf("invalid action %q moved or ended the episode", tt.action)
		}
	}
	// Left at the edge does not move; Down reaches G.
	if _, _, _, info, _ := e.Step("1"); info["action_is_effective"] != false {
		t.Fatal("walking into the edge was effective")
	}
	obs, r, done, _, _ := e.Step("2")
	if r != 1 || !done || !strings.HasPrefix(obs, " _ \t O \t _ \t\n √ \t") || !e.Succeeded() {
		t.Fatalf("stepping onto G: reward %v done %v\n%s", r, done, obs)
	}
	// rLLM pays 1 again for any action on the goal.
	if _, r, done, info, _ := e.Step("0"); r != 1 || !done || info["action_is_effective"] != false {
		t.Fatal("a step on the goal must pay 1 and be done, as rLLM's does")
	}
}

func TestHoleIsAbsorbingButInvalidActionsAreNotDone(t *testing.T) {
	e, _ := New(envs.Params{"seed": 577090037, "size": 3, "p": 0.663767}) // SHF/GFF/FFF
	e.Reset(nil)
	obs, r, done, _, _ := e.Step("3")
	if r != 0 || !done || !strings.Contains(obs, " X \t") {
		t.Fatalf("falling in: reward %v done %v\n%s", r, done, obs)
	}
	if _, _, done, info, _ := e.Step("2"); !done || info["action_is_effective"] != false {
		t.Fatal("a move from a hole must stay in it, done")
	}
	if _, _, done, _, _ := e.Step("0"); done {
		t.Fatal("rLLM's invalid action returns done=false even in a hole")
	}
}

// The oracle walks every golden map from S to G in exactly the shortest
// number of moves, never into a hole.
func TestSolutionWalksTheShortestPath(t *testing.T) {
	for file, golden := range loadGolden(t) {
		for i, g := range golden {
			e, _ := New(g.Task)
			e.Reset(nil)
			want := e.ShortestPath()
			moves := 0
			for {
				resp, ok := e.Solution()
				if !ok {
					break
				}
				a, _ := e.BestAction()
				if resp != "```"+ActionNames[a]+"```" {
					t.Fatalf("solution %q for action %d", resp, a)
				}
				_, _, done, _, err := e.Step(strconv.Itoa(a))
				if err != nil {
					t.Fatal(err)
				}
				moves++
				if done {
					break
				}
			}
			if want < 0 {
				if moves != 0 {
					t.Errorf("%s:%d: moves on a map without a way", file, i+1)
				}
				continue
			}
			if !e.Succeeded() || moves != want {
				t.Errorf("%s:%d: the oracle took %d moves (success %v), the shortest path is %d", file, i+1, moves, e.Succeeded(), want)
			}
		}
	}
}

// A slippery lake goes the chosen way a third of the time, and the same
// seed replays the same slips.
func TestSlipperyMoves(t *testing.T) {
	task := envs.Params{"seed": 11, "size": 6, "p": 1.0, "is_slippery": true}
	run := func() []string {
		e, _ := New(task)
		var out []string
		for range 200 {
			e.Reset(nil)
			obs, _, _, _, _ := e.Step("3")
			out = append(out, obs)
		}
		return out
	}
	a, b := run(), run()
	if strings.Join(a, "|") != strings.Join(b, "|") {
		t.Fatal("the same seed gave different slips")
	}
	// Each reset re-seeds: every episode's first step slips the same way.
	if a[0] != a[199] {
		t.Fatal("reset(seed) must replay the stream from the start")
	}
	e, _ := New(task)
	e.Reset(nil)
	counts := map[int]int{}
	inside := 0
	for range 6000 {
		r, c := e.pos/6, e.pos%6
		if r == 0 || r == 5 || c == 5 || e.desc[e.pos] == 'G' {
			e.pos = 2*6 + 2 // back inside, where every way is open
			continue
		}
		before := e.pos
		e.Step("3")
		counts[e.pos-before]++
		inside++
	}
	if len(counts) > 3 || counts[1]+counts[6]+counts[-6] != inside {
		t.Fatalf("moves other than right, down or up: %v", counts)
	}
	for d, n := range counts {
		if f := float64(n) / float64(inside); f < 0.28 || f > 0.39 {
			t.Errorf("move %+d in %.3f of the steps, want about 1/3 (%v)", d, f, counts)
		}
	}
}

func TestGenerateDistinctMaps(t *testing.T) {
	rows, err := Generate(text.GenerateOptions{N: 200, Seed: 1, Args: envs.Params{"size": 4, "max_steps": 8}})
	if err != nil {
		t.Fatal(err)
	}
	train := map[string]bool{}
	for _, row := range rows {
		k, err := Key(row)
		if err != nil || train[k] {
			t.Fatalf("%v: %q %v", row, k, err)
		}
		train[k] = true
		e, _ := New(row)
		if d := e.ShortestPath(); d < 1 || d > 8 || e.MaxTurns() != 8 {
			t.Fatalf("%v: shortest path %d, turn limit %d", row, d, e.MaxTurns())
		}
	}
	val, err := Generate(text.GenerateOptions{N: 200, Seed: 2, Args: envs.Params{"size": 4}, Exclude: train})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range val {
		if k, _ := Key(row); train[k] {
			t.Fatalf("validation map %s is a training map", k)
		}
	}
	if _, err := Generate(text.GenerateOptions{N: 100, Args: envs.Params{"size": 2}}); err == nil {
		t.Error("100 distinct 2×2 maps were made")
	}
}
