package tui

import (
	"cmp"
	"errors"
	"fmt"
	"github.com/agenttrainer/agenttrainer/internal/termtext"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// This file is what the runs browser does to manage runs: filter and sort
// the list, name, tag and note runs (meta.json), delete finished ones, and
// the detail view of one run.

// runsSummarizedMsg carries the summaries of some runs listed before
// they were read (the list shows at once; summaries follow in chunks).
type runsSummarizedMsg struct {
	dir     string
	gen     int
	runs    []runstore.RunInfo
	targets map[string]int64 // see targetOf
}

// summaryChunk is how many runs one command reads: small enough that the
// list shows its progress and stays responsive, large enough to be cheap.
const summaryChunk = 32

// readSummariesCmd reads the summaries of dirs (through the cache: a run
// whose files did not change is not read again).
func readSummariesCmd(cache *runstore.SummaryCache, dir string, gen int, listed []runstore.RunInfo) tea.Cmd {
	return func() tea.Msg {
		out := make([]runstore.RunInfo, len(listed))
		targets := map[string]int64{}
		for i, l := range listed {
			out[i] = readRun(cache, l)
			if t, ok := targetOf(out[i]); ok {
				targets[l.Dir] = t
			}
		}
		return runsSummarizedMsg{dir: dir, gen: gen, runs: out, targets: targets}
	}
}

// targetOf is the step count at which a run that stopped short of its
// total ended by itself: the trainer runs whole iterations,
// total_timesteps // batch of them (CleanRL's count), so a total that is
// not a multiple of the batch ends below it. ok is false where the total
// was reached, or the config cannot be read.
func targetOf(run runstore.RunInfo) (int64, bool) {
	if run.TotalSteps <= 0 || run.Steps >= run.TotalSteps {
		return 0, false
	}
	cfg, err := runstore.ReadConfig(run.Dir)
	if err != nil || cfg.Grouped() || cfg.BatchSize() <= 0 {
		return 0, false
	}
	batch := int64(cfg.BatchSize())
	return max(1, cfg.PPO.TotalTimesteps/batch) * batch, true
}

// readMore asks for the next chunk of unread summaries, the rows on screen
// first; nil when all are read.
func (r *runsBrowser) readMore() tea.Cmd {
	if len(r.unread) == 0 {
		return nil
	}
	var runs []runstore.RunInfo
	seen := map[string]bool{}
	add := func(run runstore.RunInfo) {
		if r.unread[run.Dir] && !seen[run.Dir] && len(runs) < summaryChunk {
			seen[run.Dir] = true
			runs = append(runs, run)
		}
	}
	for i := r.offset; i < len(r.runs) && len(runs) < summaryChunk; i++ {
		add(r.runs[i])
	}
	for _, run := range r.all {
		add(run)
	}
	return readSummariesCmd(r.cache, r.dir, r.gen, runs)
}

// merge puts fresh summaries in place of the ones listed before.
func (r *runsBrowser) merge(runs []runstore.RunInfo, targets map[string]int64) {
	for d, t := range targets {
		r.targets[d] = t
	}
	by := make(map[string]runstore.RunInfo, len(runs))
	for _, run := range runs {
		by[run.Dir] = run
		delete(r.unread, run.Dir)
	}
	for i, run := range r.all {
		if n, ok := by[run.Dir]; ok {
			r.all[i] = n
		}
	}
	r.apply()
}

// runState is a run's state as the filter names it.
func (r *runsBrowser) runState(run runstore.RunInfo) string {
	switch {
	case r.live[run.Dir]:
		return "live"
	case run.TotalSteps > 0 && run.Steps >= r.target(run):
		return "done"
	}
	return "stopped"
}

// target is the step count at which run is done.
func (r *runsBrowser) target(run runstore.RunInfo) int64 {
	if t, ok := r.targets[run.Dir]; ok {
		return t
	}
	return run.TotalSteps
}

// runQuery is a parsed filter: words that must all match. A word
// field:value matches one field (env, agent, name, tag, note, state);
// a plain word matches any of them.
type runQuery []struct{ field, value string }

var queryFields = []string{"env", "agent", "name", "tag", "note", "state"}

func parseQuery(s string) runQuery {
	var q runQuery
	for _, w := range strings.Fields(strings.ToLower(s)) {
		f, v, ok := strings.Cut(w, ":")
		if !ok || !slices.Contains(queryFields, f) {
			f, v = "", w
		}
		q = append(q, struct{ field, value string }{f, v})
	}
	return q
}

func (q runQuery) match(run runstore.RunInfo, state string) bool {
	fields := map[string][]string{
		"env":   {run.EnvID},
		"agent": {run.Agent},
		"name":  {run.Label(), run.Name},
		"tag":   run.Meta.Tags,
		"note":  {run.Meta.Note},
		"state": {state},
	}
	has := func(f, v string) bool {
		for _, s := range fields[f] {
			s = strings.ToLower(s)
			if (f == "tag" || f == "state") && s == v || f != "tag" && f != "state" && strings.Contains(s, v) {
				return true
			}
		}
		return false
	}
	for _, w := range q {
		if w.field != "" {
			if !has(w.field, w.value) {
				return false
			}
			continue
		}
		any := false
		for _, f := range queryFields {
			if has(f, w.value) || f == "tag" && slices.ContainsFunc(run.Meta.Tags, func(t string) bool {
				return strings.Contains(strings.ToLower(t), w.value)
			}) {
				any = true
				break
			}
		}
		if !any {
			return false
		}
	}
	return true
}

// sortCol is a column the list sorts by.
type sortCol struct {
	name string
	cmp  func(a, b runstore.RunInfo) int
}

// nanLast compares floats with NaN (no value yet) after every number.
func nanCmp(a, b float64) int {
	switch an, bn := math.IsNaN(a), math.IsNaN(b); {
	case an && bn:
		return 0
	case an:
		return 2 // after everything, whichever the direction
	case bn:
		return -2
	}
	return cmp.Compare(a, b)
}

var sortCols = []sortCol{
	{"started", func(a, b runstore.RunInfo) int { return a.Started.Compare(b.Started) }},
	{"name", func(a, b runstore.RunInfo) int {
		return cmp.Compare(strings.ToLower(a.Label()), strings.ToLower(b.Label()))
	}},
	{"env", func(a, b runstore.RunInfo) int { return cmp.Compare(a.EnvID, b.EnvID) }},
	{"agent", func(a, b runstore.RunInfo) int { return cmp.Compare(a.Agent, b.Agent) }},
	{"steps", func(a, b runstore.RunInfo) int { return cmp.Compare(a.Steps, b.Steps) }},
	{"best", func(a, b runstore.RunInfo) int { return nanCmp(float64(a.Best), float64(b.Best)) }},
	{"last", func(a, b runstore.RunInfo) int { return nanCmp(float64(a.Last), float64(b.Last)) }},
	{"edits", func(a, b runstore.RunInfo) int { return cmp.Compare(a.Edits, b.Edits) }},
}

// apply filters and sorts r.all into r.runs; the cursor stays on its run.
func (r *runsBrowser) apply() {
	cur := ""
	if r.cursor < len(r.runs) {
		cur = r.runs[r.cursor].Dir
	}
	q := parseQuery(r.filter.Value())
	shown := make([]runstore.RunInfo, 0, len(r.all))
	for _, run := range r.all {
		if q.match(run, r.runState(run)) {
			shown = append(shown, run)
		}
	}
	col := sortCols[r.sortBy]
	slices.SortStableFunc(shown, func(a, b runstore.RunInfo) int {
		c := col.cmp(a, b)
		if c == 2 || c == -2 { // no value sorts last either way
			return c
		}
		if r.sortAsc {
			c = -c
		}
		if c != 0 {
			return -c // descending unless asked otherwise
		}
		if c := b.Started.Compare(a.Started); c != 0 {
			return c
		}
		return cmp.Compare(b.Name, a.Name)
	})
	r.runs = shown
	for i, run := range r.runs {
		if run.Dir == cur {
			r.cursor = i
		}
	}
	r.cursor = min(r.cursor, max(len(r.runs)-1, 0))
	r.scroll()
}

// sortLabel names the active order for the header.
func (r *runsBrowser) sortLabel() string {
	arrow := "↓"
	if r.sortAsc {
		arrow = "↑"
	}
	return sortCols[r.sortBy].name + " " + arrow
}

// promptKind is the text field the browser has open on a run.
type promptKind int

const (
	promptNone promptKind = iota
	promptName
	promptTags
	promptNote
)

// metaSavedMsg says a run's meta.json was written (or why not).
type metaSavedMsg struct {
	dir  string
	meta runstore.Meta
	err  error
}

func saveMetaCmd(dir string, change func(*runstore.Meta)) tea.Cmd {
	return func() tea.Msg {
		m, err := runstore.UpdateMeta(dir, change)
		return metaSavedMsg{dir: dir, meta: m, err: err}
	}
}

// runDeletedMsg says a run directory was deleted (or why not).
type runDeletedMsg struct {
	dir string
	err error
}

// errLive refuses to delete a run whose training answers on its socket.
var errLive = errors.New("training now")

func deleteRunCmd(dir string, live func(string) bool) tea.Cmd {
	return func() tea.Msg {
		if live(dir) {
			return runDeletedMsg{dir: dir, err: errLive}
		}
		return runDeletedMsg{dir: dir, err: runstore.Delete(dir)}
	}
}

// openPrompt opens the text field kind on the run under the cursor.
func (r *runsBrowser) openPrompt(kind promptKind) {
	run := r.runs[r.cursor]
	r.prompt, r.promptDir = kind, run.Dir
	v := ""
	switch kind {
	case promptName:
		r.input.Prompt = "name: "
		v = run.Label()
	case promptTags:
		r.input.Prompt = "tags (space-separated): "
		v = strings.Join(run.Meta.Tags, " ")
	case promptNote:
		r.input.Prompt = "note: "
		v = run.Meta.Note
	}
	r.input.fill(v)
}

// savePrompt writes what the open text field holds.
func (r *runsBrowser) savePrompt() tea.Cmd {
	kind, dir, v := r.prompt, r.promptDir, strings.TrimSpace(r.input.Value())
	r.prompt = promptNone
	r.input.Blur()
	base := filepath.Base(dir)
	switch kind {
	case promptName:
		if v == base {
			v = "" // the directory's own name: nothing to store
		}
		return saveMetaCmd(dir, func(m *runstore.Meta) { m.Name = v })
	case promptTags:
		tags := strings.FieldsFunc(v, func(c rune) bool { return c == ' ' || c == ',' })
		return saveMetaCmd(dir, func(m *runstore.Meta) { m.Tags = tags })
	case promptNote:
		return saveMetaCmd(dir, func(m *runstore.Meta) { m.Note = v })
	}
	return nil
}

// runDetail is what the detail view shows of one run.
type runDetail struct {
	info        runstore.RunInfo
	changed     []diffRow // config keys that differ from the defaults: [value, default]
	checkpoints []string  // newest (latest) first
	pinned      map[string]bool
	edits       []trainer.Edit
	err         error
}

type runDetailMsg struct{ d runDetail }

func loadDetailCmd(dir string) tea.Cmd {
	return func() tea.Msg {
		d := runDetail{info: runstore.ReadRunInfo(dir), pinned: map[string]bool{}}
		cfg, err := runstore.ReadConfig(dir)
		def := config.Default()
		for _, k := range config.Schema() {
			v, e1 := cfg.Get(k.Name)
			dv, e2 := def.Get(k.Name)
			if e1 != nil || e2 != nil {
				continue
			}
			if s, ds := formatValue(v), formatValue(dv); s != ds {
				d.changed = append(d.changed, diffRow{key: k.Name, values: []string{s, ds}})
			}
		}
		ck := filepath.Join(dir, runstore.CheckpointsDir)
		d.checkpoints, _ = runstore.Checkpoints(ck)
		for _, c := range d.checkpoints {
			d.pinned[c] = runstore.Pinned(ck, c)
		}
		edits, err2 := runstore.ReadEdits(dir)
		d.edits = edits
		d.err = errors.Join(err, err2)
		return runDetailMsg{d: d}
	}
}

func (r *runsBrowser) viewDetail() string {
	th := r.th
	if r.detail == nil {
		return fit(th.Dim.Render("reading the run…"), r.w, r.h)
	}
	d := r.detail
	info := d.info
	var lines []string
	add := func(s string) { lines = append(lines, s) }
	title := th.Title.Render(cut(info.Label(), r.w))
	if info.Meta.Name != "" {
		title += th.Dim.Render(cut("  "+info.Name, max(r.w-lipgloss.Width(title), 0)))
	}
	add(title)
	add(th.Dim.Render(cut(termtext.Clean(info.Dir), r.w)))
	if len(info.Meta.Tags) > 0 || info.Meta.Note != "" {
		s := ""
		if len(info.Meta.Tags) > 0 {
			s = "#" + strings.Join(info.Meta.Tags, " #")
		}
		if info.Meta.Note != "" {
			if s != "" {
				s += " · "
			}
			s += info.Meta.Note
		}
		add(th.Good.Render(cut(s, r.w)))
	}
	sps := "-"
	if info.WallS > 0 {
		sps = thousands(int64(float64(info.Steps) / info.WallS))
	}
	add(cut(fmt.Sprintf("%s · %s · %s of %s steps · %s · best %s · last %s",
		info.EnvID, info.Agent, thousands(info.Steps), thousands(info.TotalSteps), plural(info.Iters, "iteration", "iterations"),
		fmtReturn(info.Best), fmtReturn(info.Last)), r.w))
	add(cut(fmt.Sprintf("started %s · wall %s · %s SPS · state %s", info.Started.Format("2006-01-02 15:04"),
		duration(time.Duration(info.WallS*float64(time.Second))), sps, r.runState(info)), r.w))
	if d.err != nil {
		add(th.Warn.Render(cut("! "+firstLine(d.err.Error()), r.w)))
	}
	section := func(s string) { add(""); add(th.Heading.Render(cut(s, r.w))) }
	// Checkpoints and edits are short; the config takes what is left.
	var ck []string
	for i, c := range d.checkpoints {
		s := "  " + c
		if i == 0 {
			s += th.Dim.Render("  latest")
		}
		if d.pinned[c] {
			s += th.Good.Render("  [pinned]")
		}
		ck = append(ck, s)
	}
	var ed []string
	for _, e := range d.edits {
		ed = append(ed, cut(fmt.Sprintf("  step %-10s %s: %s → %s", thousands(e.Step), e.Key, e.Old, e.Value), r.w))
	}
	room := r.h - len(lines) - 6
	ckRows := min(len(ck), max(room/3, 1))
	edRows := min(len(ed), max(room/3, 1))
	cfgRows := max(room-ckRows-edRows, 1)
	list := func(items []string, n int) {
		for i, s := range items {
			if i == n-1 && len(items) > n {
				add(th.Dim.Render(fmt.Sprintf("  … and %d more", len(items)-i)))
				break
			}
			add(s)
		}
	}
	keyW := 28
	section("Config: " + plural(len(d.changed), "key", "keys") + " changed from the defaults")
	var cfg []string
	for _, row := range d.changed {
		cfg = append(cfg, fitLine("  "+cut(row.key, keyW-3), keyW)+th.Changed.Render(cut(row.values[0], max((r.w-keyW)/2, 6)))+
			th.Dim.Render(cut("  (default "+row.values[1]+")", max(r.w-keyW-lipgloss.Width(row.values[0]), 0))))
	}
	list(cfg, cfgRows)
	section(fmt.Sprintf("Checkpoints: %d", len(d.checkpoints)))
	list(ck, ckRows)
	section(fmt.Sprintf("Live edits: %d", len(d.edits)))
	list(ed, edRows)
	for i := range lines {
		lines[i] = cut(lines[i], r.w)
	}
	return fit(strings.Join(lines, "\n"), r.w, r.h)
}
