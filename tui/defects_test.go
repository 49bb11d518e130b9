package tui

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

var braille = regexp.MustCompile(`[⠁-⣿]`)

// Defect 8: a wall-clock axis does not round time to whole seconds: a
// straight line over a 0.94 s run stays a line across the chart, and the
// axis is labelled in tenths of a second.
func TestWallClockAxisUnderASecond(t *testing.T) {
	var pts []point
	for i := range 95 {
		x := float64(i) / 100
		pts = append(pts, point{x, x, 1})
	}
	th := defaultTheme(nil)
	got := renderChart(&th, chartSpec{w: 60, h: 12, xmax: timeExtent(0.94), xTime: true, curves: []curve{{pts: pts}}})
	lines := strings.Split(got, "\n")
	cols := 0
	for c := range []rune(lines[0]) {
		for _, l := range lines[:len(lines)-2] {
			if r := []rune(l); c < len(r) && braille.MatchString(string(r[c])) {
				cols++
				break
			}
		}
	}
	if cols < 40 {
		t.Errorf("the line covers %d columns of the chart: binned to whole seconds?\n%s", cols, got)
	}
	if !strings.Contains(got, "0.2s") || !strings.Contains(got, "0.8s") {
		t.Errorf("no sub-second labels:\n%s", got)
	}
}

// Defect 11: a Y label sits on the row its value is drawn on: CartPole's
// plateau at 500 is on the row labelled 500, in a small grid cell as in a
// big chart.
func TestYLabelsOnTheirRows(t *testing.T) {
	var pts []point
	for i := range 100 {
		y := math.Min(float64(i)*10, 500)
		pts = append(pts, point{float64(i * 512), y, 1})
	}
	th := defaultTheme(nil)
	for _, h := range []int{3, 4, 5, 6, 7, 9, 14, 30} {
		got := renderChart(&th, chartSpec{w: 40, h: h, curves: []curve{{pts: pts}}})
		lines := strings.Split(got, "\n")
		row := -1
		for i, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), "500") {
				row = i
			}
		}
		if row < 0 {
			t.Errorf("h=%d: no 500 label:\n%s", h, got)
			continue
		}
		end := []rune(lines[row])
		if !braille.MatchString(string(end[len(end)-3:])) {
			t.Errorf("h=%d: the plateau at 500 is not on the row labelled 500:\n%s", h, got)
		}
	}
}

// Defect 20: a sort arrow keeps a blank before the next heading, and a
// grid cell's title keeps its value and a border dash at any width.
func TestHeadingsAndCellTitles(t *testing.T) {
	t.Chdir(t.TempDir())
	writeTwoRuns(t)
	hs := newHarness(t, 120, 40)
	hs.press("4", "s", "s", "s", "s", "s", "s", "s") // edits, high first
	if v := hs.view(); !strings.Contains(v, "EDITS↓ NAME") {
		t.Errorf("the arrow touches the next heading:\n%s", v)
	}
	for _, w := range []int{20, 26, 40} {
		title := cellTitle("explained_variance", -1.816, w)
		if !strings.HasSuffix(title, " -1.816") {
			t.Errorf("cellTitle at %d: %q", w, title)
		}
		th := defaultTheme(nil)
		top := strings.Split(box(&th, title, "", w, 3), "\n")[0]
		if !strings.HasSuffix(top, "─╮") {
			t.Errorf("the title touches the border at %d: %q", w, top)
		}
	}
}

// Item 5: a cursor reads the exact values of the record at a step; it
// moves with ← and →, and esc hides it.
func TestChartCursor(t *testing.T) {
	hs := newHarness(t, 120, 40)
	training(hs, 120)
	hs.press("right") // appears at the right end: the latest record
	v := hs.view()
	last := fakeMetrics(120)
	if !strings.Contains(v, "│ step 61,440") || !strings.Contains(v, "ep_return_mean "+num(float64(last.EpReturnMean))) {
		t.Fatalf("the cursor does not read the last record:\n%s", v)
	}
	for range 40 {
		hs.press("left")
	}
	v = hs.view()
	m := regexp.MustCompile(`│ step ([0-9,]+)  ep_return_mean (\S+)`).FindStringSubmatch(v)
	if m == nil {
		t.Fatalf("no reading after moving:\n%s", v)
	}
	var step int
	fmt.Sscanf(strings.ReplaceAll(m[1], ",", ""), "%d", &step)
	if step%512 != 0 || step >= 61440 || m[2] != num(float64(fakeMetrics(step/512).EpReturnMean)) {
		t.Errorf("at step %d the cursor reads %s, the record has %s", step, m[2], num(float64(fakeMetrics(step/512).EpReturnMean)))
	}
	hs.press("esc")
	if strings.Contains(hs.view(), "│ step") {
		t.Error("esc does not hide the cursor")
	}
}

// Item 5: one run among those overlaid hides, or comes forward with the
// others faded; the cursor reads each shown run.
func TestOverlayHideAndHighlight(t *testing.T) {
	t.Chdir(t.TempDir())
	writeTwoRuns(t)
	hs := newHarness(t, 120, 40)
	hs.press("4", "space", "space", "c", "v")
	v := hs.view()
	if !strings.Contains(v, "Comparing 2 runs · 1 hidden") || !strings.Contains(v, "(hidden)") {
		t.Fatalf("v does not hide the picked run:\n%s", v)
	}
	hs.press("right")
	if v := hs.view(); regexp.MustCompile(`│ step [0-9,]+  1 `).MatchString(v) || !regexp.MustCompile(`│ step [0-9,]+  2 `).MatchString(v) {
		t.Errorf("the cursor reads a hidden run:\n%s", v)
	}
	hs.press("esc", "v", "]", "f")
	if v := hs.view(); !strings.Contains(v, "(highlighted)") || strings.Contains(v, "hidden") {
		t.Errorf("f does not highlight run 2:\n%s", v)
	}
}

// Item 5: the picker, the editor and the metric picker filter fuzzily,
// best match first.
func TestFuzzyFilters(t *testing.T) {
	if s, ok := fuzzyScore("mntcr", "MountainCar-v0"); !ok || s <= 0 {
		t.Errorf("mntcr does not match MountainCar-v0")
	}
	if _, ok := fuzzyScore("rcm", "CartPole-v1"); ok {
		t.Errorf("letters out of order match")
	}
	hs := newHarness(t, 120, 40)
	hs.press("/", "type:mntcr")
	if c := hs.m.pk().envList.current(); c.id != "MountainCar-v0" {
		t.Errorf("mntcr highlights %q", c.id)
	}
	hs.press("esc", "enter", "enter", "/", "type:lrate")
	if k, _ := hs.m.ed().current(); k.Name != "ppo.learning_rate" {
		t.Errorf("lrate highlights %q", k.Name)
	}
}

// Item 5: the whole log is searchable and scrolls; n moves to the next
// match.
func TestSearchableLog(t *testing.T) {
	hs := newHarness(t, 80, 24)
	training(hs, 10)
	for i := range 60 {
		hs.fake.publish(trainer.Event{Kind: trainer.EventLog, Time: epoch, Message: fmt.Sprintf("line %d", i)})
	}
	hs.fake.publish(trainer.Event{Kind: trainer.EventLog, Time: epoch, Message: "warning: the value loss is NaN"})
	hs.pump()
	hs.press("L")
	if v := hs.view(); !strings.Contains(v, "Log #1 CartPole-v1·mlp") || !strings.Contains(v, "warning: the value loss") {
		t.Fatalf("L does not show the log at its end:\n%s", v)
	}
	hs.press("/", "type:ent_coef", "enter")
	v := hs.view()
	if !strings.Contains(v, "/ent_coef: 1 of 1") || !strings.Contains(v, "ppo.ent_coef = 0.05") {
		t.Fatalf("the search does not find the edit:\n%s", v)
	}
	hs.press("/", "type:line 1", "enter", "n", "n")
	if v := hs.view(); !strings.Contains(v, "/line 1: 3 of") {
		t.Errorf("n does not move between matches:\n%s", v)
	}
	hs.press("esc")
	if strings.Contains(hs.view(), "Log #1") {
		t.Error("esc does not close the log")
	}
}

// Defect 16: at 80 columns the picker shows whole environment names (v0
// and v1 apart); the tab bar keeps its names while a status shows.
func TestPickerNamesAndTabBar(t *testing.T) {
	hs := newHarnessWith(t, 80, 24, func(o *Options, _ *fakeHost) {
		o.Registry = func() ([]EnvChoice, []AgentChoice) {
			es, as := testRegistry()
			es = append(es, EnvChoice{ID: "MinAtar/SpaceInvaders-v0", Action: "discrete(6)", Description: "Shoot the aliens"},
				EnvChoice{ID: "MinAtar/SpaceInvaders-v1", Action: "discrete(6)", Description: "Shoot the aliens"})
			return es, as
		}
	})
	v := hs.view()
	if !strings.Contains(v, "MinAtar/SpaceInvaders-v0") || !strings.Contains(v, "MinAtar/SpaceInvaders-v1") {
		t.Errorf("names cut at 80 columns:\n%s", v)
	}
	training(hs, 10)
	for _, w := range []int{120, 80} {
		hs.w = w
		hs.send(teaSize(w, 24))
		hs.press("1")
		if head := strings.Split(hs.view(), "\n")[0]; !strings.Contains(head, "[1 pick]") || !strings.Contains(head, "2 config") || !strings.Contains(head, "training") {
			t.Errorf("the tab bar at %d with a status: %q", w, head)
		}
	}
}

// Defect 19: narrow runs lists keep runs apart (their start shows), the
// dashboard's run list keeps each run's ETA at 80 columns, and a sweep's
// trials keep their BEST whole.
func TestNarrowLists(t *testing.T) {
	t.Chdir(t.TempDir())
	writeRun(t, "runs", "20240102-030405-CartPole-v1-mlp", nil, 20, 1, nil)
	writeRun(t, "runs", "20240102-040506-CartPole-v1-mlp", nil, 20, 1, nil)
	writeSweep(t, "runs")
	hs := newHarness(t, 60, 20)
	hs.press("4")
	v := hs.view()
	if !strings.Contains(v, "01-02 03:04") || !strings.Contains(v, "01-02 04:05") {
		t.Errorf("at 60 columns the two runs look alike:\n%s", v)
	}
	hs = newHarness(t, 80, 24)
	hs.press("5", "enter")
	if v := hs.view(); !strings.Contains(v, "249.3") || strings.Contains(v, "24…") {
		t.Errorf("a trial's best is cut at 80 columns:\n%s", v)
	}
	hs = newHarnessWith(t, 80, 24, func(_ *Options, f *fakeHost) {
		f.background = []string{"runs/lr-sweep/trial-000"}
		f.live["runs/lr-sweep/trial-000"] = true
	})
	training(hs, 10)
	for _, line := range strings.Split(hs.view(), "\n") {
		if strings.HasPrefix(line, "▸ #") || strings.HasPrefix(line, "  #") {
			if !strings.Contains(line, "ETA") {
				t.Errorf("a run's line without its ETA: %q", line)
			}
			if strings.Contains(line, "(backg") {
				t.Errorf("a cut note: %q", line)
			}
		}
	}
}

// Defect 21: a run without a checkpoint says so in the watch view, with
// esc the only key offered; a terminal below the smallest size names its
// size first.
func TestWatchWithoutCheckpoint(t *testing.T) {
	t.Chdir(t.TempDir())
	writeTwoRuns(t)
	hs := newHarness(t, 120, 40)
	hs.press("4", "w")
	eventually(t, "the refusal", func() bool {
		return strings.Contains(hs.view(), "checkpoint") && !strings.Contains(hs.view(), "loading")
	})
	v := hs.view()
	if !strings.Contains(v, "esc goes back") || strings.Contains(v, "space pause") {
		t.Errorf("the watch of a run without a checkpoint:\n%s", v)
	}
	hs.w, hs.h = 30, 8
	hs.send(teaSize(30, 8))
	if v := hs.view(); !strings.Contains(v, "30×8") {
		t.Errorf("the size is cut at 30×8:\n%s", v)
	}
}

// Defects 28 and 29: counts agree with their nouns; numbers print alike
// (whole ones whole, large ones with separators, a mean and its spread
// to the same decimals).
func TestWordsAndNumbers(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{plural(1, "live edit", "live edits"), "1 live edit"},
		{plural(4, "key", "keys"), "4 keys"},
		{num(500), "500"}, {num(109), "109"}, {num(94), "94"}, {num(33), "33"},
		{num(319166.3), "319,166"}, {num(123.45), "123.5"}, {num(0.5402), "0.5402"},
		{numPM(1.2, 1.166), "1.2 ± 1.2"}, {numPM(487.2, 23.4), "487 ± 23"}, {numPM(0.512, 0.0123), "0.512 ± 0.012"},
		{deviceName("cpu (1 threads)"), "cpu (1 thread)"}, {deviceName("cpu (2 threads)"), "cpu (2 threads)"},
		{spaceName(envs.Space{Kind: envs.Box, Dim: 400, Shape: []int{10, 10, 4}}), "10×10×4 image"},
		{formatValue(map[string]any{"sutton_barto_reward": true}), "{sutton_barto_reward = true}"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	hs := newHarness(t, 120, 40)
	hs.press(editKey("ent_coef", "0.05")...)
	if v := hs.view(); !strings.Contains(v, "1 key changed") {
		t.Errorf("the editor's count:\n%s", v)
	}
	// env.args typed back as shown.
	hs.press("/", "type:env.args", "enter", "enter", "ctrl+u", "type:{sutton_barto_reward = true}", "enter")
	if v := hs.view(); !strings.Contains(v, "{sutton_barto_reward = true}") {
		t.Errorf("env.args not shown as a table:\n%s", v)
	}
	hs.press("enter", "enter") // opened on the value as shown, and applied
	if e := hs.m.ed(); e.errs["env.args"] != "" || e.editing || e.config().Env.Args["sutton_barto_reward"] != true {
		t.Errorf("a table shown in braces is not taken back: %q (editing %v)", e.errs["env.args"], e.editing)
	}
}

// Defect 15: a prompt that opens holding a value (a name, a range, a spec
// path) is replaced by what is typed, not appended to.
func TestPromptsReplaceTheirValue(t *testing.T) {
	t.Chdir(t.TempDir())
	writeTwoRuns(t)
	hs := newHarness(t, 120, 40)
	hs.press("4", "n", "type:wide net", "enter")
	if rb := hs.m.rb(); rb.runs[rb.cursor].Label() != "wide net" {
		t.Errorf("rename gave %q", rb.runs[rb.cursor].Label())
	}
	hs.press("enter", "Z", "type:5k-10k", "enter", "Z", "type:1k-2k", "enter")
	if xr := hs.m.chart.xr; xr == nil || xr.Text != "1k-2k" {
		t.Errorf("a second Z gave %+v", xr)
	}
	// Arrows keep the value for editing.
	hs.press("Z", "left", "type:0", "enter")
	if xr := hs.m.chart.xr; xr == nil || xr.Text != "1k-20k" {
		t.Errorf("editing the range gave %+v", xr)
	}
	hs.press("esc", "esc", "5", "n", "type:a.toml", "enter", "esc", "n", "type:b.toml")
	if got := hs.m.sw().input.Value(); got != "b.toml" {
		t.Errorf("the spec prompt holds %q", got)
	}
}

// Defect 2 again, live: the live editor's title is the run's, the draft's
// stays the draft's.
func TestLiveEditorTitles(t *testing.T) {
	hs := newHarness(t, 120, 40)
	training(hs, 10)
	hs.press("1", "down", "enter", "enter", "3", "e")
	if v := hs.view(); !strings.Contains(v, "Live edit CartPole-v1 · mlp") {
		t.Errorf("live title:\n%s", v)
	}
	hs.press("esc", "2")
	if v := hs.view(); !strings.Contains(v, "Config MountainCar-v0 · mlp") {
		t.Errorf("the draft's title after the live editor:\n%s", v)
	}
	_ = config.Default
}
