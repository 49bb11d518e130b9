package tui

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var testdata = "testdata"

func TestMain(m *testing.M) {
	// Golden views are compared without colours or other styling.
	lipgloss.SetColorProfile(termenv.Ascii)
	lipgloss.SetHasDarkBackground(true)
	// Tests chdir into temporary directories; goldens stay here.
	if dir, err := filepath.Abs("testdata"); err == nil {
		testdata = dir
	}
	os.Exit(m.Run())
}

// epoch is the fake clock's time.
var epoch = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeTrainer is a Trainer whose events the test publishes; it validates
// live edits the way the trainer does.
type fakeTrainer struct {
	mu     sync.Mutex
	info   trainer.Info
	cfg    config.Config
	calls  []string
	events chan trainer.Event
	closed bool
	paused bool
}

func newFakeTrainer(cfg config.Config) *fakeTrainer {
	return &fakeTrainer{
		cfg: cfg.Clone(),
		info: trainer.Info{Device: "cpu (fake)", EnvID: cfg.Env.ID, Agent: cfg.Agent.Name,
			TotalSteps: cfg.PPO.TotalTimesteps},
		events: make(chan trainer.Event, 1<<14),
	}
}

func (f *fakeTrainer) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeTrainer) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeTrainer) Info() trainer.Info { f.mu.Lock(); defer f.mu.Unlock(); return f.info }
func (f *fakeTrainer) Config() config.Config {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cfg.Clone()
}
func (f *fakeTrainer) Subscribe(int) (<-chan trainer.Event, func()) { return f.events, func() {} }
func (f *fakeTrainer) Paused() bool                                 { f.mu.Lock(); defer f.mu.Unlock(); return f.paused }
func (f *fakeTrainer) Pause()                                       { f.record("pause"); f.setPaused(true) }
func (f *fakeTrainer) Resume()                                      { f.record("resume"); f.setPaused(false) }

func (f *fakeTrainer) setPaused(p bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused = p
}
func (f *fakeTrainer) Stop()           { f.record("stop") }
func (f *fakeTrainer) SaveCheckpoint() { f.record("save") }

func (f *fakeTrainer) Edit(key, raw string) error {
	f.record("edit " + key + "=" + raw)
	k, ok := config.Lookup(key)
	if !ok {
		probe := config.Default()
		return probe.SetString(key, raw)
	}
	if !k.Live {
		return &config.Error{Key: key, Msg: lockedMsg}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	next := f.cfg.Clone()
	if err := next.SetString(key, raw); err != nil {
		return err
	}
	if err := next.Validate(); err != nil {
		return err
	}
	f.cfg = next
	return nil
}

// publish sends events as the trainer would.
func (f *fakeTrainer) publish(es ...trainer.Event) {
	for _, e := range es {
		f.events <- e
	}
}

func (f *fakeTrainer) finish(state trainer.State) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.events <- trainer.Event{Kind: trainer.EventDone, Time: epoch, State: state, Message: "run " + string(state)}
	close(f.events)
	f.closed = true
}

// fakeMetrics is a deterministic learning curve: the return rises from ~20
// toward 500 with a wiggle, losses decay.
func fakeMetrics(iter int) trainer.Metrics {
	i := float64(iter)
	ret := 20 + 450*(1-math.Exp(-i/40)) + 15*math.Sin(i/3)
	f := func(v float64) trainer.Float { return trainer.Float(v) }
	m := trainer.Metrics{
		Iter: iter, Step: int64(iter) * 512, TimeS: f(i * 0.01), SPS: f(50000 + 1000*math.Sin(i)),
		Episodes: int64(iter * 5), EpReturnMean: f(ret), EpReturnMin: f(ret * 0.4), EpReturnMax: f(math.Min(ret*1.5, 500)),
		EpLengthMean: f(ret), PolicyLoss: f(-0.01 * math.Exp(-i/50)), ValueLoss: f(40 * math.Exp(-i/80)),
		Entropy: f(0.69 - 0.002*i), ApproxKL: f(0.002 + 0.001*math.Sin(i)), ClipFrac: f(0.05),
		ExplainedVariance: f(1 - math.Exp(-i/30)), LR: f(2.5e-4 * (1 - i/1000)),
	}
	if iter == 1 {
		m.EpReturnMean, m.EpReturnMin, m.EpReturnMax, m.EpLengthMean = f(math.NaN()), f(math.NaN()), f(math.NaN()), f(math.NaN())
	}
	return m
}

func metricsEvents(from, to int) []trainer.Event {
	var es []trainer.Event
	for i := from; i <= to; i++ {
		es = append(es, trainer.Event{Kind: trainer.EventMetrics, Time: epoch, Metrics: fakeMetrics(i)})
	}
	return es
}

// testRegistry is a fixed registry so that goldens do not change when an
// environment is registered.
func testRegistry() ([]EnvChoice, []AgentChoice) {
	return []EnvChoice{
			{ID: "Acrobot-v1", Description: "Swing a two-link arm above a line", Action: "discrete(3)", Observation: "continuous(6)", MaxSteps: 500},
			{ID: "CartPole-v1", Description: "Balance a pole on a cart by pushing it left or right", Action: "discrete(2)", Observation: "continuous(4)", MaxSteps: 500},
			{ID: "MountainCar-v0", Description: "Drive an underpowered car up a hill", Action: "discrete(3)", Observation: "continuous(2)", MaxSteps: 200},
			{ID: "Pendulum-v1", Description: "Swing a pendulum up and keep it upright", Action: "continuous(1)", Observation: "continuous(3)", MaxSteps: 200},
		}, []AgentChoice{
			{Name: "mlp", Description: "Actor-critic MLP (separate 64-64 tanh networks)"},
			{Name: "random", Description: "Uniformly random actions (a baseline)"},
		}
}

// fakeHost is the app's host in tests: Start trains on a fakeTrainer "in
// process"; Attach and Resume hand out fake trainers for run directories;
// live says which directories have a training answering.
type fakeHost struct {
	hs         *harness
	mu         sync.Mutex
	live       map[string]bool
	background []string // what LiveRuns lists
	probes     int
	started    []config.Config
	attached   []string
	resumed    []string
	closed     []string
	attachErr  error
	paused     map[string]bool // runs that are paused when attached to
	trainers   map[string]*fakeTrainer
	detachable bool
	sweeps     map[string]bool // sweep directory → its process runs
	sweepCalls []string
	// beforeAttach, when set, runs as Attach begins, outside the lock: what
	// the app does while a dial is under way.
	beforeAttach func(dir string)
}

func newFakeHost(hs *harness) *fakeHost {
	return &fakeHost{hs: hs, live: map[string]bool{}, paused: map[string]bool{}, trainers: map[string]*fakeTrainer{}, sweeps: map[string]bool{}}
}

func (f *fakeHost) Start(c config.Config) (*Link, error) {
	if !knownEnv(c.Env.ID) {
		return nil, &config.Error{Key: "env.id", Msg: fmt.Sprintf("unknown environment %q", c.Env.ID)}
	}
	f.mu.Lock()
	f.started = append(f.started, c)
	f.mu.Unlock()
	hs := f.hs
	hs.launchs++
	hs.fake = newFakeTrainer(c)
	hs.fake.info.RunDir = "runs/20240102-030405-" + c.Env.ID + "-" + c.Agent.Name
	return &Link{Trainer: hs.fake, Events: hs.fake.events, Close: func() {}}, nil
}

func (f *fakeHost) link(dir string) *Link {
	cfg := config.Default()
	cfg.PPO.TotalTimesteps = 1 << 20
	tr := newFakeTrainer(cfg)
	tr.info.RunDir = dir
	tr.paused = f.paused[dir]
	f.trainers[dir] = tr
	return &Link{Trainer: tr, Events: tr.events, Close: func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.closed = append(f.closed, dir)
	}}
}

func (f *fakeHost) Attach(dir string) (*Link, error) {
	if hook := f.beforeAttach; hook != nil {
		hook(dir)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attached = append(f.attached, dir)
	if f.attachErr != nil {
		return nil, f.attachErr
	}
	return f.link(dir), nil
}

func (f *fakeHost) Resume(dir string) (*Link, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resumed = append(f.resumed, dir)
	f.live[dir] = true
	return f.link(dir), nil
}

func (f *fakeHost) Live(dir string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probes++
	return f.live[dir]
}

func (f *fakeHost) LiveRuns(string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.background...)
}

func (f *fakeHost) Resolve(envID, agent string) (config.Config, error) {
	cfg, err := PresetResolve(envID, agent)
	cfg.Trainer.RunsDir = "runs"
	cfg.PPO.TotalTimesteps = 102400 // the harness's config file
	return cfg, err
}

func (f *fakeHost) Detachable() bool { return f.detachable }

func (f *fakeHost) StartSweep(spec, runsDir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweepCalls = append(f.sweepCalls, "start "+spec+" in "+runsDir)
	return nil
}

func (f *fakeHost) StopSweep(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweepCalls = append(f.sweepCalls, "stop "+dir)
	f.sweeps[dir] = false
	return nil
}

func (f *fakeHost) ResumeSweep(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweepCalls = append(f.sweepCalls, "resume "+dir)
	f.sweeps[dir] = true
	return nil
}

func (f *fakeHost) SweepRunning(dir string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sweeps[dir]
}

func (f *fakeHost) set(dir string, live bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.live[dir] = live
}

func (f *fakeHost) probeCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.probes
}

// harness drives a Model the way Bubble Tea does, running commands
// synchronously. The dashboard's poll loop is not followed on its own (it
// would never end): pump runs one turn of it. Screens' ticks are held
// until a test sends them.
type harness struct {
	t          *testing.T
	m          *Model
	host       *fakeHost
	fake       *fakeTrainer
	launchs    int
	poll       tea.Cmd         // the latest poll held (nil when none)
	polls      map[int]tea.Cmd // every run's next poll
	tick       *addressed      // the runs browser's next look, held until a test sends it
	sweepTick  *addressed      // the sweeps screen's, likewise
	noticeDone *noticeDoneMsg
	quit       bool
	w, h       int
}

func newHarness(t *testing.T, w, h int) *harness {
	t.Helper()
	return newHarnessWith(t, w, h, nil)
}

// newHarnessWith is newHarness with options (and the fake host) changed by
// opts first.
func newHarnessWith(t *testing.T, w, h int, opts func(*Options, *fakeHost)) *harness {
	t.Helper()
	hs := &harness{t: t, w: w, h: h}
	hs.host = newFakeHost(hs)
	cfg := config.Default()
	cfg.Trainer.RunsDir = "runs"
	cfg.PPO.TotalTimesteps = 102400
	o := Options{
		Config:      cfg,
		Host:        hs.host,
		Registry:    testRegistry,
		Now:         func() time.Time { return epoch },
		Redraw:      time.Nanosecond,
		RunsRefresh: time.Nanosecond, // the harness holds the ticks (see run)
		Notice:      time.Nanosecond,
	}
	if opts != nil {
		opts(&o, hs.host)
	}
	hs.m = New(o)
	hs.send(tea.WindowSizeMsg{Width: w, Height: h})
	hs.run(hs.m.Init())
	return hs
}

func (hs *harness) send(msgs ...tea.Msg) {
	hs.t.Helper()
	for _, msg := range msgs {
		_, cmd := hs.m.Update(msg)
		if em, ok := msg.(eventsMsg); ok && !em.closed {
			if hs.polls == nil {
				hs.polls = map[int]tea.Cmd{}
			}
			hs.polls[em.run] = cmd // the next turn of the run's poll loop
			hs.poll = cmd
			continue
		}
		hs.run(cmd)
	}
}

func (hs *harness) run(cmd tea.Cmd) {
	hs.t.Helper()
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			hs.run(c)
		}
	case tea.QuitMsg:
		hs.quit = true
	case noticeDoneMsg:
		hs.noticeDone = &msg // the notice's time is up only when a test says so
	case addressed:
		switch msg.msg.(type) {
		case runsTickMsg:
			hs.tick = &msg // followed, it would never end: lookAgain sends it
		case sweepsTickMsg:
			hs.sweepTick = &msg // the same
		case watchTickMsg:
			// the watch view's redraws: tests look at its frames directly
		default:
			hs.send(msg)
		}
	default:
		hs.send(msg)
	}
}

// lookAgain delivers the runs browser's pending tick: one more look at the
// runs directory.
func (hs *harness) lookAgain() {
	hs.t.Helper()
	if hs.tick == nil {
		hs.t.Fatal("the runs browser is not looking again")
	}
	msg := *hs.tick
	hs.tick = nil
	hs.send(msg)
}

// pump delivers what the trainer published since the last poll.
func (hs *harness) pump() {
	hs.t.Helper()
	if hs.poll == nil {
		hs.t.Fatal("the dashboard is not polling for events")
	}
	polls := hs.polls
	hs.poll, hs.polls = nil, nil
	for _, p := range polls { // every run's turn, as the app's loops run side by side
		hs.run(p)
	}
}

// keyMsg turns a key name ("enter", "ctrl+c", "a") into a key message.
func keyMsg(name string) tea.KeyMsg {
	special := map[string]tea.KeyType{
		"enter": tea.KeyEnter, "esc": tea.KeyEsc, "up": tea.KeyUp, "down": tea.KeyDown,
		"left": tea.KeyLeft, "right": tea.KeyRight, "tab": tea.KeyTab, "shift+tab": tea.KeyShiftTab,
		"backspace": tea.KeyBackspace, "ctrl+c": tea.KeyCtrlC, "ctrl+u": tea.KeyCtrlU, "ctrl+d": tea.KeyCtrlD,
		"pgup": tea.KeyPgUp, "pgdown": tea.KeyPgDown, "home": tea.KeyHome, "end": tea.KeyEnd,
		"space": tea.KeySpace, "ctrl+r": tea.KeyCtrlR, "ctrl+a": tea.KeyCtrlA, "ctrl+e": tea.KeyCtrlE, "delete": tea.KeyDelete,
	}
	if t, ok := special[name]; ok {
		if t == tea.KeySpace {
			return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
		}
		return tea.KeyMsg{Type: t}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(name)}
}

// press sends keys by name; "type:text" types text one rune at a time.
func (hs *harness) press(keys ...string) {
	hs.t.Helper()
	for _, k := range keys {
		if text, ok := strings.CutPrefix(k, "type:"); ok {
			for _, r := range text {
				hs.send(keyMsg(string(r)))
			}
			continue
		}
		hs.send(keyMsg(k))
	}
}

// view renders the model and checks it fills the terminal exactly.
func (hs *harness) view() string {
	hs.t.Helper()
	v := hs.m.View()
	checkFits(hs.t, v, hs.w, hs.h)
	return v
}

// screenView is the view without the tab bar: what a screen's golden file
// holds, so that adding a screen (a tab) changes no other screen's golden.
func (hs *harness) screenView() string {
	hs.t.Helper()
	_, rest, _ := strings.Cut(hs.view(), "\n")
	return rest
}

func checkFits(t *testing.T, v string, w, h int) {
	t.Helper()
	lines := strings.Split(v, "\n")
	if len(lines) != h {
		t.Errorf("view has %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n != w {
			t.Errorf("line %d is %d cells wide, want %d: %q", i+1, n, w, l)
			break
		}
	}
}

// golden compares got with testdata/name.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(testdata, name+".golden")
	// Trailing spaces are kept in the file; a final newline is added so
	// editors leave it alone.
	if *update {
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tui -update to create it)", err)
	}
	if string(want) != got+"\n" {
		t.Errorf("view differs from %s (run go test ./tui -update if the change is intended)\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

// writeRun writes a run directory as the trainer would.
func writeRun(t *testing.T, root, name string, mutate func(*config.Config), iters int, scale float64, edits []trainer.Edit) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Join(dir, runstore.CheckpointsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.PPO.TotalTimesteps = int64(iters) * 512
	if mutate != nil {
		mutate(&cfg)
	}
	var b strings.Builder
	for i := 1; i <= iters; i++ {
		m := fakeMetrics(i)
		m.EpReturnMean = trainer.Float(float64(m.EpReturnMean) * scale)
		line, err := jsonMarshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(line + "\n")
	}
	var e strings.Builder
	for _, ed := range edits {
		line, err := jsonMarshal(ed)
		if err != nil {
			t.Fatal(err)
		}
		e.WriteString(line + "\n")
	}
	for f, data := range map[string]string{runstore.ConfigFile: cfg.TOML(), runstore.MetricsFile: b.String(), runstore.EditsFile: e.String()} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func knownEnv(id string) bool {
	es, _ := lmRegistry()
	for _, e := range es {
		if e.ID == id {
			return true
		}
	}
	return false
}

func jsonMarshal(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func writeFileString(path, data string) error { return os.WriteFile(path, []byte(data), 0o644) }

// The screens and the focused run, for tests that look inside.
func (m *Model) pk() *picker       { return m.screens[scrPicker].(*picker) }
func (m *Model) ed() *editor       { return m.screens[scrEditor].(*editor) }
func (m *Model) db() *dashboard    { return m.screens[scrDashboard].(*dashboard) }
func (m *Model) rb() *runsBrowser  { return m.screens[scrRuns].(*runsBrowser) }
func (m *Model) sw() *sweepsScreen { return m.screens[scrSweeps].(*sweepsScreen) }
func (m *Model) draft() *draft     { return m.sh.draft }
func (m *Model) cur() *run {
	if r := m.runs.focused(); r != nil {
		return r
	}
	return &run{hist: newHistory()}
}

func teaSize(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }
