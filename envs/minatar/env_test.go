package minatar

import (
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/envtest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestRenderGolden compares each game's picture after a fixed run with
// testdata/render/MinAtar/<Game>-v1.txt (-update rewrites them).
func TestRenderGolden(t *testing.T) {
	for _, c := range []envtest.RenderCase{
		{ID: "MinAtar/Asterix-v1", Seed: 1, Actions: []float32{1, 3}, Steps: 12},
		{ID: "MinAtar/Breakout-v1", Seed: 1, Actions: []float32{0}, Steps: 3},
		{ID: "MinAtar/Freeway-v1", Seed: 1, Actions: []float32{1}, Steps: 20},
		{ID: "MinAtar/Seaquest-v1", Seed: 2, Actions: []float32{4, 5, 0, 5}, Steps: 30},
		{ID: "MinAtar/SpaceInvaders-v1", Seed: 1, Actions: []float32{3, 0}, Steps: 12},
	} {
		t.Run(c.ID, func(t *testing.T) { envtest.CheckRender(t, c, *update) })
	}
}

func TestArgs(t *testing.T) {
	tests := []struct {
		args    envs.Params
		wantErr string // "" for none
		sticky  float64
		ramping bool
	}{
		{nil, "", 0.1, true},
		{envs.Params{"sticky_action_prob": 0.0, "difficulty_ramping": false}, "", 0, false},
		{envs.Params{"sticky_action_prob": 1}, "", 1, true},
		{envs.Params{"sticky_action_prb": 0.2}, `unknown argument "sticky_action_prb" (it takes sticky_action_prob, difficulty_ramping); did you mean sticky_action_prob?`, 0, false},
		{envs.Params{"sticky_action_prob": 1.5}, "must be a probability in [0, 1], got 1.5", 0, false},
		{envs.Params{"sticky_action_prob": "a lot"}, `sticky_action_prob must be a number, got "a lot"`, 0, false},
		{envs.Params{"difficulty_ramping": "yes"}, "difficulty_ramping must be true or false", 0, false},
	}
	for _, tt := range tests {
		e, err := envs.Make("MinAtar/Seaquest-v0", tt.args)
		if tt.wantErr != "" {
			var ae *envs.ArgsError
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.As(err, &ae) {
				t.Errorf("args %v: error %v, want an ArgsError containing %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("args %v: %v", tt.args, err)
		}
		m := e.(*Env)
		if m.sticky != tt.sticky || m.g.(*seaquest).Ramping != tt.ramping {
			t.Errorf("args %v: sticky %v ramping %v, want %v %v", tt.args, m.sticky, m.g.(*seaquest).Ramping, tt.sticky, tt.ramping)
		}
	}
	_, err := envs.Make("MinAtar/Breakout-v1", envs.Params{"dificulty_ramping": true})
	if err == nil || !strings.Contains(err.Error(), "did you mean difficulty_ramping?") {
		t.Errorf("a misspelt argument gave %v, want a did-you-mean", err)
	}
}

func TestActionSets(t *testing.T) {
	for _, g := range games {
		for suffix, n := range map[string]int{"-v0": 6, "-v1": len(g.minimal)} {
			e, err := envs.Make("MinAtar/"+g.title+suffix, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := e.ActionSpace().N; got != n {
				t.Errorf("%s%s has %d actions, want %d", g.title, suffix, got, n)
			}
			if got, want := e.ObservationSpace().Dim, 100*len(g.channels); got != want {
				t.Errorf("%s%s observes %d values, want %d", g.title, suffix, got, want)
			}
		}
	}
	if _, err := New("Breakuot", DefaultOptions()); err == nil || !strings.Contains(err.Error(), "did you mean Breakout?") {
		t.Errorf("New(Breakuot) gave %v, want a did-you-mean", err)
	}
}

// TestSnapshotResumesExactly: a game restored from a snapshot in the middle
// of an episode, into a fresh environment, goes on with the same
// observations, rewards and random draws as the original, across resets.
func TestSnapshotResumesExactly(t *testing.T) {
	for _, g := range games {
		t.Run(g.title, func(t *testing.T) {
			a, _ := New(g.title, DefaultOptions())
			b, _ := New(g.title, DefaultOptions())
			n := a.ObservationSpace().Dim
			oa, ob := make([]float32, n), make([]float32, n)
			act := func(i int) []float32 { return []float32{float32((i * 7 / 3) % 6)} }
			a.Reset(3, oa)
			for i := range 60 {
				if _, term, _ := a.Step(act(i), oa); term {
					a.Reset(envs.NoSeed, oa)
				}
			}
			snap, err := a.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Restore(snap); err != nil {
				t.Fatal(err)
			}
			for i := range 400 {
				ra, ta, _ := a.Step(act(i), oa)
				rb, tb, _ := b.Step(act(i), ob)
				if ra != rb || ta != tb || !slices.Equal(oa, ob) {
					t.Fatalf("step %d after restore: reward %v/%v terminal %v/%v or observations differ", i, ra, rb, ta, tb)
				}
				if ta {
					a.Reset(envs.NoSeed, oa)
					b.Reset(envs.NoSeed, ob)
				}
			}
			if err := b.Restore([]byte(`{"rng":"AAAA"}`)); err == nil {
				t.Error("a snapshot without a game was accepted")
			}
		})
	}
}

// Every channel's letter has a colour of its own, and the legend lists
// every letter, so the watch view can colour cells and legend alike.
func TestColoursCoverTheLetters(t *testing.T) {
	for _, id := range []string{"MinAtar/Asterix-v1", "MinAtar/Breakout-v1", "MinAtar/Freeway-v1", "MinAtar/Seaquest-v1", "MinAtar/SpaceInvaders-v1"} {
		e, err := envs.Make(id, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := e.(*Env)
		colours := envs.Colours(e)
		seen := map[int]bool{}
		_, caption := m.Picture()
		for _, l := range m.info.letters {
			c, ok := colours[l]
			if !ok || seen[c] {
				t.Errorf("%s: letter %q has no colour of its own (%v)", id, l, colours)
			}
			seen[c] = true
			if !strings.Contains(caption, string(l)+" ") {
				t.Errorf("%s: the legend %q lacks %q", id, caption, l)
			}
		}
	}
}
