package main

import (
	"regexp"
	"strings"
	"testing"

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

// TestBenchQuick runs the whole command on tiny runs (each a real `train`
// process of this test binary) and checks that every figure of the table is
// there and plausible.
func TestBenchQuick(t *testing.T) {
	t.Setenv("AGENTTRAINER_RUN_MAIN", "1") // the child processes are this binary running main
	code, out, stderr := runCLI("bench", "--quick", "--runs", "2")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{
		"float32 peak", "wall seconds", "env steps/s", "peak RSS (MiB)",
		"seed 1  not reached in 1536 steps", "seed 2  ",
		"4         [64,64]", "64        [64,64]", "256       [64,64]", "64        [256,256]", "256       [256,256]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("bench output lacks %q:\n%s", want, out)
		}
	}
	// Every scaling row carries a steps/s figure, an update rate and a
	// fraction of the peak, all positive.
	row := regexp.MustCompile(`(?m)^  \d+ +\[\d+,\d+\] +([\d,]+) \(.*\) +([\d.]+) \(.*\) +(\d+) %$`)
	rows := row.FindAllStringSubmatch(out, -1)
	if len(rows) != 5 {
		t.Fatalf("%d scaling rows, want 5:\n%s", len(rows), out)
	}
	for _, r := range rows {
		if r[1] == "0" || r[2] == "0.0" {
			t.Errorf("scaling row without figures: %q", r[0])
		}
	}
}

func TestBenchBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--runs", "0"}, "--runs must be at least 1, got 0"},
		{[]string{"bench", "--runs", "many"}, `invalid value "many" for flag -runs`},
		{[]string{"bench", "env.num_envs=8"}, `unexpected argument "env.num_envs=8"`},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != exitConfig || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
