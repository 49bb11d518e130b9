package runstore

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/trainer/config"
)

func newRunDir(t testing.TB, root, name string, iters int) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Join(dir, CheckpointsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteConfig(dir, config.Default()); err != nil {
		t.Fatal(err)
	}
	w, err := OpenJSONL(filepath.Join(dir, MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := 1; i <= iters; i++ {
		ret := Float(math.NaN())
		if i > 2 {
			ret = Float(100 * math.Sin(float64(i)/7))
		}
		w.Write(Metrics{Iter: i, Step: int64(i) * 512, TimeS: Float(float64(i) / 10), SPS: 5120, EpReturnMean: ret,
			EpReturnMin: ret, EpReturnMax: ret, Entropy: 0.6, ApproxKL: 0.01})
	}
	return dir
}

func TestMetaRoundTrip(t *testing.T) {
	dir := newRunDir(t, t.TempDir(), "20240102-030405-CartPole-v1-mlp", 3)
	if m, err := ReadMeta(dir); err != nil || m.Name != "" || len(m.Tags) != 0 {
		t.Fatalf("no meta.json: %+v, %v", m, err)
	}
	m, err := UpdateMeta(dir, func(m *Meta) {
		m.Name = "  wide\nnet "
		m.Tags = []string{"baseline", " sweep ", "baseline"}
		m.Note = "diverged\nafter 200k"
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "wide net" || strings.Join(m.Tags, ",") != "baseline,sweep" || m.Note != "diverged after 200k" {
		t.Errorf("meta = %+v", m)
	}
	info := ReadRunInfo(dir)
	if info.Label() != "wide net" || !info.Meta.HasTag("sweep") || info.Name != "20240102-030405-CartPole-v1-mlp" {
		t.Errorf("run info: %+v", info)
	}
	if _, err := UpdateMeta(dir, func(m *Meta) { m.Tags = append(m.Tags, "two words") }); err == nil {
		t.Error("a tag with a space was accepted")
	}
	if _, err := UpdateMeta(dir, func(m *Meta) { *m = Meta{} }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, MetaFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an empty meta left meta.json behind: %v", err)
	}
	if err := WriteMeta(t.TempDir(), Meta{Note: "x"}); err == nil {
		t.Error("wrote meta.json into a directory that holds no run")
	}
}

func TestDeleteRefusesLiveRuns(t *testing.T) {
	root := t.TempDir()
	dir := newRunDir(t, root, "20240102-030405-CartPole-v1-mlp", 3)
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Delete(dir); !errors.Is(err, ErrInUse) {
		t.Fatalf("deleting a live run: %v, want ErrInUse", err)
	}
	l.Release()
	if err := Delete(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the run is still there: %v", err)
	}
	if err := Delete(root); err == nil {
		t.Error("deleted a directory that is not a run")
	}
}

// TestSummaryMatchesRecords: the byte scan of metrics.jsonl agrees with
// decoding every record, for the trainer's own records and hand-written ones.
func TestSummaryMatchesRecords(t *testing.T) {
	dir := newRunDir(t, t.TempDir(), "r", 50)
	f, _ := os.OpenFile(filepath.Join(dir, MetricsFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{ "iter": 51, "step": 26112, "ep_return_mean": 500 }` + "\n" + `{"iter":52,"step":26624,"time_s":5.2,"ep_return_mean":1`)
	f.Close()
	s, err := summarizeMetrics(filepath.Join(dir, MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := metricsSummary{iters: len(ms), best: Float(math.NaN()), last: Float(math.NaN())}
	for _, m := range ms {
		want.steps = max(want.steps, m.Step)
		if !math.IsNaN(float64(m.TimeS)) && m.TimeS != 0 {
			want.wall = float64(m.TimeS)
		}
		if !math.IsNaN(float64(m.EpReturnMean)) {
			want.last = m.EpReturnMean
			if math.IsNaN(float64(want.best)) || m.EpReturnMean > want.best {
				want.best = m.EpReturnMean
			}
		}
	}
	if s.iters != 51 || s.iters != want.iters || s.steps != want.steps || s.best != want.best || s.last != want.last || s.wall != 5 {
		t.Errorf("summary %+v, records say %+v", s, want)
	}
}

func TestSummaryCache(t *testing.T) {
	dir := newRunDir(t, t.TempDir(), "r", 10)
	var c SummaryCache
	if got := c.Read(dir); got.Iters != 10 {
		t.Fatalf("iters %d", got.Iters)
	}
	// The metrics grow: the summary is read again.
	w, _ := OpenJSONL(filepath.Join(dir, MetricsFile))
	w.Write(Metrics{Iter: 11, Step: 11 * 512})
	w.Close()
	if got := c.Read(dir); got.Iters != 11 {
		t.Errorf("after a new record: iters %d, want 11", got.Iters)
	}
	if _, err := UpdateMeta(dir, func(m *Meta) { m.Note = "hi" }); err != nil {
		t.Fatal(err)
	}
	if got := c.Read(dir); got.Meta.Note != "hi" {
		t.Errorf("the note is not read again: %+v", got.Meta)
	}
}

// writeManyRuns writes n small runs (200 records each) under root.
func writeManyRuns(t testing.TB, root string, n int) {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.Local)
	for i := range n {
		newRunDir(t, root, fmt.Sprintf("%s-CartPole-v1-mlp", base.Add(time.Duration(i)*time.Minute).Format("20060102-150405")), 200)
	}
}

// BenchmarkList500 measures reading 500 runs: Scan is what the browser
// needs to show the list, ReadRunInfo of every run the full list, and the
// cache a list read again.
//
//	go test ./trainer/runstore -run '^$' -bench List500 -benchtime 5x
func BenchmarkList500(b *testing.B) {
	root := b.TempDir()
	writeManyRuns(b, root, 500)
	b.Run("scan", func(b *testing.B) {
		for range b.N {
			if runs, _ := Scan(root); len(runs) != 500 {
				b.Fatal(len(runs))
			}
		}
	})
	b.Run("full", func(b *testing.B) {
		for range b.N {
			if runs, _ := ListRuns(root); len(runs) != 500 {
				b.Fatal(len(runs))
			}
		}
	})
	b.Run("decode-every-record", func(b *testing.B) { // what ReadRunInfo did before
		for range b.N {
			runs, _ := Scan(root)
			for _, r := range runs {
				ReadConfig(r.Dir)
				ReadMetrics(r.Dir)
				ReadEdits(r.Dir)
			}
		}
	})
	var c SummaryCache
	runs, _ := Scan(root)
	for _, r := range runs {
		c.Read(r.Dir)
	}
	b.Run("cached", func(b *testing.B) {
		for range b.N {
			runs, _ := Scan(root)
			for _, r := range runs {
				c.Read(r.Dir)
			}
		}
	})
}

// Concurrent changes of one meta.json keep every change (F24): each holds
// the run directory's meta lock from its read to its write.
func TestUpdateMetaConcurrently(t *testing.T) {
	dir := t.TempDir()
	if err := WriteConfig(dir, config.Default()); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, ".meta.json.tmp123"), []byte("left by a kill"), 0o644)
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := UpdateMeta(dir, func(m *Meta) { m.Tags = append(m.Tags, fmt.Sprintf("t%d", i)) }); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	m, err := ReadMeta(dir)
	if err != nil || len(m.Tags) != 40 {
		t.Fatalf("%d tags of 40 kept: %v", len(m.Tags), err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".meta.json.tmp123")); err == nil {
		t.Error("the stale temporary file is still there")
	}
}
