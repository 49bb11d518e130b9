package tui

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// TestRunsTiming500 reports how long the runs browser takes, with 500
// runs of 200 records on disk, to first paint (the scan and the live
// probe, LiveControl) and to the full list (every summary read), cold and
// from the cache. It checks nothing but that all runs are listed: timings
// on a shared machine vary.
//
//	RUNS_TIMING=1 go test ./tui -run Timing500 -v
func TestRunsTiming500(t *testing.T) {
	if os.Getenv("RUNS_TIMING") == "" {
		t.Skip("writes 500 runs; RUNS_TIMING=1 runs it")
	}
	t.Chdir(t.TempDir())
	for i := range 500 {
		writeRun(t, "runs", fmt.Sprintf("2024%04d-000000-CartPole-v1-mlp", 101+i), nil, 200, 1, nil)
	}
	cache := &runstore.SummaryCache{}
	for _, pass := range []string{"cold", "cached"} {
		start := time.Now()
		listed := listRunsCmd("runs", 1, LiveControl)().(runsListedMsg)
		first := time.Since(start)
		n := 0
		for i := 0; i < len(listed.runs); i += summaryChunk {
			msg := readSummariesCmd(cache, "runs", 1, listed.runs[i:min(i+summaryChunk, len(listed.runs))])().(runsSummarizedMsg)
			n += len(msg.runs)
		}
		full := time.Since(start)
		if len(listed.runs) != 500 || n != 500 {
			t.Fatalf("listed %d, read %d", len(listed.runs), n)
		}
		t.Logf("500 runs, %s: first paint after %v, full list after %v", pass, first.Round(time.Millisecond), full.Round(time.Millisecond))
	}
}
