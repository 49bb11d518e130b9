package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/cli/progress"
	"github.com/agenttrainer/agenttrainer/runs/sweep"
	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// TestAMetricReachesEverySink declares a metric in one place (the
// registry) and finds it, with a figure an environment reported without
// declaring it, in every sink: metrics.jsonl, TensorBoard, the CSV export,
// the progress line, a sweep's spec check and summary, and plot. The app
// reads the same registry (runstore.MetricList, LookupMetric, Value).
func TestAMetricReachesEverySink(t *testing.T) {
	defer runstore.DeclareMetric(runstore.Metric{Name: "sink_test_mean", Label: "sink test mean", Tag: "charts/sink_test_mean",
		Grid: true, Figure: true, Progress: 6, Better: runstore.Higher})()

	dir := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	jsonl, err := runstore.OpenJSONL(filepath.Join(dir, runstore.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	tb, err := runstore.OpenTensorBoard(dir, time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	var records []runstore.Metrics
	for i := 1; i <= 3; i++ {
		m := trainer.Metrics{Iter: i, Step: int64(512 * i), EpReturnMean: trainer.Float(10 * i)}
		m.Set("sink_test_mean", 0.25*float64(i))
		m.Set("env/score", float64(100+i))
		if err := jsonl.Write(&m); err != nil {
			t.Fatal(err)
		}
		if err := tb.Write(&m, time.Unix(int64(i), 0)); err != nil {
			t.Fatal(err)
		}
		records = append(records, m)
	}
	jsonl.Close()
	tb.Close()

	// metrics.jsonl, read back.
	back, err := runstore.ReadMetrics(dir)
	if err != nil || len(back) != 3 {
		t.Fatalf("read %d records: %v", len(back), err)
	}
	if v, _ := back[2].Value("sink_test_mean"); v != 0.75 {
		t.Errorf("metrics.jsonl: sink_test_mean read back as %v", v)
	}
	if v, _ := back[2].Value("env/score"); v != 103 {
		t.Errorf("metrics.jsonl: env/score read back as %v", v)
	}

	// TensorBoard: the tags are in the event file.
	events, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*"))
	data, err := os.ReadFile(events[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"charts/sink_test_mean", "env/score"} {
		if !strings.Contains(string(data), tag) {
			t.Errorf("TensorBoard: no %s", tag)
		}
	}

	// The CSV export.
	code, out, stderr := runCLI(context.Background(), "export", dir)
	if code != 0 {
		t.Fatalf("export: %d %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	header, last := strings.Split(lines[0], ","), strings.Split(lines[3], ",")
	for name, want := range map[string]string{"sink_test_mean": "0.75", "env/score": "103"} {
		found := false
		for i, h := range header {
			if h == name {
				found = true
				if last[i] != want {
					t.Errorf("CSV: %s = %q, want %s", name, last[i], want)
				}
			}
		}
		if !found {
			t.Errorf("CSV: no %s column in %v", name, header)
		}
	}

	// The progress line.
	line := progress.Line(records[2], 10000)
	if !strings.Contains(line, "sink_test_mean   0.75") || !strings.Contains(line, "env/score 103") {
		t.Errorf("progress line %q", line)
	}

	// A sweep may optimise either, and reads them.
	for _, metric := range []string{"sink_test_mean", "env/score"} {
		spec, err := sweep.ParseSpecTOML("name = \"s\"\nmetric = \""+metric+"\"\n[params]\n\"ppo.learning_rate\" = {values = [1e-3, 3e-4]}\n", "sweep.toml")
		if err != nil {
			t.Fatal(err)
		}
		if err := spec.Check(config.Default(), "sweep.toml", 2); err != nil {
			t.Errorf("sweep on %s: %v", metric, err)
		}
		if last, best, ok := sweep.Summary(back, metric, true); !ok || last != best {
			t.Errorf("sweep summary of %s: %v %v %v", metric, last, best, ok)
		}
	}

	// plot draws either.
	for _, metric := range []string{"sink_test_mean", "env/score"} {
		pic := filepath.Join(t.TempDir(), "p.svg")
		if code, _, stderr := runCLI(context.Background(), "plot", dir, "--metric", metric, "--out", pic); code != 0 {
			t.Errorf("plot %s: %d %s", metric, code, stderr)
		} else if svg, _ := os.ReadFile(pic); !strings.Contains(string(svg), metric) {
			t.Errorf("plot %s: the picture does not name it", metric)
		}
	}

	// The app's view of the registry.
	if m, ok := runstore.LookupMetric("sink_test_mean"); !ok || !m.Grid || m.Label != "sink test mean" {
		t.Errorf("LookupMetric(sink_test_mean) = %+v", m)
	}
	if b, _ := json.Marshal(records[0]); !strings.Contains(string(b), `"sink_test_mean":0.25`) {
		t.Errorf("record %s", b)
	}
}
