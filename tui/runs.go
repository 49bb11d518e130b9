package tui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/control"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// runsListedMsg carries the runs found under the runs directory, and which
// of them are training right now.
type runsListedMsg struct {
	dir  string
	gen  int
	runs []runstore.RunInfo
	live map[string]bool // run directory → a training answers there
	err  error
}

// runsTickMsg asks the browser to look again (new runs, trainings that
// started or ended) while it shows its list.
type runsTickMsg struct{ gen int }

// attachRunMsg asks the app to open the dashboard on a live run.
type attachRunMsg struct{ dir string }

// watchRunMsg asks the app to play a run's latest checkpoint.
type watchRunMsg struct{ dir string }

// liveMark marks runs whose training is going on right now.
const liveMark = '◆'

// runsLoadedMsg carries runs read in full, to show one or compare several.
type runsLoadedMsg struct {
	runs []loadedRun
}

// closeRunsMsg leaves the runs browser.
type closeRunsMsg struct{}

// runsProblemMsg is shown at the foot of the list until the next key.
type runsProblemMsg struct{ text string }

// loadedRun is one run read back from its directory.
type loadedRun struct {
	info  runstore.RunInfo
	hist  *history
	edits []trainer.Edit
	cfg   config.Config
	err   error // anything that could not be read (shown, never fatal)
}

// LiveControl reports whether a training answers on runDir's control
// socket (it dials it, so call it from a tea.Cmd).
func LiveControl(runDir string) bool {
	if _, err := control.ReadEndpoint(runDir); err != nil {
		return false // the usual case: no control.json, nothing to dial
	}
	c, err := control.Dial(runDir)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func probeLive(runs []runstore.RunInfo, live func(string) bool) map[string]bool {
	out := map[string]bool{}
	for _, r := range runs {
		if live(r.Dir) {
			out[r.Dir] = true
		}
	}
	return out
}

func listRunsCmd(dir string, gen int, live func(string) bool) tea.Cmd {
	return func() tea.Msg {
		runs, err := runstore.ListRuns(dir)
		return runsListedMsg{dir: dir, gen: gen, runs: runs, live: probeLive(runs, live), err: err}
	}
}

// refreshRunsCmd lists dir again, reading in full only the runs that are
// new, or training now or at the last look; the others cannot have changed.
func refreshRunsCmd(dir string, gen int, known []runstore.RunInfo, wasLive map[string]bool, live func(string) bool) tea.Cmd {
	byDir := make(map[string]runstore.RunInfo, len(known))
	for _, r := range known {
		byDir[r.Dir] = r
	}
	return func() tea.Msg {
		now := map[string]bool{}
		runs, err := runstore.List(dir, func(d string) (runstore.RunInfo, bool) {
			if live(d) {
				now[d] = true // a live run changes: read it again
				return runstore.RunInfo{}, false
			}
			r, ok := byDir[d]
			return r, ok && !wasLive[d]
		})
		if err != nil {
			return runsListedMsg{dir: dir, gen: gen, err: err}
		}
		return runsListedMsg{dir: dir, gen: gen, runs: runs, live: now}
	}
}

func loadRunsCmd(infos []runstore.RunInfo) tea.Cmd {
	return func() tea.Msg {
		var out []loadedRun
		for _, info := range infos {
			r := loadedRun{info: runstore.ReadRunInfo(info.Dir)}
			ms, err := runstore.ReadMetrics(info.Dir)
			r.hist = historyOf(ms)
			edits, err2 := runstore.ReadEdits(info.Dir)
			r.edits = edits
			cfg, err3 := runstore.ReadConfig(info.Dir)
			r.cfg = cfg
			for _, e := range []error{err, err2, err3} {
				if e != nil && r.err == nil {
					r.err = e
				}
			}
			out = append(out, r)
		}
		return runsLoadedMsg{runs: out}
	}
}

// runsMode is what the browser shows.
type runsMode int

const (
	runsList    runsMode = iota
	runsOne              // one run's curves
	runsCompare          // marked runs overlaid, with a config diff
)

// runsBrowser lists past runs, shows one run's curves, and overlays the
// reward curves of marked runs with the differences between their configs.
// Runs whose training goes on right now (here, in another terminal, over
// SSH) are marked, and the app can attach to them.
type runsBrowser struct {
	sh      *shared
	th      *theme
	keys    *keyMap
	dir     string
	runs    []runstore.RunInfo
	live    map[string]bool
	err     error
	problem string // the last attach that failed, until the next key
	loading bool
	gen     int               // the current listing; older ticks and lists are dropped
	probe   func(string) bool // is a training answering in this run directory?
	refresh time.Duration     // how often to look again; <0 never
	listCursor
	marked []string // run directories in the order they were marked
	mode   runsMode
	loaded []loadedRun
	w, h   int
}

func newRunsBrowser(sh *shared, probe func(string) bool, refresh time.Duration) *runsBrowser {
	return &runsBrowser{sh: sh, th: sh.th, keys: sh.keys, probe: probe, refresh: refresh}
}

func (r *runsBrowser) Init() tea.Cmd   { return nil }
func (r *runsBrowser) Title() string   { return "runs" }
func (r *runsBrowser) Capturing() bool { return false }

// Focus reads the runs directory again each time the browser is shown.
func (r *runsBrowser) Focus() tea.Cmd { return r.open(r.sh.runsDir) }

// open shows the list of runs under dir, reloading it.
func (r *runsBrowser) open(dir string) tea.Cmd {
	if dir != r.dir {
		r.marked, r.listCursor, r.runs, r.live = nil, listCursor{}, nil, nil
	}
	r.gen++
	r.dir, r.loading, r.mode, r.problem = dir, true, runsList, ""
	return listRunsCmd(dir, r.gen, r.probe)
}

func (r *runsBrowser) tick() tea.Cmd {
	if r.refresh < 0 {
		return nil
	}
	gen := r.gen
	return tea.Tick(r.refresh, func(time.Time) tea.Msg { return runsTickMsg{gen: gen} })
}

func (r *runsBrowser) liveCount() int {
	n := 0
	for _, run := range r.runs {
		if r.live[run.Dir] {
			n++
		}
	}
	return n
}

func (r *runsBrowser) isMarked(dir string) int {
	for i, d := range r.marked {
		if d == dir {
			return i + 1
		}
	}
	return 0
}

func (r *runsBrowser) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case runsListedMsg:
		if msg.dir != r.dir || msg.gen != r.gen {
			return nil
		}
		cur := ""
		if r.cursor < len(r.runs) {
			cur = r.runs[r.cursor].Dir
		}
		r.loading, r.runs, r.live, r.err = false, msg.runs, msg.live, msg.err
		for i, run := range r.runs { // the cursor stays on its run when others appear
			if run.Dir == cur {
				r.cursor = i
			}
		}
		r.cursor = min(r.cursor, max(len(r.runs)-1, 0))
		// Forget marks of runs that are gone.
		var keep []string
		for _, d := range r.marked {
			for _, run := range r.runs {
				if run.Dir == d {
					keep = append(keep, d)
				}
			}
		}
		r.marked = keep
		r.scroll()
		return r.tick()
	case runsTickMsg:
		if msg.gen != r.gen {
			return nil
		}
		if r.mode != runsList {
			return r.tick() // look again once back at the list
		}
		return refreshRunsCmd(r.dir, r.gen, r.runs, r.live, r.probe)
	case runsLoadedMsg:
		r.loading, r.loaded = false, msg.runs
		return nil
	case runsProblemMsg:
		r.problem = msg.text
		return nil
	case tea.KeyMsg:
		if r.mode != runsList {
			if key.Matches(msg, r.keys.Back) {
				r.mode, r.loaded = runsList, nil
			}
			return nil
		}
		return r.updateList(msg)
	}
	return nil
}

func (r *runsBrowser) updateList(msg tea.KeyMsg) tea.Cmd {
	k := r.keys
	n := len(r.runs)
	r.problem = ""
	switch {
	case r.move(k, msg, n, r.rows()):
	case key.Matches(msg, k.Refresh):
		return r.open(r.dir)
	case key.Matches(msg, k.Back):
		return func() tea.Msg { return closeRunsMsg{} }
	case n == 0:
		return nil
	case key.Matches(msg, k.Mark):
		d := r.runs[r.cursor].Dir
		if i := r.isMarked(d); i > 0 {
			r.marked = append(r.marked[:i-1], r.marked[i:]...)
		} else {
			r.marked = append(r.marked, d)
		}
		r.cursor = min(r.cursor+1, n-1)
	case key.Matches(msg, k.Watch):
		d := r.runs[r.cursor].Dir
		return func() tea.Msg { return watchRunMsg{dir: d} }
	case key.Matches(msg, k.Attach):
		d := r.runs[r.cursor].Dir
		if !r.live[d] {
			r.problem = "not training now; `agenttrainer train --resume " + d + "` continues it"
			return nil
		}
		return func() tea.Msg { return attachRunMsg{dir: d} }
	case key.Matches(msg, k.Choose):
		r.mode, r.loading, r.loaded = runsOne, true, nil
		return loadRunsCmd([]runstore.RunInfo{r.runs[r.cursor]})
	case key.Matches(msg, k.Compare):
		var infos []runstore.RunInfo
		for _, d := range r.marked {
			for _, run := range r.runs {
				if run.Dir == d {
					infos = append(infos, run)
				}
			}
		}
		if len(infos) < 2 {
			infos = append(infos[:0], r.runs[r.cursor]) // nothing to compare: show the one
			r.mode = runsOne
		} else {
			r.mode = runsCompare
		}
		r.loading, r.loaded = true, nil
		return loadRunsCmd(infos)
	}
	r.scroll()
	return nil
}

func (r *runsBrowser) SetSize(w, h int) {
	r.w, r.h = w, h
	r.scroll()
}

// rows is how many runs fit: title and heading take two lines, and the
// preview of the highlighted run takes the last one.
func (r *runsBrowser) rows() int { return max(r.h-3, 1) }

func (r *runsBrowser) scroll() { r.follow(len(r.runs), r.rows()) }

func (r *runsBrowser) View() string {
	switch r.mode {
	case runsOne:
		return r.viewOne()
	case runsCompare:
		return r.viewCompare()
	}
	return r.viewList()
}

func fmtReturn(f trainer.Float) string {
	if math.IsNaN(float64(f)) {
		return "-"
	}
	return num(float64(f))
}

func (r *runsBrowser) viewList() string {
	th := r.th
	var b strings.Builder
	title := th.Title.Render("Runs") + " " + th.Dim.Render("in "+cutLeft(r.dir, max(r.w-30, 10)))
	if n := r.liveCount(); n > 0 {
		title += th.Good.Render(fmt.Sprintf(" · %d training now %c", n, liveMark))
	}
	if len(r.marked) > 0 {
		title += th.Dim.Render(fmt.Sprintf(" · %d marked", len(r.marked)))
	}
	b.WriteString(title + "\n")
	// Columns never touch (each keeps a blank cell) and the run's name is
	// cut in its middle, keeping the suffix that tells runs apart. Wide
	// screens split the name into date, env and agent; narrower ones show
	// the name itself (which holds them) and the numbers.
	wide := r.w >= 110
	numW := 10
	var head string
	nameW := max(r.w-5-3*numW, 12)
	envW := 0
	if wide {
		envW = min(22, max(r.w-5-17-9-4*numW-6-20, 12))
		nameW = max(r.w-5-17-envW-9-3*numW-6, 12)
		head = "     " + fitLine("STARTED", 17) + fitLine("ENV", envW) + fitLine("AGENT", 9) +
			fitLine("STEPS", numW) + fitLine("BEST", numW) + fitLine("LAST", numW) + fitLine("EDITS", 6) + "NAME"
	} else {
		head = "     " + fitLine("NAME", nameW) + fitLine("STEPS", numW) + fitLine("BEST", numW) + "LAST"
	}
	col := func(s string, w int) string { return fitLine(cut(s, w-1), w) }
	b.WriteString(th.Heading.Render(fitLine(head, r.w)) + "\n")
	switch {
	case r.loading && len(r.runs) == 0:
		b.WriteString(th.Dim.Render("  reading runs…"))
	case r.err != nil:
		b.WriteString(th.Bad.Render(cut("  "+r.err.Error(), r.w)))
	case len(r.runs) == 0:
		b.WriteString(th.Dim.Render("  no runs yet under " + r.dir + ": start one from the picker"))
	}
	for i := r.offset; i < len(r.runs) && i < r.offset+r.rows(); i++ {
		run := r.runs[i]
		mark := []rune("     ")
		if i == r.cursor {
			mark[0] = '▸'
		}
		if r.live[run.Dir] {
			mark[1] = liveMark
		}
		if n := r.isMarked(run.Dir); n > 0 {
			mark[2] = '●'
			if n < 10 {
				mark[3] = rune('0' + n)
			}
		}
		stepsCol := steps(float64(run.Steps))
		if run.TotalSteps > 0 && run.Steps < run.TotalSteps-run.TotalSteps/100 {
			stepsCol += "/" + steps(float64(run.TotalSteps))
		}
		var line string
		if wide {
			line = string(mark) + col(run.Started.Format("2006-01-02 15:04"), 17) + col(run.EnvID, envW) + col(run.Agent, 9) +
				col(stepsCol, numW) + col(fmtReturn(run.Best), numW) + col(fmtReturn(run.Last), numW) +
				col(fmt.Sprint(run.Edits), 6) + cutMiddle(run.Name, nameW)
		} else {
			line = string(mark) + col(cutMiddle(run.Name, nameW-1), nameW) + col(stepsCol, numW) +
				col(fmtReturn(run.Best), numW) + cut(fmtReturn(run.Last), numW)
		}
		if run.Err != nil {
			line += " !"
		}
		switch {
		case i == r.cursor:
			line = th.Selected.Render(fitLine(line, r.w))
		case r.isMarked(run.Dir) > 0:
			line = th.Palette[(r.isMarked(run.Dir)-1)%len(th.Palette)].Render(fitLine(line, r.w))
		case r.live[run.Dir]:
			line = th.Good.Render(fitLine(line, r.w))
		}
		b.WriteString(fitLine(line, r.w) + "\n")
	}
	body := fit(b.String(), r.w, r.h-1)
	foot := th.Dim.Render("space marks runs to compare; c overlays their curves and diffs their configs")
	onLive := r.cursor < len(r.runs) && r.live[r.runs[r.cursor].Dir]
	switch {
	case r.problem != "":
		foot = th.Bad.Render(firstLine(r.problem))
	case onLive:
		foot = th.Good.Render(string(liveMark)+" training now") + th.Dim.Render(": a attaches to it and opens its dashboard")
	case r.cursor < len(r.runs) && r.runs[r.cursor].Err != nil:
		foot = th.Warn.Render("! " + firstLine(r.runs[r.cursor].Err.Error()))
	case r.liveCount() > 0:
		foot = th.Dim.Render(string(liveMark) + " marks runs training now (a attaches) · space marks runs to compare, c compares them")
	}
	return fit(body+"\n"+cut(foot, r.w), r.w, r.h)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func (r *runsBrowser) viewOne() string {
	th := r.th
	if r.loading || len(r.loaded) == 0 {
		return fit(th.Dim.Render("reading the run…"), r.w, r.h)
	}
	run := r.loaded[0]
	info := run.info
	var b strings.Builder
	b.WriteString(th.Title.Render(cut(info.Name, r.w)) + "\n")
	facts := fmt.Sprintf("%s · %s · %s of %s steps · %d iterations · best %s · last %s · %d live edit(s)",
		info.EnvID, info.Agent, thousands(info.Steps), thousands(info.TotalSteps), info.Iters,
		fmtReturn(info.Best), fmtReturn(info.Last), len(run.edits))
	b.WriteString(th.Dim.Render(cut(facts, r.w)) + "\n")
	if run.err != nil {
		b.WriteString(th.Warn.Render(cut("! "+firstLine(run.err.Error()), r.w)) + "\n")
	}
	used := strings.Count(b.String(), "\n")
	sparks := []struct {
		label string
		ch    channel
	}{
		{"ep length", chLength}, {"policy loss", chPolicyLoss}, {"value loss", chValueLoss},
		{"entropy", chEntropy}, {"approx_kl", chApproxKL}, {"clipfrac", chClipFrac}, {"explained var", chExplVar},
	}
	sparkRows := len(sparks)
	if r.h-used-sparkRows < 8 {
		sparkRows = max(min(r.h-used-8, sparkRows), 0)
	}
	chartH := max(r.h-used-sparkRows, 4)
	var marks []float64
	for _, e := range run.edits {
		marks = append(marks, float64(e.Step))
	}
	chart := renderChart(th, chartSpec{w: r.w - 2, h: chartH - 2, xmax: xExtent(info.Steps, info.TotalSteps),
		curves: []curve{
			{pts: run.hist.series(chReturnMin, statMin), style: th.Band},
			{pts: run.hist.series(chReturnMax, statMax), style: th.Band},
			{pts: run.hist.series(chReturn, statMean), style: th.Curve},
		},
		markers: marks, empty: "no episode finished in this run"})
	b.WriteString(box(th, "ep_return_mean over env steps · min/max", chart, r.w, chartH))
	sw := max(r.w-30, 8)
	for i := 0; i < sparkRows; i++ {
		s := sparks[i]
		vals := run.hist.values(s.ch)
		last := math.NaN()
		for j := len(vals) - 1; j >= 0; j-- {
			if !math.IsNaN(vals[j]) {
				last = vals[j]
				break
			}
		}
		b.WriteString("\n" + th.Dim.Render(fitLine(s.label, 15)) + fitLine(num(last), 12) + " " + th.Curve.Render(sparkline(vals, sw)))
	}
	return fit(b.String(), r.w, r.h)
}

func (r *runsBrowser) viewCompare() string {
	th := r.th
	if r.loading || len(r.loaded) == 0 {
		return fit(th.Dim.Render("reading the runs…"), r.w, r.h)
	}
	var b strings.Builder
	b.WriteString(th.Title.Render(fmt.Sprintf("Comparing %d runs", len(r.loaded))) + th.Dim.Render(" · ep_return_mean over env steps") + "\n")
	var curves []curve
	xmax := 0.0
	for i, run := range r.loaded {
		st := th.Palette[i%len(th.Palette)]
		curves = append(curves, curve{pts: run.hist.series(chReturn, statMean), style: st, label: fmt.Sprint(i + 1)})
		xmax = math.Max(xmax, float64(run.info.Steps))
	}
	legend := make([]string, len(r.loaded))
	for i, run := range r.loaded {
		st := th.Palette[i%len(th.Palette)]
		legend[i] = st.Render(fmt.Sprintf("%d ━━", i+1)) + " " + cut(fmt.Sprintf("%s  %s steps  best %s  last %s",
			run.info.Name, steps(float64(run.info.Steps)), fmtReturn(run.info.Best), fmtReturn(run.info.Last)), r.w-5)
	}
	diff := configDiff(r.loaded)
	diffRows := min(len(diff)+1, max((r.h-1-len(legend))/3, 2))
	chartH := max(r.h-1-len(legend)-diffRows, 4)
	b.WriteString(box(th, "", renderChart(th, chartSpec{w: r.w - 2, h: chartH - 2, xmax: xmax, curves: curves}), r.w, chartH) + "\n")
	b.WriteString(strings.Join(legend, "\n") + "\n")
	if len(diff) == 0 {
		b.WriteString(th.Dim.Render("configs are identical"))
		return fit(b.String(), r.w, r.h)
	}
	colW := max((r.w-22)/len(r.loaded), 6)
	head := fitLine("config differences", 22)
	for i := range r.loaded {
		head += fitLine(fmt.Sprint(i+1), colW)
	}
	b.WriteString(th.Heading.Render(cut(head, r.w)))
	for i, row := range diff {
		if i+1 >= diffRows {
			b.WriteString("\n" + th.Dim.Render(fmt.Sprintf("… and %d more", len(diff)-i)))
			break
		}
		line := fitLine(cut(row.key, 21), 22)
		for _, v := range row.values {
			line += fitLine(cut(v, colW-1), colW)
		}
		b.WriteString("\n" + cut(line, r.w))
	}
	return fit(b.String(), r.w, r.h)
}

// diffRow is one config key whose value differs between compared runs.
type diffRow struct {
	key    string
	values []string
}

// configDiff lists the keys whose values differ between the runs' configs
// (run names and directories are expected to differ and are left out).
func configDiff(runs []loadedRun) []diffRow {
	var out []diffRow
	for _, k := range config.Schema() {
		if k.Name == "trainer.name" {
			continue
		}
		row := diffRow{key: k.Name}
		same := true
		for i, run := range runs {
			v, err := run.cfg.Get(k.Name)
			s := "?"
			if err == nil {
				s = config.FormatValue(v)
			}
			row.values = append(row.values, s)
			if i > 0 && s != row.values[0] {
				same = false
			}
		}
		if !same {
			out = append(out, row)
		}
	}
	return out
}

func (r *runsBrowser) Help() help.KeyMap {
	k := r.keys
	back := k.Back
	if r.mode != runsList {
		back.SetHelp("esc", "back to list")
		return helpKeys{short: []key.Binding{back, k.Quit, k.Help}, full: [][]key.Binding{{back, k.Help, k.Quit}}}
	}
	open := k.Choose
	open.SetHelp("enter", "open")
	return helpKeys{
		short: []key.Binding{open, k.Attach, k.Watch, k.Mark, k.Compare, k.Refresh, back, k.Quit, k.Help},
		full:  [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom}, {open, k.Attach, k.Watch, k.Mark, k.Compare, k.Refresh}, {back, k.Help, k.Quit}},
	}
}
