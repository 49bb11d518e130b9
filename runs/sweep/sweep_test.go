package sweep

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

func checked(t *testing.T, src string) *Spec {
	t.Helper()
	s, err := ParseSpecTOML(src, "spec.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(config.Default(), "spec.toml", 4); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGrid(t *testing.T) {
	s := checked(t, `
seeds = [1, 2]
[params.ppo]
learning_rate = { min = 1e-4, max = 1e-2, num = 3, spacing = "log" }
num_steps = [64, 128]
`)
	trials := s.Draw()
	if len(trials) != 3*2*2 || s.Method != "grid" || s.Parallel != 4 {
		t.Fatalf("%d trials, method %s, parallel %d", len(trials), s.Method, s.Parallel)
	}
	var lrs []string
	for _, tr := range trials[:6:6] {
		if tr.Seed == 1 {
			lrs = append(lrs, fmt.Sprintf("%.4g/%v", tr.Params["ppo.learning_rate"], tr.Params["ppo.num_steps"]))
		}
	}
	if fmt.Sprint(lrs) != "[0.0001/64 0.0001/128 0.001/64]" {
		t.Errorf("grid order %v", lrs)
	}
}

func TestRandomIsReproducible(t *testing.T) {
	src := `
trials = 5
sample_seed = 7
[params]
"ppo.learning_rate" = { distribution = "log_uniform", min = 1e-4, max = 1e-2 }
"ppo.num_steps" = { distribution = "uniform", min = 32, max = 256 }
"env.normalize_obs" = [true, false]
`
	a, b := checked(t, src).Draw(), checked(t, src).Draw()
	if !reflect.DeepEqual(a, b) || len(a) != 5 {
		t.Fatalf("two draws differ or wrong size: %v", a)
	}
	for _, tr := range a {
		lr := tr.Params["ppo.learning_rate"].(float64)
		ns, isInt := tr.Params["ppo.num_steps"].(int64)
		if lr < 1e-4 || lr > 1e-2 || !isInt || ns < 32 || ns > 256 {
			t.Errorf("out of range: %v", tr.Params)
		}
	}
	other := checked(t, src+"\n")
	other.SampleSeed = 8
	if reflect.DeepEqual(other.Draw(), a) {
		t.Error("another sample_seed drew the same trials")
	}
}

func TestASHA(t *testing.T) {
	st := NewStopper(EarlyStop{Method: "asha", Milestones: []int64{100}, Reduction: 2}, true)
	for i, c := range []struct {
		v    float64
		stop bool
	}{{10, false}, {20, false}, {5, true}, {30, false}, {8, true}} {
		if stop, _ := st.Decide(0, fmt.Sprint(i), c.v); stop != c.stop {
			t.Errorf("value %v: stop %v, want %v", c.v, stop, c.stop)
		}
	}
	min := NewStopper(EarlyStop{Method: "asha", Milestones: []int64{100}, Reduction: 2}, false)
	min.Decide(0, "a", 1)
	if stop, _ := min.Decide(0, "b", 5); !stop {
		t.Error("minimising: the larger value was kept")
	}
}

func TestMedian(t *testing.T) {
	st := NewStopper(EarlyStop{Method: "median", Milestones: []int64{100}, MinTrials: 2}, true)
	if stop, _ := st.Decide(0, "a", 1); stop {
		t.Error("stopped without enough trials to compare")
	}
	st.Decide(0, "b", 3)
	if stop, reason := st.Decide(0, "c", 1.5); !stop || reason == "" {
		t.Error("below the median of 1 and 3 went on")
	}
	if stop, _ := st.Decide(0, "d", 2.5); stop {
		t.Error("above the median stopped")
	}
}

func TestAtMilestone(t *testing.T) {
	nan := runstore.Float(0)
	nan = runstore.Float(float64(nan) / float64(nan))
	ms := []runstore.Metrics{{Step: 50, EpReturnMean: nan}, {Step: 90, EpReturnMean: 7}, {Step: 130, EpReturnMean: nan}, {Step: 170, EpReturnMean: 9}}
	if v, ok := AtMilestone(ms, "ep_return_mean", 100); !ok || v != 7 {
		t.Errorf("at 100: %v %v", v, ok)
	}
	if _, ok := AtMilestone(ms, "ep_return_mean", 200); ok {
		t.Error("a milestone not reached has a value")
	}
	if last, best, ok := Summary(ms, "ep_return_mean", false); !ok || last != 9 || best != 7 {
		t.Errorf("summary %v %v %v", last, best, ok)
	}
}

func TestExpandTasks(t *testing.T) {
	for in, want := range map[string]string{"4": "[4]", "[2-5%2]": "[2 3 4 5]", "1,3-4": "[1 3 4]", "0-1%1": "[0 1]"} {
		if got := fmt.Sprint(expandTasks(in)); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// TestDirectionDefaultsToTheMetrics: with no direction, a sweep follows the
// registry's word on its metric (a loss or a time improves downwards); an
// explicit direction wins.
func TestDirectionDefaultsToTheMetrics(t *testing.T) {
	for _, tc := range []struct {
		spec string
		max  bool
	}{
		{`metric = "ep_return_mean"`, true},
		{`metric = "value_loss"`, false},
		{`metric = "time_s"`, false},
		{"metric = \"value_loss\"\ndirection = \"maximize\"", true},
		{"metric = \"ep_return_mean\"\ndirection = \"min\"", false},
	} {
		s := checked(t, "name = \"d\"\n"+tc.spec+"\n[params]\n\"ppo.learning_rate\" = [1e-3, 3e-3]\n")
		if s.Maximize() != tc.max {
			t.Errorf("%q: maximize %v, want %v", tc.spec, s.Maximize(), tc.max)
		}
	}
}
