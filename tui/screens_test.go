package tui

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// Every screen is behind the Screen interface, and the tab bar names them.
func TestScreensBehindOneInterface(t *testing.T) {
	hs := newHarness(t, 120, 40)
	for i, want := range []string{"1 pick", "2 config", "3 train", "4 runs", "5 sweeps"} {
		if hs.m.screens[hs.m.tabs[i]] == nil || !strings.Contains(hs.view(), want) {
			t.Errorf("tab %d (%s) missing", i+1, want)
		}
	}
}

// 1…N jump to the tab bar's screens (the registry's, in its order), tab
// and shift+tab cycle, also while a run trains; keys typed into a filter
// stay in it.
func TestTabBarNavigation(t *testing.T) {
	hs := newHarness(t, 80, 24)
	tabs := hs.m.tabs
	if len(tabs) < 5 || tabs[0] != scrPicker || tabs[1] != scrEditor || tabs[2] != scrDashboard {
		t.Fatalf("tabs %v", tabs)
	}
	for i, id := range tabs {
		hs.press(strconv.Itoa(i + 1))
		if hs.m.active != id {
			t.Fatalf("after %d: screen %s, want %s", i+1, hs.m.active, id)
		}
	}
	hs.press("1")
	for i := range 2 * len(tabs) { // around twice, both ways
		hs.press("tab")
		if want := tabs[(i+1)%len(tabs)]; hs.m.active != want {
			t.Fatalf("tab %d: screen %s, want %s", i+1, hs.m.active, want)
		}
	}
	for i := range len(tabs) {
		hs.press("shift+tab")
		if want := tabs[(len(tabs)-1-i)%len(tabs)]; hs.m.active != want {
			t.Fatalf("shift+tab %d: screen %s, want %s", i+1, hs.m.active, want)
		}
	}
	training(hs, 20)
	for _, k := range []string{"1", "2", "4", "tab", "3"} {
		hs.press(k)
	}
	if hs.m.active != scrDashboard || hs.m.cur().state != stRunning || len(hs.fake.Calls()) != 0 {
		t.Fatalf("screen %v, state %s, calls %v", hs.m.active, hs.m.cur().state, hs.fake.Calls())
	}
	// The picker's filter takes digits and tab is not a screen key there.
	hs.press("1", "/", "type:12", "tab")
	if hs.m.active != scrPicker || hs.m.pk().focused().filter.Value() != "12" {
		t.Errorf("screen %v, filter %q: typed keys left the filter", hs.m.active, hs.m.pk().focused().filter.Value())
	}
	// So does the editor's value field.
	hs.press("esc", "2", "/", "type:3")
	if hs.m.active != scrEditor || hs.m.ed().filter.Value() != "3" {
		t.Errorf("screen %v, editor filter %q", hs.m.active, hs.m.ed().filter.Value())
	}
}

// Defect 2: the picker's lists are sized from the window once the
// registry arrives after the first size.
func TestPickerSizesListsFromTheWindow(t *testing.T) {
	ids := []string{"Acrobot-v1", "CartPole-v1", "FrozenLake-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Pendulum-v1", "Remote-v0"}
	hs := newHarnessWith(t, 120, 40, func(o *Options, _ *fakeHost) {
		o.Registry = func() ([]EnvChoice, []AgentChoice) {
			var es []EnvChoice
			for _, id := range ids {
				es = append(es, EnvChoice{ID: id, Action: "discrete(2)"})
			}
			_, as := testRegistry()
			return es, as
		}
	})
	v := hs.view()
	for _, id := range ids {
		if !strings.Contains(v, id) {
			t.Errorf("%s not shown at 120×40:\n%s", id, v)
		}
	}
}

// Several runs train at once; ] and [ switch the dashboard, which lists
// them with state, step, speed and ETA; past the cores each new run gets
// trainer.threads=1.
func TestSeveralRuns(t *testing.T) {
	hs := newHarnessWith(t, 120, 40, func(o *Options, _ *fakeHost) { o.Cores = 1 })
	training(hs, 20)
	first := hs.m.runs.focus
	hs.press("n", "down", "s") // a second run, on MountainCar-v0
	if len(hs.m.runs.runs) != 2 || hs.m.runs.focus == first || hs.m.active != scrDashboard {
		t.Fatalf("%d runs, focus %d", len(hs.m.runs.runs), hs.m.runs.focus)
	}
	launched := hs.host.started
	if launched[0].Trainer.Threads == 1 || launched[1].Trainer.Threads != 1 {
		t.Errorf("threads %d then %d, want the second at 1", launched[0].Trainer.Threads, launched[1].Trainer.Threads)
	}
	if logs := hs.m.cur().logs; len(logs) == 0 || !strings.Contains(logs[0], "2 runs on 1 cores") {
		t.Errorf("the second run's log does not say why it has one thread: %q", logs)
	}
	v := hs.view()
	for _, want := range []string{"#1 CartPole-v1·mlp", "▸ #2 MountainCar-v0·mlp", "steps/s", "ETA", "2 training"} {
		if !strings.Contains(v, want) {
			t.Errorf("%q missing:\n%s", want, v)
		}
	}
	hs.press("]")
	if hs.m.runs.focus != first || !strings.Contains(hs.view(), "▸ #1 CartPole-v1·mlp") {
		t.Errorf("] did not switch to the first run")
	}
	hs.press("[")
	if hs.m.runs.focus == first {
		t.Errorf("[ did not switch back")
	}
	hs.press("q")
	if !strings.Contains(hs.view(), "Stop the 2 trainings and quit?") {
		t.Errorf("quitting does not count the trainings:\n%s", hs.view())
	}
}

// Runs found training at start-up are attached to, and the first screen
// says so.
func TestBackgroundRunsAtStartup(t *testing.T) {
	hs, fl := liveHarness(t, 120, 40, func(_ *Options, f *fakeHost) { f.background = []string{newerRun} })
	if len(fl.attached) != 1 || len(hs.m.runs.runs) != 1 || hs.m.active != scrPicker {
		t.Fatalf("attached %v, %d runs, screen %v", fl.attached, len(hs.m.runs.runs), hs.m.active)
	}
	if v := hs.view(); !strings.Contains(v, "1 run training in the background · 3 shows it") {
		t.Errorf("the picker does not mention the background run:\n%s", v)
	}
	hs.press("3")
	if v := hs.view(); !strings.Contains(v, "CartPole-v1") || hs.m.active != scrDashboard {
		t.Errorf("3 does not show the background run:\n%s", v)
	}
}

// Any metric can be charted (c, a filter, enter), a grid shows the usual
// ones, and the X axis, log scale and zoom toggle.
func TestChartControls(t *testing.T) {
	hs := newHarness(t, 120, 40)
	training(hs, 120)
	hs.press("c", "type:entr")
	if v := hs.view(); !strings.Contains(v, "▸ entropy") || strings.Contains(v, "approx_kl") {
		t.Errorf("the metric filter does not narrow to entropy:\n%s", v)
	}
	hs.press("enter")
	if v := hs.view(); !strings.Contains(v, "entropy over env steps") {
		t.Errorf("no entropy chart:\n%s", v)
	}
	hs.press("g")
	v := hs.view()
	for _, want := range []string{"ep_return_mean", "ep_length_mean", "policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "explained_variance", "lr", "sps"} {
		if !strings.Contains(v, "─ "+want[:min(len(want), 12)]) {
			t.Errorf("the grid has no %s chart:\n%s", want, v)
		}
	}
	hs.press("g", "t")
	if v := hs.view(); !strings.Contains(v, "entropy over wall-clock time") || !strings.Contains(v, "0:01") {
		t.Errorf("no wall-clock axis:\n%s", v)
	}
	hs.press("t", "l", "z")
	if v := hs.view(); !strings.Contains(v, "· log · last 50%") {
		t.Errorf("log y and zoom not shown in the title:\n%s", v)
	}
	golden(t, "dashboard-entropy-log-zoom-120x40", hs.screenView())
	hs.press("Z", "type:20k-40k", "enter")
	if v := hs.view(); !strings.Contains(v, "· log · 20k-40k") || !strings.Contains(v, "25k") || strings.Contains(v, " 50k") {
		t.Errorf("a typed range is not the X axis:\n%s", v)
	}
	hs.press("Z", "ctrl+u", "type:nonsense", "enter")
	if v := hs.view(); !strings.Contains(v, `range "nonsense"`) || !strings.Contains(v, "x range:") {
		t.Errorf("a mistaken range is not explained:\n%s", v)
	}
	hs.press("esc", "z") // z after a range shows the whole axis again
	if v := hs.view(); strings.Contains(v, "20k-40k") || strings.Contains(v, "last 50%") {
		t.Errorf("z did not undo the range:\n%s", v)
	}
	hs.press("l", "g")
	golden(t, "dashboard-grid-120x40", hs.screenView())
}

var negZero = regexp.MustCompile(`(^|[^0-9.])-0(\.0+)?([^0-9.]|$)`)

// Defect 8: ticks are round, evenly spaced, and zero is never -0.
func TestTicks(t *testing.T) {
	for _, tt := range []struct{ lo, hi float64 }{{-0.0013, 0.0011}, {-3e-5, 2e-5}, {-1, 1}, {0, 487}, {-200, -83}, {0.1, 0.3}} {
		tk := niceTicks(tt.lo, tt.hi, 4)
		vals := tk.values()
		if tk.lo > tt.lo || tk.hi < tt.hi || len(vals) < 2 || len(vals) > 5 {
			t.Errorf("niceTicks(%g, %g) = %+v %v", tt.lo, tt.hi, tk, vals)
		}
		for _, v := range vals {
			if l := tickLabel(v, tk.step); negZero.MatchString(l) {
				t.Errorf("label %q for %g", l, v)
			}
			if math.Signbit(v) && v == 0 {
				t.Errorf("negative zero tick in %v", vals)
			}
		}
	}
	th := defaultTheme(nil)
	pts := []point{{0, -0.0011, 1}, {500, 0.0009, 1}, {1000, -0.0004, 1}}
	for _, h := range []int{4, 8, 20} {
		got := renderChart(&th, chartSpec{w: 40, h: h, xmax: 1000, curves: []curve{{pts: pts}}})
		if negZero.MatchString(got) {
			t.Errorf("-0 on the axis:\n%s", got)
		}
		if !strings.Contains(got, "0.001") && !strings.Contains(got, "0.002") {
			t.Errorf("no round tick:\n%s", got)
		}
	}
	if got := logLabel(2.5); got != "320" {
		t.Errorf("logLabel(2.5) = %q", got)
	}
	if got := logLabel(-5); got != "1e-5" {
		t.Errorf("logLabel(-5) = %q", got)
	}
}

// Defects 7, 9, 22: figures keep their digits, the header and the
// dashboard agree on the percentage, and no ETA shows while paused.
func TestSmallTexts(t *testing.T) {
	hs := newHarness(t, 120, 40)
	training(hs, 10)
	m := fakeMetrics(11)
	m.PolicyLoss, m.Step = -3.28e-5, 101900 // 99.5% of 102400
	hs.fake.publish(trainer.Event{Kind: trainer.EventMetrics, Time: epoch, Metrics: m})
	hs.pump()
	if v := hs.view(); !strings.Contains(v, "-3.28e-5") {
		t.Errorf("the policy loss is cut:\n%s", v)
	}
	hs.press("p")
	hs.fake.publish(trainer.Event{Kind: trainer.EventState, Time: epoch, State: trainer.StatePaused, Message: "paused"})
	hs.pump()
	if v := hs.view(); strings.Contains(v, "ETA") || !strings.Contains(v, "· paused") {
		t.Errorf("ETA while paused:\n%s", v)
	}
	hs.fake.finish(trainer.StateDone)
	hs.pump()
	if v := hs.view(); !strings.Contains(v, "100% 101.9k/102.4k") {
		t.Errorf("the dashboard does not say 100%%:\n%s", v)
	}
	hs.press("1")
	if v := hs.view(); !strings.Contains(v, "training: done 100%") {
		t.Errorf("the header does not say 100%%:\n%s", v)
	}
}

// Defect 19: at 80×24 the quit question keeps "n: back"; at 60×20 the
// chart's top Y label shows; at 40×12 the chart is drawn.
func TestSmallTerminals(t *testing.T) {
	hs := newHarness(t, 80, 24)
	training(hs, 60)
	hs.press("q")
	if v := hs.view(); !strings.Contains(v, "n: go back") && !strings.Contains(v, "n: back") {
		t.Errorf("the quit question is cut at 80×24:\n%s", v)
	}
	hs.press("n")
	for _, size := range [][2]int{{60, 20}, {40, 12}} {
		hs.w, hs.h = size[0], size[1]
		hs.send(teaSize(size[0], size[1]))
		v := hs.view()
		if !strings.Contains(v, "└") || !regexp.MustCompile(`[⠁-⣿]`).MatchString(v) {
			t.Errorf("no chart at %dx%d:\n%s", size[0], size[1], v)
		}
		lines := strings.Split(v, "\n")
		top := -1
		for i, l := range lines {
			if strings.Contains(l, "╭─ ep_return_mean") {
				top = i
			}
		}
		if top < 0 || !regexp.MustCompile(`│ *[0-9]+│`).MatchString(lines[top+1]) {
			t.Errorf("no Y label on the chart's top row at %dx%d:\n%s", size[0], size[1], v)
		}
	}
}

// Defect 6: columns keep a blank between them and names are cut in the
// middle, keeping the suffix that tells runs apart.
func TestRunsColumns(t *testing.T) {
	if got := cutMiddle("20240102-030405-CartPole-v1-mlp-2", 20); !strings.HasSuffix(got, "mlp-2") || len([]rune(got)) != 20 {
		t.Errorf("cutMiddle = %q", got)
	}
	t.Chdir(t.TempDir())
	writeRun(t, "runs", "20240102-030405-MountainCarContinuous-v0-mlp", func(c *config.Config) { c.Env.ID = "MountainCarContinuous-v0" }, 50, -0.0000062, nil)
	writeRun(t, "runs", "20240102-030405-MountainCarContinuous-v0-mlp-2", func(c *config.Config) { c.Env.ID = "MountainCarContinuous-v0" }, 50, 1, nil)
	for _, w := range []int{80, 120} {
		hs := newHarness(t, w, 24)
		hs.press("4")
		v := hs.view()
		if !strings.Contains(v, "mlp-2") || !strings.Contains(v, "LAST") {
			t.Errorf("at %d columns the suffix or a column is lost:\n%s", w, v)
		}
		if regexp.MustCompile(`e-[0-9]+[0-9-]`).MatchString(v) && regexp.MustCompile(`e-0[0-9]`).MatchString(v) {
			t.Errorf("columns collide at %d:\n%s", w, v)
		}
	}
}

// Defect 22: a long log line wraps in the log pane instead of losing its
// end at the edge (at 80 columns, the pinned checkpoint's line).
func TestLongLogLinesWrap(t *testing.T) {
	hs := newHarness(t, 80, 24)
	training(hs, 10)
	msg := "checkpoint saved at step 35840 as asked: step-35840.safetensors (pinned: the rotation keeps it)"
	hs.fake.publish(trainer.Event{Kind: trainer.EventCheckpoint, Time: epoch, Pinned: true, Message: msg})
	hs.pump()
	if v := hs.view(); !strings.Contains(v, "(pinned: the rotation keeps it)") || !strings.Contains(v, "checkpoint saved at step 35840") {
		t.Errorf("the long line is cut:\n%s", v)
	}
}

func TestWrapAtSpaces(t *testing.T) {
	for _, tc := range []struct {
		in   string
		w    int
		want string
	}{
		{"saved step-80384.safetensors (pinned)", 22, "saved|step-80384.safetensors|(pinned)"},
		{"a b c d", 3, "a b|c d"},
		{"runs/abcdefghij/klmnop", 8, "runs/abc|defghij/|klmnop"},
		{"", 5, ""},
	} {
		if got := strings.Join(wrapAtSpaces(tc.in, tc.w), "|"); got != tc.want {
			t.Errorf("wrapAtSpaces(%q, %d) = %q, want %q", tc.in, tc.w, got, tc.want)
		}
	}
}
