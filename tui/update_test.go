package tui

import (
	"cmp"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

func TestPickerKeys(t *testing.T) {
	tests := []struct {
		name        string
		keys        []string
		screen      screenID
		env, agent  string
		launched    int
		filterShown int // -1: do not check
	}{
		{name: "enter twice keeps the defaults", keys: []string{"enter", "enter"},
			screen: scrEditor, env: "CartPole-v1", agent: "mlp", filterShown: -1},
		{name: "move and choose", keys: []string{"up", "enter", "down", "enter"},
			screen: scrEditor, env: "Acrobot-v1", agent: "random", filterShown: -1},
		{name: "vim keys", keys: []string{"j", "j", "enter", "j", "k", "enter"},
			screen: scrEditor, env: "Pendulum-v1", agent: "mlp", filterShown: -1},
		{name: "filter then choose", keys: []string{"/", "type:pend", "enter", "enter", "enter"},
			screen: scrEditor, env: "Pendulum-v1", agent: "mlp", filterShown: 1},
		{name: "filter matches descriptions", keys: []string{"/", "type:hill"},
			screen: scrPicker, env: "CartPole-v1", agent: "mlp", filterShown: 1},
		{name: "filter types letters that are keys elsewhere", keys: []string{"/", "type:qRs?"},
			screen: scrPicker, env: "CartPole-v1", agent: "mlp", filterShown: 0},
		{name: "esc clears the filter", keys: []string{"/", "type:pend", "esc"},
			screen: scrPicker, env: "CartPole-v1", agent: "mlp", filterShown: 4},
		{name: "nothing matches: enter chooses nothing", keys: []string{"/", "type:zzz", "enter", "enter"},
			screen: scrPicker, env: "CartPole-v1", agent: "mlp", filterShown: 0},
		{name: "right to agents", keys: []string{"right", "down", "enter"},
			screen: scrEditor, env: "CartPole-v1", agent: "random", filterShown: -1},
		{name: "s starts right away", keys: []string{"down", "s"},
			screen: scrDashboard, env: "MountainCar-v0", agent: "mlp", launched: 1, filterShown: -1},
		{name: "keys at the ends do not wrap", keys: []string{"up", "up", "up", "home", "enter", "end", "end", "enter"},
			screen: scrEditor, env: "Acrobot-v1", agent: "random", filterShown: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := newHarness(t, 80, 24)
			hs.press(tt.keys...)
			m := hs.m
			if m.active != tt.screen {
				t.Errorf("screen = %v, want %v", m.active, tt.screen)
			}
			if m.draft().cfg.Env.ID != tt.env || m.draft().cfg.Agent.Name != tt.agent {
				if tt.screen != scrPicker {
					t.Errorf("chose %s/%s, want %s/%s", m.draft().cfg.Env.ID, m.draft().cfg.Agent.Name, tt.env, tt.agent)
				}
			}
			if tt.screen == scrEditor && (m.ed().config().Env.ID != tt.env || m.ed().config().Agent.Name != tt.agent) {
				t.Errorf("editor holds %s/%s", m.ed().config().Env.ID, m.ed().config().Agent.Name)
			}
			if hs.launchs != tt.launched {
				t.Errorf("launched %d runs, want %d", hs.launchs, tt.launched)
			}
			if tt.filterShown >= 0 && len(m.pk().envList.shown) != tt.filterShown {
				t.Errorf("filter shows %d environments, want %d", len(m.pk().envList.shown), tt.filterShown)
			}
			if hs.quit {
				t.Error("the app quit")
			}
			hs.view()
		})
	}
}

// editKey is the key sequence that opens the editor and edits one key.
func editKey(k, value string) []string {
	return []string{"enter", "enter", "/", "type:" + k, "enter", "enter", "ctrl+u", "type:" + value, "enter"}
}

func TestEditorKeys(t *testing.T) {
	tests := []struct {
		name     string
		keys     []string
		check    func(config.Config) bool
		err      string // the inline error of the selected key
		problem  string // the Validate problem shown
		editing  bool
		screen   screenID
		launched int
	}{
		{name: "edit a float", keys: editKey("ent_coef", "0.05"),
			check: func(c config.Config) bool { return c.PPO.EntCoef == 0.05 }, screen: scrEditor},
		{name: "edit a list", keys: editKey("hidden", "[128, 128]"),
			check: func(c config.Config) bool { return slices.Equal(c.Agent.Params.Ints("hidden"), []int{128, 128}) }, screen: scrEditor},
		{name: "bare string", keys: editKey("activation", "relu"),
			check: func(c config.Config) bool { return c.Agent.Params.String("activation") == "relu" }, screen: scrEditor},
		{name: "wrong type keeps the field open with the CLI's message", keys: editKey("ent_coef", "lots"),
			check: func(c config.Config) bool { return c.PPO.EntCoef == 0.01 },
			err:   `ppo.ent_coef: expects a number, got "lots" (a string)`, editing: true, screen: scrEditor},
		{name: "constraint", keys: editKey("ent_coef", "-1"),
			check: func(c config.Config) bool { return c.PPO.EntCoef == 0.01 },
			err:   "ppo.ent_coef: must be 0 or more, got -1", editing: true, screen: scrEditor},
		{name: "broken TOML", keys: editKey("hidden", "[64,"),
			err: "agent.hidden: cannot read [64, as a TOML value", editing: true, screen: scrEditor},
		{name: "esc cancels an edit", keys: append(editKey("ent_coef", "lots"), "esc"),
			check: func(c config.Config) bool { return c.PPO.EntCoef == 0.01 }, screen: scrEditor},
		{name: "fixing the value clears the error", keys: append(editKey("ent_coef", "lots"), "ctrl+u", "type:0.02", "enter"),
			check: func(c config.Config) bool { return c.PPO.EntCoef == 0.02 }, screen: scrEditor},
		{name: "reset to default", keys: append(editKey("ent_coef", "0.3"), "d"),
			check: func(c config.Config) bool { return c.PPO.EntCoef == 0.01 }, screen: scrEditor},
		{name: "a whole-config problem is shown and blocks start", keys: append(editKey("minibatches", "3"), "s"),
			check:   func(c config.Config) bool { return c.PPO.NumMinibatches == 3 },
			problem: "3 does not divide the batch of 512", screen: scrEditor},
		{name: "start with the edits", keys: append(editKey("total_timesteps", "20000"), "s"),
			check: func(c config.Config) bool { return c.PPO.TotalTimesteps == 20000 }, screen: scrDashboard, launched: 1},
		{name: "an unknown environment is refused on entry", keys: editKey("env.id", "CartPol-v1"),
			err: `unknown environment "CartPol-v1"; did you mean CartPole-v1?`, editing: true, screen: scrEditor},
		{name: "esc goes back to the picker and keeps the edits", keys: append(editKey("ent_coef", "0.05"), "esc", "esc"),
			check: func(c config.Config) bool { return c.PPO.EntCoef == 0.05 }, screen: scrPicker},
		{name: "typed q and R do not leave the field", keys: editKey("trainer.name", "qR?"),
			check: func(c config.Config) bool { return c.Trainer.Name == "qR" }, err: "may use only letters", editing: true, screen: scrEditor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := newHarness(t, 100, 30)
			hs.press(tt.keys...)
			m := hs.m
			cfg := *m.ed().config()
			if tt.screen == scrPicker {
				cfg = m.draft().cfg
			}
			if tt.launched > 0 {
				cfg = hs.fake.Config()
			}
			if m.active != tt.screen {
				t.Fatalf("screen = %v, want %v (note %q)", m.active, tt.screen, m.ed().note)
			}
			if tt.check != nil && !tt.check(cfg) && !(tt.editing && tt.err != "") {
				t.Errorf("config not as expected:\n%s", cfg.TOML())
			}
			k, _ := m.ed().current()
			if got := m.ed().errs[k.Name]; !strings.Contains(got, tt.err) || (tt.err == "") != (got == "") {
				t.Errorf("inline error = %q, want %q", got, tt.err)
			}
			if got := m.ed().problems[k.Name]; !strings.Contains(got, tt.problem) || (tt.problem == "") != (got == "") {
				t.Errorf("problem = %q, want %q", got, tt.problem)
			}
			if m.ed().editing != tt.editing {
				t.Errorf("editing = %v, want %v", m.ed().editing, tt.editing)
			}
			if hs.launchs != tt.launched {
				t.Errorf("launched %d runs, want %d", hs.launchs, tt.launched)
			}
			if tt.err != "" && m.active == scrEditor && !strings.Contains(stripWrap(hs.view()), tt.err) {
				t.Errorf("the error is not on screen:\n%s", hs.view())
			}
		})
	}
}

// stripWrap joins a view's lines so that wrapped messages can be found.
func stripWrap(v string) string {
	var b strings.Builder
	for _, l := range strings.Split(v, "\n") {
		b.WriteString(strings.TrimRight(l, " ") + " ")
	}
	return b.String()
}

func TestLiveEditor(t *testing.T) {
	tests := []struct {
		name  string
		keys  []string
		calls []string
		err   string
		check func(config.Config) bool
	}{
		{name: "edit a live key", keys: []string{"e", "/", "type:ent_coef", "enter", "enter", "ctrl+u", "type:0.05", "enter"},
			calls: []string{"edit ppo.ent_coef=0.05"}, check: func(c config.Config) bool { return c.PPO.EntCoef == 0.05 }},
		{name: "a restart-only key is locked", keys: []string{"e", "/", "type:num_envs", "enter", "enter", "d"},
			err: "env.num_envs: applies only when a run starts"},
		{name: "the trainer refuses a bad value", keys: []string{"e", "/", "type:gamma", "enter", "enter", "ctrl+u", "type:2", "enter"},
			calls: []string{"edit ppo.gamma=2"}, err: "ppo.gamma: must be between 0 and 1, got 2"},
		{name: "reset sends the default", keys: []string{"e", "/", "type:total_timesteps", "enter", "d"},
			calls: []string{"edit ppo.total_timesteps=500000"}, check: func(c config.Config) bool { return c.PPO.TotalTimesteps == 500000 }},
		{name: "start is not offered while training", keys: []string{"e", "s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := newHarness(t, 120, 40)
			training(hs, 10)
			hs.press(tt.keys...)
			m := hs.m
			if m.active != scrEditor || m.ed().live == nil {
				t.Fatalf("not in the live editor (screen %v)", m.active)
			}
			if got := hs.fake.Calls(); !slices.Equal(got, tt.calls) {
				t.Errorf("trainer calls = %q, want %q", got, tt.calls)
			}
			k, _ := m.ed().current()
			if got := m.ed().errs[k.Name]; !strings.Contains(got, tt.err) || (tt.err == "") != (got == "") {
				t.Errorf("inline error = %q, want %q", got, tt.err)
			}
			if tt.check != nil && !tt.check(*m.ed().config()) {
				t.Errorf("the editor does not show the run's new config")
			}
			if hs.launchs != 1 {
				t.Errorf("launched %d runs", hs.launchs)
			}
			hs.press("esc", "esc", "esc") // the field, the filter, the editor
			if m.active != scrDashboard {
				t.Errorf("esc went to screen %v, want the dashboard", m.active)
			}
		})
	}
}

func TestDashboardKeys(t *testing.T) {
	paused := trainer.Event{Kind: trainer.EventState, Time: epoch, State: trainer.StatePaused, Message: "paused at step 5120"}
	resumed := trainer.Event{Kind: trainer.EventState, Time: epoch, State: trainer.StateRunning, Message: "resumed"}
	saved := trainer.Event{Kind: trainer.EventCheckpoint, Time: epoch, Checkpoint: "run/checkpoints/step-5120.safetensors", Message: "checkpoint saved: step-5120.safetensors"}
	pinned := trainer.Event{Kind: trainer.EventCheckpoint, Time: epoch, Checkpoint: "run/checkpoints/step-5632.safetensors", Pinned: true,
		Message: "checkpoint saved at step 5632 as asked: step-5632.safetensors (pinned: the rotation keeps it)"}
	tests := []struct {
		name   string
		keys   []string
		events []trainer.Event // published after the keys
		calls  []string
		state  runState
		quit   bool
		screen screenID
		check  func(*testing.T, *Model)
	}{
		{name: "pause waits for the trainer", keys: []string{"p"}, calls: []string{"pause"}, state: stPausing},
		{name: "paused", keys: []string{"p"}, events: []trainer.Event{paused}, calls: []string{"pause"}, state: stPaused},
		{name: "a checkpoint while paused keeps it paused", keys: []string{"p", "s"}, events: []trainer.Event{paused, saved},
			calls: []string{"pause", "save"}, state: stPaused},
		{name: "resume", keys: []string{"p"}, events: []trainer.Event{paused, resumed}, calls: []string{"pause"}, state: stRunning},
		{name: "save a checkpoint", keys: []string{"s"}, calls: []string{"save"}, state: stRunning},
		{name: "q asks first", keys: []string{"q"}, state: stRunning, check: func(t *testing.T, m *Model) {
			if m.confirm != confirmQuit {
				t.Error("no confirmation asked")
			}
		}},
		{name: "n cancels quitting", keys: []string{"q", "n"}, state: stRunning},
		{name: "esc cancels quitting", keys: []string{"q", "esc"}, state: stRunning},
		{name: "y stops, then waits for the end", keys: []string{"q", "y"}, calls: []string{"stop"}, state: stStopping},
		{name: "ctrl+c asks too", keys: []string{"ctrl+c"}, state: stRunning, check: func(t *testing.T, m *Model) {
			if m.confirm != confirmQuit {
				t.Error("no confirmation asked")
			}
		}},
		{name: "ctrl+c while stopping quits at once", keys: []string{"q", "y", "ctrl+c"}, calls: []string{"stop"}, state: stStopping, quit: true},
		{name: "smoothing steps and band toggles", keys: []string{"m", "m", "M", "b"}, state: stRunning, check: func(t *testing.T, m *Model) {
			if w := m.db().opts.weight(); w != 0.8 || m.db().opts.band {
				t.Errorf("smoothing %v, band %v: want 0.8 and off", w, m.db().opts.band)
			}
			if v := m.View(); !strings.Contains(v, "smoothing 0.8") {
				t.Errorf("the title does not give the smoothing:\n%s", v)
			}
		}},
		{name: "runs browser and back", keys: []string{"4", "esc"}, state: stRunning},
		{name: "n opens the picker while training", keys: []string{"n"}, state: stRunning, check: func(t *testing.T, m *Model) {
			if m.active != scrPicker {
				t.Errorf("screen = %v, want the picker", m.active)
			}
		}},
		{name: "x asks, then stops without quitting", keys: []string{"x", "y"}, calls: []string{"stop"}, state: stStopping},
		{name: "x then n keeps training", keys: []string{"x", "n"}, state: stRunning},
		{name: "a live edit of total_timesteps moves the goal", events: []trainer.Event{{Kind: trainer.EventEdit, Time: epoch,
			Edit: trainer.Edit{Step: 5120, Key: "ppo.total_timesteps", Value: "200000", Old: "102400"}, Message: "edit"}},
			state: stRunning, check: func(t *testing.T, m *Model) {
				if m.cur().total != 200000 || len(m.cur().edits) != 2 {
					t.Errorf("total = %d, edits = %d", m.cur().total, len(m.cur().edits))
				}
			}},
		{name: "log scrolls", keys: []string{"pgup", "pgdown", "ctrl+u"}, state: stRunning},
		{name: "a streak of checkpoints takes one log line", events: []trainer.Event{saved, saved, saved},
			state: stRunning, check: func(t *testing.T, m *Model) {
				if n := len(m.cur().logs); n != 4 || !strings.HasSuffix(m.cur().logs[n-1], "checkpoint saved: step-5120.safetensors") {
					t.Errorf("log = %q", m.cur().logs)
				}
			}},
		{name: "a checkpoint asked for keeps its own line", events: []trainer.Event{saved, pinned, saved},
			state: stRunning, check: func(t *testing.T, m *Model) {
				logs := m.cur().logs
				if n := len(logs); n != 6 || !strings.Contains(logs[n-2], "pinned") || !strings.Contains(logs[n-3], "step-5120") {
					t.Errorf("log = %q", logs)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := newHarness(t, 120, 40)
			training(hs, 10)
			hs.press(tt.keys...)
			hs.fake.publish(tt.events...)
			if !hs.quit {
				hs.pump()
			}
			m := hs.m
			if got := hs.fake.Calls(); !slices.Equal(got, tt.calls) {
				t.Errorf("trainer calls = %q, want %q", got, tt.calls)
			}
			if m.cur().state != tt.state {
				t.Errorf("state = %q, want %q", m.cur().state, tt.state)
			}
			if hs.quit != tt.quit {
				t.Errorf("quit = %v, want %v", hs.quit, tt.quit)
			}
			if want := cmp.Or(tt.screen, scrDashboard); m.active != want && tt.name != "n opens the picker while training" {
				t.Errorf("screen = %v, want %v", m.active, want)
			}
			if tt.check != nil {
				tt.check(t, m)
			}
			hs.view()
		})
	}
}

func TestStopThenQuit(t *testing.T) {
	hs := newHarness(t, 80, 24)
	training(hs, 20)
	hs.press("q", "y")
	if hs.quit {
		t.Fatal("quit before the trainer finished")
	}
	if !strings.Contains(hs.view(), "Stopping") {
		t.Errorf("no stopping notice:\n%s", hs.view())
	}
	hs.fake.publish(metricsEvents(21, 22)...)
	hs.fake.finish(trainer.StateStopped)
	hs.pump()
	if !hs.quit {
		t.Fatal("did not quit after the run ended")
	}
	r := hs.m.Result()
	if r.State != "stopped" || r.Steps != 22*512 || r.RunDir == "" {
		t.Errorf("result = %+v", r)
	}
}

func TestFinishedRun(t *testing.T) {
	hs := newHarness(t, 80, 24)
	training(hs, 20)
	hs.fake.finish(trainer.StateDone)
	hs.pump()
	if hs.poll != nil {
		t.Error("still polling after the stream closed")
	}
	hs.press("p", "s", "e") // nothing to control any more
	if got := hs.fake.Calls(); len(got) != 0 {
		t.Errorf("calls after the end: %q", got)
	}
	hs.press("n")
	if hs.m.active != scrPicker {
		t.Fatalf("n went to screen %v, want the picker", hs.m.active)
	}
	hs.press("s") // a second run
	if hs.launchs != 2 || hs.m.active != scrDashboard || hs.m.cur().have {
		t.Errorf("second run: launched %d, screen %v, stale metrics %v", hs.launchs, hs.m.active, hs.m.cur().have)
	}
	hs.press("q")
	if hs.m.confirm != confirmQuit {
		t.Error("the second run is not confirmed before quitting")
	}
}

func TestStaleEventsIgnored(t *testing.T) {
	hs := newHarness(t, 80, 24)
	training(hs, 5)
	hs.m.Update(eventsMsg{run: hs.m.runs.focus + 99, events: metricsEvents(50, 60), closed: true})
	if hs.m.cur().last.Iter != 5 || hs.m.cur().state.ended() {
		t.Errorf("another run's events changed the dashboard: iter %d, state %s", hs.m.cur().last.Iter, hs.m.cur().state)
	}
}

func TestInterrupt(t *testing.T) {
	hs := newHarness(t, 80, 24)
	hs.send(Interrupt())
	if !hs.quit {
		t.Error("an interrupt with no run did not quit")
	}
	hs = newHarness(t, 80, 24)
	training(hs, 5)
	hs.send(Interrupt())
	if hs.quit || !slices.Equal(hs.fake.Calls(), []string{"stop"}) {
		t.Errorf("an interrupt while training: quit %v, calls %q", hs.quit, hs.fake.Calls())
	}
}

// TestHangup: a closed terminal (SIGHUP) quits the app, leaving every
// training running: the app was once left drawing to a deleted terminal,
// its Hangup forwarded to a screen that dropped it.
func TestHangup(t *testing.T) {
	hs := newHarness(t, 80, 24)
	hs.send(Hangup())
	if !hs.quit {
		t.Error("a hang-up with no run did not quit")
	}
	hs = newHarness(t, 80, 24)
	training(hs, 5)
	hs.send(Hangup())
	if !hs.quit || slices.Contains(hs.fake.Calls(), "stop") {
		t.Errorf("a hang-up while training: quit %v, calls %q (want quit, nothing stopped)", hs.quit, hs.fake.Calls())
	}
}

func TestRunsBrowserKeys(t *testing.T) {
	tests := []struct {
		name    string
		keys    []string
		mode    runsMode
		marked  int
		loaded  int
		diffs   []string
		screen  screenID
		visible []string
	}{
		{name: "list", keys: []string{"4"}, screen: scrRuns, visible: []string{"2024-01-03 10:15", "2024-01-02 03:04"}},
		{name: "open one", keys: []string{"4", "enter"}, mode: runsOne, loaded: 1, screen: scrRuns,
			visible: []string{"20240103-101500-CartPole-v1-mlp", "1 live edit"}},
		{name: "mark two and compare", keys: []string{"4", "space", "space", "c"}, mode: runsCompare, marked: 2, loaded: 2,
			diffs: []string{"ppo.total_timesteps", "ppo.ent_coef"}, screen: scrRuns, visible: []string{"Comparing 2 runs", "ppo.ent_coef"}},
		{name: "unmark", keys: []string{"4", "space", "up", "space"}, marked: 0, screen: scrRuns},
		{name: "runs marked under different filters compare", keys: []string{"4", "/", "type:0103", "enter", "space", "esc", "/", "type:0102", "enter", "space", "c"},
			mode: runsCompare, marked: 2, loaded: 2, screen: scrRuns},
		{name: "compare with one mark opens it", keys: []string{"4", "space", "c"}, mode: runsOne, marked: 1, loaded: 1, screen: scrRuns},
		{name: "esc back to the list, then out", keys: []string{"4", "enter", "esc", "esc"}, screen: scrPicker},
		{name: "refresh keeps marks", keys: []string{"4", "space", "r"}, marked: 1, screen: scrRuns},
		{name: "keys past the ends", keys: []string{"4", "down", "down", "down", "pgdown", "G", "g", "pgup", "up"}, screen: scrRuns},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			writeTwoRuns(t)
			hs := newHarness(t, 120, 40)
			hs.press(tt.keys...)
			r := hs.m.rb()
			if hs.m.active != tt.screen {
				t.Fatalf("screen = %v, want %v", hs.m.active, tt.screen)
			}
			if tt.screen != scrRuns {
				return
			}
			if r.mode != tt.mode || len(r.marked) != tt.marked || len(r.loaded) != tt.loaded {
				t.Errorf("mode %d, marked %d, loaded %d; want %d, %d, %d", r.mode, len(r.marked), len(r.loaded), tt.mode, tt.marked, tt.loaded)
			}
			if tt.diffs != nil {
				var keys []string
				for _, d := range configDiff(r.loaded) {
					keys = append(keys, d.key)
				}
				if !slices.Equal(keys, tt.diffs) {
					t.Errorf("config diff keys = %q, want %q", keys, tt.diffs)
				}
			}
			v := hs.view()
			for _, s := range tt.visible {
				if !strings.Contains(v, s) {
					t.Errorf("%q not on screen:\n%s", s, v)
				}
			}
		})
	}
}

func TestRunsBrowserEmptyAndBroken(t *testing.T) {
	t.Chdir(t.TempDir())
	hs := newHarness(t, 80, 24)
	hs.press("4", "enter", "space", "c", "down")
	if v := hs.view(); !strings.Contains(v, "no runs yet") {
		t.Errorf("empty runs dir:\n%s", v)
	}
	writeRun(t, "runs", "20240102-030405-CartPole-v1-mlp", nil, 10, 1, nil)
	writeRun(t, "runs", "broken", nil, 0, 1, nil)
	if err := writeFileString("runs/broken/metrics.jsonl", "{\"iter\":1,\n{\"iter\":2}\n"); err != nil {
		t.Fatal(err)
	}
	hs.press("ctrl+r", "enter")
	hs.view()
	hs.press("esc", "down")
	if v := hs.view(); !strings.Contains(v, "! ") {
		t.Errorf("a broken run is not flagged:\n%s", v)
	}
}

// TestEveryKeyEverywhere presses every key on every screen at several
// sizes: nothing may panic, and every view must fill the terminal exactly.
func TestEveryKeyEverywhere(t *testing.T) {
	keys := []string{"up", "down", "left", "right", "tab", "shift+tab", "enter", "backspace", "delete", "pgup", "pgdown",
		"home", "end", "space", "ctrl+u", "ctrl+d", "ctrl+a", "ctrl+e"}
	for r := ' '; r <= '~'; r++ {
		if r != 'q' && r != 'y' { // quitting ends the sequence; tested elsewhere
			keys = append(keys, string(r))
		}
	}
	setups := map[string][]string{
		"picker":    nil,
		"editor":    {"enter", "enter"},
		"editing":   {"enter", "enter", "enter"},
		"dashboard": {"s"},
		"runs":      {"4"},
	}
	for _, size := range [][2]int{{80, 24}, {120, 40}, {60, 20}, {40, 12}, {30, 8}, {200, 60}} {
		for name, setup := range setups {
			t.Run(name, func(t *testing.T) {
				t.Chdir(t.TempDir())
				writeTwoRuns(t)
				hs := newHarness(t, size[0], size[1])
				hs.press(setup...)
				if hs.fake != nil {
					hs.fake.publish(metricsEvents(1, 30)...)
					hs.pump()
				}
				for _, k := range keys {
					hs.press(k)
					hs.view()
					if hs.poll != nil {
						hs.pump()
					}
					hs.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
				}
			})
		}
	}
}

// Two escapes read at once arrive as alt+esc; they act as two.
func TestTwoEscapesAtOnce(t *testing.T) {
	hs := newHarness(t, 120, 40)
	hs.press("enter", "enter", "/", "type:gamma")
	hs.send(tea.KeyMsg{Type: tea.KeyEsc, Alt: true}) // the filter, then the editor
	if hs.m.active != scrPicker {
		t.Errorf("screen %s after alt+esc, want the picker", hs.m.active)
	}
}

func TestResize(t *testing.T) {
	hs := newHarness(t, 120, 40)
	training(hs, 50)
	for _, s := range [][2]int{{80, 24}, {79, 23}, {60, 15}, {39, 11}, {1, 1}, {250, 80}, {120, 40}} {
		hs.send(tea.WindowSizeMsg{Width: s[0], Height: s[1]})
		hs.w, hs.h = s[0], s[1]
		v := hs.view()
		if s[0] < minW && !strings.Contains(v, "needs at least 40×12") && s[0] > 20 {
			t.Errorf("%dx%d: no too-small notice", s[0], s[1])
		}
	}
}

// TestAttach opens the app on a run that is already going: its past comes
// from the run directory, its present from the events.
func TestAttach(t *testing.T) {
	t.Chdir(t.TempDir())
	dir := writeRun(t, "runs", "20240102-030405-CartPole-v1-mlp", nil, 50, 1,
		[]trainer.Edit{{Iter: 20, Step: 10240, Key: "ppo.ent_coef", Value: "0.05", Old: "0.01"}})
	f := newFakeTrainer(config.Default())
	f.info.RunDir = dir
	f.publish(metricsEvents(51, 60)...)
	m := New(Options{Registry: testRegistry, Now: func() time.Time { return epoch }, Redraw: time.Nanosecond,
		Attach: &Link{Trainer: f, Events: f.events, Close: func() {}}})
	hs := &harness{t: t, m: m, w: 120, h: 40}
	hs.send(tea.WindowSizeMsg{Width: 120, Height: 40})
	hs.run(m.Init())
	if m.active != scrDashboard {
		t.Fatalf("screen = %v, want the dashboard", m.active)
	}
	if n := m.cur().hist.records; n != 60 {
		t.Errorf("history holds %d records, want 50 read back and 10 live", n)
	}
	if len(m.cur().edits) != 1 || m.cur().last.Iter != 60 {
		t.Errorf("edits %d, last iteration %d", len(m.cur().edits), m.cur().last.Iter)
	}
	if m.sh.runsDir != "runs" {
		t.Errorf("runs dir = %q", m.sh.runsDir)
	}
	hs.view()
}
