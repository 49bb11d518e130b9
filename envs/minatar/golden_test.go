package minatar

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
)

// goldenLine is one line of a minatar-golden-trajectories/v1 file (each
// file's header line documents the fields).
type goldenLine struct {
	Type string `json:"type"`
	// header
	Format       string            `json:"format"`
	Game         string            `json:"game"`
	GymnasiumIDs map[string]string `json:"gymnasium_ids"`
	StateShape   []int             `json:"state_shape"`
	Channels     map[string]int    `json:"channels"`
	MinimalSet   []int             `json:"minimal_action_set"`
	StickyProb   *float64          `json:"sticky_action_prob"`
	Ramping      *bool             `json:"difficulty_ramping"`
	MinatarVer   string            `json:"minatar_version"`
	// episode
	ChainSeed      int64  `json:"chain_seed"`
	EpisodeInChain int    `json:"episode_in_chain"`
	ResetWithSeed  bool   `json:"reset_with_seed"`
	ResetObsOn     []int  `json:"reset_obs_on"`
	NSteps         int    `json:"n_steps"`
	End            string `json:"end"`
	Return         float64
	// step
	T             int     `json:"t"`
	Action        int     `json:"action"`
	AppliedAction int     `json:"applied_action"`
	PrevAction    int     `json:"prev_action"`
	Reward        float64 `json:"reward"`
	Terminal      bool    `json:"terminal"`
	ObsOn         []int   `json:"obs_on"`
}

type goldenEpisode struct {
	start goldenLine
	steps []goldenLine
}

func readGolden(t *testing.T, path string) (goldenLine, []goldenEpisode) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var head goldenLine
	var eps []goldenEpisode
	for n := 1; sc.Scan(); n++ {
		var l goldenLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		switch l.Type {
		case "header":
			if l.Format != "minatar-golden-trajectories/v1" {
				t.Fatalf("%s: unknown format %q", path, l.Format)
			}
			head = l
		case "episode":
			eps = append(eps, goldenEpisode{start: l})
		case "step":
			if len(eps) == 0 {
				t.Fatalf("%s:%d: a step before any episode line", path, n)
			}
			eps[len(eps)-1].steps = append(eps[len(eps)-1].steps, l)
		default:
			t.Fatalf("%s:%d: unknown line type %q", path, n, l.Type)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if head.Format == "" || len(eps) == 0 {
		t.Fatalf("%s: no header or no episodes", path)
	}
	return head, eps
}

// onCells lists the flat indices of the observation's ones.
func onCells(obs []float32) []int {
	var on []int
	for i, v := range obs {
		if v != 0 {
			on = append(on, i)
		}
	}
	return on
}

// titleOf finds the registered game a header's Gymnasium ids name.
func titleOf(t *testing.T, head goldenLine) gameInfo {
	t.Helper()
	for _, g := range games {
		if head.GymnasiumIDs["v0 (all 6 actions)"] == "MinAtar/"+g.title+"-v0" {
			return g
		}
	}
	t.Fatalf("no game here for the ids %v", head.GymnasiumIDs)
	return gameInfo{}
}

// checkHeader compares what the header says of the game with the package:
// ids, channels, minimal action set, defaults.
func checkHeader(t *testing.T, head goldenLine, g gameInfo) {
	t.Helper()
	for _, id := range head.GymnasiumIDs {
		if _, ok := envs.Lookup(id); !ok {
			t.Errorf("%s is not registered", id)
		}
	}
	if want := []int{10, 10, len(g.channels)}; !slices.Equal(head.StateShape, want) {
		t.Errorf("state shape %v, the package has %v", head.StateShape, want)
	}
	for name, c := range head.Channels {
		if c >= len(g.channels) || g.channels[c] != name {
			t.Errorf("channel %d is %q in MinAtar, the package's channels are %v", c, name, g.channels)
		}
	}
	if !slices.Equal(head.MinimalSet, g.minimal) {
		t.Errorf("minimal action set %v, the package has %v", head.MinimalSet, g.minimal)
	}
	def := DefaultOptions()
	if head.StickyProb == nil || *head.StickyProb != def.StickyActionProb || head.Ramping == nil || *head.Ramping != def.DifficultyRamping {
		t.Errorf("the recording's sticky_action_prob/difficulty_ramping differ from the defaults %v/%v", def.StickyActionProb, def.DifficultyRamping)
	}
}

// TestMinAtarGolden replays every recorded MinAtar trajectory in testdata/:
// per chain a new environment reset with the chain's seed, later episodes
// reset without one; every step's applied action (after sticky actions),
// reward, terminal flag and every cell of the observation must match.
func TestMinAtarGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no golden files in testdata/ (copy them from ../shared/testdata/minatar)")
	}
	for _, path := range files {
		head, eps := readGolden(t, path)
		g := titleOf(t, head)
		t.Run(filepath.Base(path), func(t *testing.T) {
			checkHeader(t, head, g)
			var e *Env
			obs := make([]float32, 100*len(g.channels))
			steps := 0
			for _, ep := range eps {
				where := fmt.Sprintf("chain %d episode %d", ep.start.ChainSeed, ep.start.EpisodeInChain)
				if ep.start.EpisodeInChain == 0 {
					if !ep.start.ResetWithSeed {
						t.Fatalf("%s: a chain must start with a seeded reset", where)
					}
					var err error
					if e, err = New(g.title, DefaultOptions()); err != nil {
						t.Fatal(err)
					}
					e.Reset(ep.start.ChainSeed, obs)
				} else {
					if e == nil || ep.start.ResetWithSeed {
						t.Fatalf("%s: later episodes of a chain reset without a seed", where)
					}
					e.Reset(envs.NoSeed, obs)
				}
				if got := onCells(obs); !slices.Equal(got, ep.start.ResetObsOn) {
					t.Fatalf("%s: reset observation has cells %v on, MinAtar had %v", where, got, ep.start.ResetObsOn)
				}
				if len(ep.steps) != ep.start.NSteps {
					t.Fatalf("%s: %d step lines, the episode line says %d", where, len(ep.steps), ep.start.NSteps)
				}
				ret := 0.0
				for i, s := range ep.steps {
					if e.lastAction != s.PrevAction {
						t.Fatalf("%s step %d: previous action %d, MinAtar had %d", where, s.T, e.lastAction, s.PrevAction)
					}
					r, term, trunc := e.Step([]float32{float32(s.Action)}, obs)
					if e.lastAction != s.AppliedAction {
						t.Fatalf("%s step %d: action %d applied as %d, MinAtar applied %d", where, s.T, s.Action, e.lastAction, s.AppliedAction)
					}
					if r != s.Reward || term != s.Terminal || trunc {
						t.Fatalf("%s step %d: reward %v terminal %v truncated %v, MinAtar %v %v false", where, s.T, r, term, trunc, s.Reward, s.Terminal)
					}
					if got := onCells(obs); !slices.Equal(got, s.ObsOn) {
						t.Fatalf("%s step %d: observation has cells %v on, MinAtar had %v", where, s.T, got, s.ObsOn)
					}
					if want := i == len(ep.steps)-1 && ep.start.End == "terminal"; term != want {
						t.Fatalf("%s step %d: terminal %v, the episode line says it ends %q after %d steps", where, s.T, term, ep.start.End, ep.start.NSteps)
					}
					ret += r
					steps++
				}
				if ret != ep.start.Return {
					t.Fatalf("%s: return %v, MinAtar %v", where, ret, ep.start.Return)
				}
			}
			t.Logf("%s: %d episodes, %d steps replayed exactly", g.title, len(eps), steps)
		})
	}
}
