package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/trainer"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want summary
	}{
		{[]float64{3}, summary{3, 3, 3}},
		{[]float64{5, 1, 3}, summary{3, 1, 5}},
		{[]float64{4, 1, 3, 2}, summary{2.5, 1, 4}},
		{[]float64{2.7, 2.6, 2.9, 2.5, 2.8}, summary{2.7, 2.5, 2.9}},
	} {
		if got := summarize(tc.xs); got != tc.want {
			t.Errorf("summarize(%v) = %+v, want %+v", tc.xs, got, tc.want)
		}
	}
}

func TestSolvedAfter(t *testing.T) {
	r := benchRun{metrics: []trainer.Metrics{
		{Step: 512, TimeS: 0.1, EpReturnMean: 20},
		{Step: 1024, TimeS: 0.2, EpReturnMean: 474.9},
		{Step: 1536, TimeS: 0.3, EpReturnMean: 475},
		{Step: 2048, TimeS: 0.4, EpReturnMean: 500},
	}}
	if s, step, ok := r.solvedAfter(); !ok || s != 0.3 || step != 1536 {
		t.Errorf("solvedAfter = %v, %v, %v; want 0.3 s at step 1536", s, step, ok)
	}
	if _, _, ok := (benchRun{metrics: r.metrics[:2]}).solvedAfter(); ok {
		t.Error("a run that never reached 475 counts as solved")
	}
}

func TestBenchBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--runs", "0"}, "--runs must be at least 1, got 0"},
		{[]string{"--runs", "many"}, `invalid value "many" for flag -runs`},
		{[]string{"env.num_envs=8"}, `unexpected argument "env.num_envs=8"`},
		{[]string{"--only", "ppo"}, `--only "ppo": choose rl or lm`},
	} {
		var out, errb bytes.Buffer
		_, err := Parse(tc.args)
		code, stderr := cmdutil.ExitCode(err, &out, &errb), errb.String()
		if code != cmdutil.ExitConfig || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestLMQuick: the language models' section runs each kind of work and
// prints one line each, with a rate and a fraction of the measured peak or
// bandwidth.
func TestLMQuick(t *testing.T) {
	o, err := Parse([]string{"--only", "lm", "--quick", "--runs", "1"})
	if err != nil {
		t.Fatal(err)
	}
	var out, progress bytes.Buffer
	if err := Run(context.Background(), o, &out, &progress); err != nil {
		t.Fatalf("bench: %v\n%s", err, progress.String())
	}
	for _, want := range []string{"train 1×16", "GFLOP/s", "% of peak", "generate 64×(4+2)", "decode 1×(4+2)", "GB/s", "% of bandwidth"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "CartPole") {
		t.Errorf("--only lm ran the PPO tables:\n%s", out.String())
	}
}
