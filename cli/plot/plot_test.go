package plot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// fakeRun writes a run directory with n metrics records of a rising return.
func fakeRun(t *testing.T, dir string, n int) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		y := runstore.Float(200 * (1 - math.Exp(-float64(i)/10)))
		m := runstore.Metrics{Iter: i + 1, Step: int64(i+1) * 512, TimeS: runstore.Float(i) * 0.1,
			EpReturnMean: y, EpReturnMin: y / 2, EpReturnMax: y * 2, PolicyLoss: runstore.Float(-0.01 / float64(i+1))}
		if i == 0 {
			m.EpReturnMean, m.EpReturnMin, m.EpReturnMax = runstore.Float(math.NaN()), runstore.Float(math.NaN()), runstore.Float(math.NaN())
		}
		line, _ := json.Marshal(m)
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, runstore.MetricsFile), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		want  string // "": parses; else a usage error containing it
		check func(Options) bool
	}{
		{[]string{"r"}, "", func(o Options) bool {
			return o.Metric == "ep_return_mean" && o.X == "step" && o.Smooth == 0.6 && o.Format == "png" && o.Width == 960 && o.Height == 600
		}},
		{[]string{"r1", "--metric", "entropy", "r2", "--x", "time", "--smooth", "0", "--out", "a.SVG", "--size", "640x480", "--title", "T"}, "", func(o Options) bool {
			return len(o.Runs) == 2 && o.Metric == "entropy" && o.X == "time" && o.Smooth == 0 && o.Format == "svg" && o.Width == 640 && o.Height == 480 && o.Title == "T"
		}},
		{[]string{}, "at least one run directory", nil},
		{[]string{"r", "--metric", "ep_retrun_mean"}, "did you mean ep_return_mean?", nil},
		{[]string{"r", "--metric", "ep_retrun"}, "did you mean ep_return_mean?", nil},
		{[]string{"r", "--metric", "loss"}, "did you mean policy_loss or value_loss?", nil},
		{[]string{"r", "--x", "iter"}, "--x is step or time", nil},
		{[]string{"r", "--smooth", "1"}, "--smooth is a weight in [0, 1)", nil},
		{[]string{"r", "--out", "a.jpg"}, ".png or an .svg", nil},
		{[]string{"r", "--size", "800"}, "--size is WxH", nil},
		{[]string{"r", "--size", "20x20"}, "--size is WxH", nil},
		{[]string{"r", "--bogus"}, "flag provided but not defined", nil},
	} {
		o, err := Parse(tc.args)
		var usage *cmdutil.UsageError
		switch {
		case tc.want == "" && (err != nil || !tc.check(o)):
			t.Errorf("Parse(%q) = %+v, %v", tc.args, o, err)
		case tc.want != "" && (!errors.As(err, &usage) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Parse(%q): got %v, want a usage error with %q", tc.args, err, tc.want)
		case tc.want != "" && cmdutil.ExitCode(err, &bytes.Buffer{}, &bytes.Buffer{}) != cmdutil.ExitConfig:
			t.Errorf("Parse(%q) does not exit 2", tc.args)
		}
	}
}

func TestRun(t *testing.T) {
	tmp := t.TempDir()
	a := fakeRun(t, filepath.Join(tmp, "seed-1"), 40)
	b := fakeRun(t, filepath.Join(tmp, "seed-2"), 30)
	empty := filepath.Join(tmp, "empty")
	os.Mkdir(empty, 0o755)
	for _, tc := range []struct {
		name    string
		args    []string
		out     string // the file written ("": none)
		wantErr string // "": none; else a config error (exit 2) with it
	}{
		{"default out", []string{a, b}, filepath.Join(a, "ep_return_mean.png"), ""},
		{"svg, time, a loss", []string{a, b, "--metric", "policy_loss", "--x", "time", "--out", filepath.Join(tmp, "loss.svg")}, filepath.Join(tmp, "loss.svg"), ""},
		{"not a run", []string{a, empty}, "", "is not a run directory"},
		{"missing", []string{filepath.Join(tmp, "nope")}, "", "is not a run directory"},
		{"no values", []string{a, "--metric", "val_return_mean"}, "", "no run has values of val_return_mean"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			err = Run(context.Background(), o, &stdout, &stderr)
			if tc.wantErr != "" {
				var cfg *cmdutil.ConfigError
				if !errors.As(err, &cfg) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want a config error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(stdout.String()); got != tc.out {
				t.Errorf("printed %q, want %q", got, tc.out)
			}
			data, err := os.ReadFile(tc.out)
			if err != nil {
				t.Fatal(err)
			}
			switch filepath.Ext(tc.out) {
			case ".png":
				img, err := png.Decode(bytes.NewReader(data))
				if err != nil || img.Bounds().Dx() != 960 || img.Bounds().Dy() != 600 {
					t.Fatalf("not a 960x600 PNG: %v", err)
				}
			case ".svg":
				for _, s := range []string{"<svg", "seed-1", "seed-2", "policy_loss", "wall-clock time (s)"} {
					if !bytes.Contains(data, []byte(s)) {
						t.Errorf("the SVG lacks %q", s)
					}
				}
			}
		})
	}
}
