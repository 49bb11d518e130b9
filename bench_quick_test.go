package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestBenchQuick runs the whole command on tiny runs (each a real `train`
// process of this test binary) and checks that every figure of the table is
// there and plausible.
func TestBenchQuick(t *testing.T) {
	t.Setenv("AGENTTRAINER_RUN_MAIN", "1") // the child processes are this binary running main
	code, out, stderr := runCLI("bench", "--quick", "--runs", "2")
	if code != 0 {
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
	minatar := regexp.MustCompile(`(?m)^  convolutional agent +([\d,]+) \(.*\) +([\d.]+) \(.*\) +(\d+) %$`).FindStringSubmatch(out)
	if !strings.Contains(out, "MinAtar/Breakout-v1 with its preset") || minatar == nil {
		t.Fatalf("no MinAtar row:\n%s", out)
	}
	rows = append(rows, minatar)
	for _, r := range rows {
		if r[1] == "0" || r[2] == "0.0" {
			t.Errorf("scaling row without figures: %q", r[0])
		}
	}
}
