package tui

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The runs browser charts past runs with the dashboard's keys: any metric
// from the picker, a grid, time on X, log Y, a typed range (a mistake is
// explained and the prompt stays), and p saves the chart on screen as the
// plot command draws it.
func TestRunsBrowserCharts(t *testing.T) {
	tests := []struct {
		name    string
		keys    []string
		visible []string
		absent  []string
		files   []string // pictures written, relative to runs/
	}{
		{name: "a metric from the picker", keys: []string{"c", "type:entro", "enter"},
			visible: []string{"entropy over env steps", "Comparing 2 runs"}},
		{name: "the grid", keys: []string{"g"},
			visible: []string{"policy_loss", "value_loss", "approx_kl", "clipfrac", "explained_variance"}},
		{name: "time and log", keys: []string{"t", "l"},
			visible: []string{"over wall-clock time", "· log"}},
		{name: "a typed range", keys: []string{"Z", "type:20k-40k", "enter"},
			visible: []string{"· 20k-40k", "20k", "40k"}, absent: []string{"x range:"}},
		{name: "a range in percent", keys: []string{"Z", "type:50%-", "enter"},
			visible: []string{"· 50%-"}},
		{name: "a mistaken range stays open", keys: []string{"Z", "type:40k-20k", "enter"},
			visible: []string{"x range:", "the second bound must be larger", "try 100k-300k"}},
		{name: "a time range on the steps axis", keys: []string{"Z", "type:1m-2m", "enter"},
			visible: []string{"the X axis is in env steps now"}},
		{name: "esc leaves the prompt, then the chart", keys: []string{"Z", "type:1", "esc", "esc"},
			visible: []string{"STARTED"}},
		{name: "save as PNG", keys: []string{"p"},
			visible: []string{"saved runs/compare-ep_return_mean.png"}, files: []string{"compare-ep_return_mean.png"}},
		{name: "save the grid", keys: []string{"g", "p"},
			visible: []string{"saved 10 pictures in runs"}, files: []string{"compare-entropy.png", "compare-approx_kl.png"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			writeTwoRuns(t)
			hs := newHarness(t, 120, 40)
			hs.press("4", "space", "space", "c")
			hs.press(tt.keys...)
			v := hs.view()
			for _, s := range tt.visible {
				if !strings.Contains(v, s) {
					t.Errorf("%q not on screen:\n%s", s, v)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(v, s) {
					t.Errorf("%q still on screen:\n%s", s, v)
				}
			}
			for _, f := range tt.files {
				data, err := os.ReadFile(filepath.Join("runs", f))
				if err != nil {
					t.Fatal(err)
				}
				img, err := png.Decode(bytes.NewReader(data))
				if err != nil || img.Bounds().Dx() != 960 {
					t.Errorf("%s: not a 960-pixel-wide PNG (%v)", f, err)
				}
			}
		})
	}
}
