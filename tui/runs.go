package tui

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

const scrRuns screenID = "runs"

// runsListKeys are the runs list's bindings.
type runsListKeys struct {
	navKeys
	Open, Details, Filter, Sort, SortReverse   key.Binding
	Tag, Rename, Note, Delete                  key.Binding
	Attach, Resume, Watch, Mark, Compare, Back key.Binding
	Refresh, Words                             key.Binding
}

func newRunsListKeys() runsListKeys {
	return runsListKeys{navKeys: newNavKeys(),
		Open:        bind("enter", "open", "enter"),
		Details:     bind("i", "details", "i"),
		Filter:      bind("/", "filter", "/"),
		Sort:        bind("s", "sort", "s"),
		SortReverse: bind("S", "reverse order", "S"),
		Tag:         bind("t", "tags", "t"),
		Rename:      bind("n", "rename", "n"),
		Note:        bind("e", "note", "e"),
		Delete:      bind("d", "delete", "d", "delete"),
		Attach:      bind("a", "attach", "a"),
		Resume:      bind("r", "resume", "r"),
		Watch:       bind("w", "watch it play", "w"),
		Mark:        bind("space", "mark", " ", "space"),
		Compare:     bind("c", "compare marked", "c"),
		Back:        bind("esc", "back", "esc"),
		Refresh:     bind("ctrl+r", "read again", "ctrl+r"),
		Words:       bind("T", "transcripts", "T"),
	}
}

func (k runsListKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Open, k.Details, k.Filter, k.Sort, k.Attach, k.Resume, k.Mark, k.Compare, k.Tag, k.Rename, k.Note, k.Delete, k.Watch, k.Words}
}

func (k runsListKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{k.navKeys.group(),
		{k.Open, k.Details, k.Attach, k.Resume, k.Watch, k.Words, k.Mark, k.Compare},
		{k.Filter, k.Sort, k.SortReverse, k.Refresh, k.Back},
		{k.Tag, k.Rename, k.Note, k.Delete}}
}

// runsChartKeys are one run's curves' bindings.
type runsChartKeys struct {
	chartKeys
	Export, Back key.Binding
}

func newRunsChartKeys() runsChartKeys {
	return runsChartKeys{chartKeys: newChartKeys(),
		Export: bind("p", "save as PNG", "p"),
		Back:   bind("esc", "back", "esc"),
	}
}

func (k runsChartKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Metric, k.Grid, k.XAxis, k.LogY, k.Zoom, k.Smooth, k.CursorRight, k.Export, k.Back}
}

func (k runsChartKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{k.chartKeys.group(), {k.Export, k.Back}}
}

// compareKeys are the bindings of runs overlaid: the charts', and one run
// picked among them to hide or to bring forward.
type compareKeys struct {
	runsChartKeys
	NextRun, PrevRun, Hide, Highlight key.Binding
}

func newCompareKeys() compareKeys {
	return compareKeys{runsChartKeys: newRunsChartKeys(),
		NextRun:   bind("]", "pick next run", "]"),
		PrevRun:   bind("[", "pick previous run", "["),
		Hide:      bind("v", "hide/show it", "v"),
		Highlight: bind("f", "highlight it", "f"),
	}
}

func (k compareKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.NextRun, k.Hide, k.Highlight, k.Metric, k.Grid, k.XAxis, k.Smooth, k.CursorRight, k.Export, k.Back}
}

func (k compareKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{k.chartKeys.group(), {k.NextRun, k.PrevRun, k.Hide, k.Highlight, k.Export, k.Back}}
}

// detailKeys are the detail view's.
type detailKeys struct{ Resume, Back key.Binding }

func newDetailKeys() detailKeys {
	return detailKeys{Resume: bind("r", "resume", "r"), Back: bind("esc", "back to list", "esc")}
}

func (k detailKeys) ShortHelp() []key.Binding  { return []key.Binding{k.Resume, k.Back} }
func (k detailKeys) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

// runsListedMsg carries the runs found under the runs directory (a sweep's
// trials among them), and which of them are training right now.
type runsListedMsg struct {
	dir  string
	gen  int
	runs []runstore.RunInfo
	live map[string]bool // run directory → a training answers there
	err  error
	// partial: the runs were only scanned (names, meta.json); their
	// summaries follow in runsSummarizedMsg.
	partial bool
	targets map[string]int64 // of the runs read again (see targetOf)
}

// runsTickMsg asks the browser to look again (new runs, trainings that
// started or ended) while it shows its list.
type runsTickMsg struct{ gen int }

// watchRunMsg asks the watch screen to play a run's latest checkpoint.
type watchRunMsg struct{ dir string }

// liveMark marks runs whose training is going on right now.
const liveMark = '◆'

// runsLoadedMsg carries runs read in full, to show one or compare several.
type runsLoadedMsg struct {
	runs []loadedRun
}

// runsProblemMsg is shown at the foot of the list until the next key.
type runsProblemMsg struct{ text string }

// showRunsMsg asks the runs browser for the curves of dirs: one run's, or
// several overlaid; esc there goes back to where it was asked.
type showRunsMsg struct{ dirs []string }

// loadedRun is one run read back from its directory.
type loadedRun struct {
	info   runstore.RunInfo
	hist   *history
	edits  []trainer.Edit
	cfg    config.Config
	err    error // anything that could not be read (shown, never fatal)
	hidden bool  // left out of the overlay
}

// probeLive asks which runs have a training answering, dialling up to
// probeWorkers control sockets at once: a dial to a dead run's socket can
// take its time, and hundreds of runs one after another would hold the
// list up.
func probeLive(runs []runstore.RunInfo, live func(string) bool) map[string]bool {
	answers := make([]bool, len(runs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(probeWorkers, len(runs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				answers[i] = live(runs[i].Dir)
			}
		}()
	}
	for i := range runs {
		next <- i
	}
	close(next)
	wg.Wait()
	out := map[string]bool{}
	for i, r := range runs {
		if answers[i] {
			out[r.Dir] = true
		}
	}
	return out
}

// probeWorkers bounds the control sockets probeLive dials at once.
const probeWorkers = 16

// scanRuns lists the runs under dir and the trials of its sweeps (named
// sweep/trial-003).
func scanRuns(dir string) ([]runstore.RunInfo, error) {
	runs, err := runstore.Scan(dir)
	if err != nil {
		return nil, err
	}
	for _, sw := range sweepDirs(dir) {
		trials, err := runstore.Scan(sw)
		if err != nil {
			continue
		}
		for i := range trials {
			trials[i].Name = filepath.Base(sw) + "/" + trials[i].Name
		}
		runs = append(runs, trials...)
	}
	return runs, nil
}

func listRunsCmd(dir string, gen int, live func(string) bool) tea.Cmd {
	return func() tea.Msg {
		runs, err := scanRuns(dir)
		return runsListedMsg{dir: dir, gen: gen, runs: runs, live: probeLive(runs, live), err: err, partial: true}
	}
}

// readRun reads a run's summary through the cache, keeping the name the
// listing gave it (a trial's sweep/trial-003).
func readRun(cache *runstore.SummaryCache, listed runstore.RunInfo) runstore.RunInfo {
	r := cache.Read(listed.Dir)
	r.Name = listed.Name
	return r
}

// refreshRunsCmd lists dir again, reading only the runs that are new, or
// training now or at the last look; the others cannot have changed but for
// their meta.json, which the scan reads.
func refreshRunsCmd(cache *runstore.SummaryCache, dir string, gen int, known []runstore.RunInfo, wasLive map[string]bool, live func(string) bool) tea.Cmd {
	byDir := make(map[string]runstore.RunInfo, len(known))
	for _, r := range known {
		byDir[r.Dir] = r
	}
	return func() tea.Msg {
		now, targets := map[string]bool{}, map[string]int64{}
		runs, err := scanRuns(dir)
		if err != nil {
			return runsListedMsg{dir: dir, gen: gen, err: err}
		}
		for i, s := range runs {
			d := s.Dir
			if live(d) {
				now[d] = true // a live run changes: read it again
				runs[i] = readRun(cache, s)
				continue
			}
			if r, ok := byDir[d]; ok && !wasLive[d] {
				r.Meta = s.Meta
				runs[i] = r
				continue
			}
			runs[i] = readRun(cache, s)
			if t, ok := targetOf(runs[i]); ok {
				targets[d] = t
			}
		}
		return runsListedMsg{dir: dir, gen: gen, runs: runs, live: now, targets: targets}
	}
}

func loadRunsCmd(infos []runstore.RunInfo) tea.Cmd {
	return func() tea.Msg {
		var out []loadedRun
		for _, info := range infos {
			r := loadedRun{info: runstore.ReadRunInfo(info.Dir)}
			if info.Name != "" {
				r.info.Name = info.Name
			}
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
	runsDetail           // one run's config, checkpoints, edits
)

// runsBrowser lists past runs (a sweep's trials among them), shows one
// run's curves, and overlays the curves of marked runs with the differences
// between their configs. Runs whose training goes on right now (here, in
// another terminal, over SSH) are marked, and the app can attach to them;
// stopped ones resume.
type runsBrowser struct {
	sh          *shared
	th          *theme
	keys        runsListKeys
	chartKeys   runsChartKeys
	compareKeys compareKeys
	detailKeys  detailKeys
	textKeys    textKeys
	filterKeys  textKeys
	deleteKeys  confirmKeys
	dir         string
	all         []runstore.RunInfo // every run under dir
	runs        []runstore.RunInfo // those the filter passes, in the chosen order
	unread      map[string]bool    // runs listed whose summaries are still being read
	targets     map[string]int64   // steps at which a run ends, where its total is not a multiple of its batch
	cache       *runstore.SummaryCache
	live        map[string]bool
	err         error
	problem     string // the last attach that failed, until the next key
	loading     bool   // the list is being read
	opening     bool   // the run(s) to show are being read
	asked       bool   // the curves on show were asked for by another screen: esc goes back there
	shown       bool   // the browser is on screen (its ticks go on)
	gen         int    // the current listing; older ticks and lists are dropped
	listCursor
	marked []string // run directories in the order they were marked
	mode   runsMode
	loaded []loadedRun
	sel    int  // the overlaid run picked (] and [)
	hilite bool // the picked run drawn over the others, which fade
	detail *runDetail
	w, h   int

	filter    textinput.Model // env:, agent:, name:, tag:, note:, state: or any words
	filtering bool            // the filter has the keyboard
	sortBy    int             // index into sortCols
	sortAsc   bool
	prompt    promptKind // a text field open on a run (name, tags, note)
	promptDir string
	input     promptInput
	confirm   string        // the run directory asked to be deleted, until y or n
	ctl       chartControls // the charts of one run or of runs overlaid
	canvas    chartCanvas
	words     wordsPager // a run's transcripts (T)
}

func newRunsBrowser(sh *shared) Screen {
	f := sh.th.newInput("/", "env: agent: name: tag: note: state:live|done|stopped, or any words")
	in := newPromptInput(sh.th, "> ", "")
	in.CharLimit = 200
	return &runsBrowser{sh: sh, th: sh.th, keys: newRunsListKeys(), chartKeys: newRunsChartKeys(), compareKeys: newCompareKeys(),
		detailKeys: newDetailKeys(), textKeys: newTextKeys("save", "cancel"), filterKeys: newTextKeys("keep filter", "clear filter"),
		deleteKeys: newConfirmKeys("delete", "keep"), cache: &runstore.SummaryCache{}, targets: map[string]int64{},
		filter: f, input: in, ctl: newChartControls(sh), words: newWordsPager(sh.th)}
}

func (r *runsBrowser) Init() tea.Cmd { return nil }
func (r *runsBrowser) Title() string { return "runs" }

// Capturing: the filter or a run's name, tags or note take typed keys.
func (r *runsBrowser) Capturing() bool {
	return r.filtering || r.prompt != promptNone || r.ctl.capturing()
}

// Focus reads the runs directory again each time the browser is shown.
func (r *runsBrowser) Focus() tea.Cmd {
	r.shown = true
	return r.open(r.sh.runsDir)
}

// Blur stops looking again while another screen shows.
func (r *runsBrowser) Blur() { r.shown = false }

// open shows the list of runs under dir, reloading it.
func (r *runsBrowser) open(dir string) tea.Cmd {
	if dir != r.dir {
		r.marked, r.listCursor, r.runs, r.all, r.live = nil, listCursor{}, nil, nil, nil
	}
	r.gen++
	r.dir, r.loading, r.problem = dir, true, ""
	if !r.asked {
		r.mode = runsList
	}
	r.confirm, r.prompt, r.filtering, r.unread = "", promptNone, false, nil
	r.filter.Blur()
	r.input.Blur()
	return listRunsCmd(dir, r.gen, r.sh.host.Live)
}

func (r *runsBrowser) tick() tea.Cmd {
	if r.sh.refresh < 0 || !r.shown {
		return nil
	}
	gen := r.gen
	return tea.Tick(r.sh.refresh, func(time.Time) tea.Msg { return runsTickMsg{gen: gen} })
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
	case transcriptsMsg:
		r.words.show(msg, r.w, r.h)
		return nil
	case runsListedMsg:
		return r.listed(msg)
	case runsSummarizedMsg:
		if msg.dir != r.dir || msg.gen != r.gen {
			return nil
		}
		r.merge(msg.runs, msg.targets)
		if cmd := r.readMore(); cmd != nil {
			return cmd
		}
		r.loading = false
		return r.tick()
	case metaSavedMsg:
		if msg.err != nil {
			r.problem = "cannot save: " + msg.err.Error()
			return nil
		}
		r.cache.Forget(msg.dir)
		for i, run := range r.all {
			if run.Dir == msg.dir {
				r.all[i].Meta = msg.meta
			}
		}
		r.apply()
		return nil
	case runDeletedMsg:
		return r.deleted(msg)
	case runDetailMsg:
		if r.mode == runsDetail {
			r.detail = &msg.d
		}
		return nil
	case runsTickMsg:
		if msg.gen != r.gen || !r.shown {
			return nil // the browser was left: it stops looking
		}
		if r.mode != runsList || r.prompt != promptNone || r.confirm != "" {
			return r.tick() // look again once back at the list
		}
		return refreshRunsCmd(r.cache, r.dir, r.gen, r.all, r.live, r.sh.host.Live)
	case runsLoadedMsg:
		r.opening, r.loaded, r.sel, r.hilite = false, msg.runs, 0, false
		return nil
	case runsProblemMsg:
		r.problem = msg.text
		return nil
	case launchFailedMsg:
		what := "cannot resume: "
		if msg.attached {
			what = "cannot attach: "
		}
		r.problem = what + msg.err.Error()
		return nil
	case exportedMsg:
		r.problem = exportNote(msg)
		return nil
	case showRunsMsg:
		infos := make([]runstore.RunInfo, len(msg.dirs))
		for i, d := range msg.dirs {
			infos[i] = runstore.RunInfo{Dir: d}
		}
		r.mode = runsCompare
		if len(infos) == 1 {
			r.mode = runsOne
		}
		r.asked = true
		r.opening, r.loaded, r.problem = true, nil, ""
		return loadRunsCmd(infos)
	case tea.KeyMsg:
		return r.key(msg)
	default:
		if r.filtering {
			var cmd tea.Cmd
			r.filter, cmd = r.filter.Update(msg)
			return cmd
		}
		if r.prompt != promptNone {
			return r.input.update(msg)
		}
	}
	return nil
}

func (r *runsBrowser) listed(msg runsListedMsg) tea.Cmd {
	if msg.dir != r.dir || msg.gen != r.gen {
		return nil
	}
	r.live, r.err = msg.live, msg.err
	for d, t := range msg.targets {
		r.targets[d] = t
	}
	if msg.partial {
		// Show the runs at once; keep what was read of them before
		// until their summaries (from the cache when unchanged) arrive.
		old := make(map[string]runstore.RunInfo, len(r.all))
		for _, run := range r.all {
			old[run.Dir] = run
		}
		r.unread = make(map[string]bool, len(msg.runs))
		for i, run := range msg.runs {
			if o, ok := old[run.Dir]; ok {
				o.Meta = run.Meta
				msg.runs[i] = o
			}
			r.unread[run.Dir] = true
		}
	}
	r.all = msg.runs
	r.forgetGone()
	r.apply()
	if cmd := r.readMore(); cmd != nil {
		return cmd
	}
	r.loading = false
	return r.tick()
}

func (r *runsBrowser) deleted(msg runDeletedMsg) tea.Cmd {
	switch {
	case errors.Is(msg.err, errLive), errors.Is(msg.err, runstore.ErrInUse):
		if r.live == nil {
			r.live = map[string]bool{}
		}
		r.live[msg.dir] = r.live[msg.dir] || errors.Is(msg.err, errLive)
		r.problem = "not deleted: it is training now; stop it first"
		return nil
	case msg.err != nil:
		r.problem = "not deleted: " + msg.err.Error()
		return nil
	}
	r.cache.Forget(msg.dir)
	r.all = slices.DeleteFunc(r.all, func(run runstore.RunInfo) bool { return run.Dir == msg.dir })
	r.forgetGone()
	r.apply()
	r.problem = "deleted " + msg.dir
	return send(forgetRunMsg{dir: msg.dir}) // the dashboard lets go of it too
}

// forgetGone forgets the marks of runs that are gone.
func (r *runsBrowser) forgetGone() {
	var keep []string
	for _, d := range r.marked {
		for _, run := range r.all {
			if run.Dir == d {
				keep = append(keep, d)
			}
		}
	}
	r.marked = keep
}

// key handles a key in the view on show.
func (r *runsBrowser) key(msg tea.KeyMsg) tea.Cmd {
	if r.words.open {
		return r.words.key(msg)
	}
	switch r.mode {
	case runsOne, runsCompare:
		return r.chartKey(msg)
	case runsDetail:
		switch {
		case key.Matches(msg, r.detailKeys.Back):
			r.mode, r.detail, r.problem = runsList, nil, ""
		case key.Matches(msg, r.detailKeys.Resume) && r.detail != nil:
			return r.resume(r.detail.info.Dir)
		}
		return nil
	}
	return r.updateList(msg)
}

// chartKey handles a key over one run's curves or runs overlaid.
func (r *runsBrowser) chartKey(msg tea.KeyMsg) tea.Cmd {
	if ok, cmd := r.ctl.key(msg, r.metrics()); ok {
		r.problem = ""
		return cmd
	}
	k := r.compareKeys
	n := len(r.loaded)
	switch {
	case key.Matches(msg, k.Export) && !r.opening && n > 0:
		r.problem = "saving…"
		return r.export()
	case key.Matches(msg, k.Back):
		r.mode, r.loaded, r.detail, r.problem = runsList, nil, nil, ""
		if r.asked {
			r.asked = false
			return send(backMsg{fallback: scrRuns})
		}
	case r.mode != runsCompare || n == 0:
	case key.Matches(msg, k.NextRun):
		r.sel = (r.sel + 1) % n
	case key.Matches(msg, k.PrevRun):
		r.sel = (r.sel + n - 1) % n
	case key.Matches(msg, k.Hide):
		r.loaded[r.sel].hidden = !r.loaded[r.sel].hidden
	case key.Matches(msg, k.Highlight):
		r.hilite = !r.hilite
		r.loaded[r.sel].hidden = false
	}
	return nil
}

// resume continues a stopped run from its latest checkpoint, if it has
// one, and watches it.
func (r *runsBrowser) resume(dir string) tea.Cmd {
	if r.live[dir] {
		return send(attachRunMsg{dir: dir, from: scrRuns})
	}
	if !hasCheckpoint(dir) {
		r.problem = "cannot resume: it has no checkpoint (it stopped before its first); start a new run instead"
		return nil
	}
	r.problem = "resuming…"
	return send(attachRunMsg{dir: dir, resume: true, from: scrRuns})
}

// hasCheckpoint reports whether a run directory holds a checkpoint to
// resume from.
func hasCheckpoint(dir string) bool {
	cks, err := runstore.Checkpoints(filepath.Join(dir, runstore.CheckpointsDir))
	return err == nil && len(cks) > 0
}

func (r *runsBrowser) updateList(msg tea.KeyMsg) tea.Cmd {
	k := r.keys
	r.problem = ""
	switch {
	case r.filtering:
		switch {
		case msg.Type == tea.KeyEnter:
			r.filtering = false
			r.filter.Blur()
		case msg.Type == tea.KeyEsc:
			r.filtering = false
			r.filter.Blur()
			r.filter.SetValue("")
		default:
			var cmd tea.Cmd
			r.filter, cmd = r.filter.Update(msg)
			r.apply()
			return cmd
		}
		r.apply()
		return nil
	case r.prompt != promptNone:
		switch msg.Type {
		case tea.KeyEnter:
			return r.savePrompt()
		case tea.KeyEsc:
			r.prompt = promptNone
			r.input.Blur()
			return nil
		}
		return r.input.update(msg)
	case r.confirm != "":
		d := r.confirm
		r.confirm = ""
		if key.Matches(msg, r.deleteKeys.Yes) {
			return deleteRunCmd(d, r.sh.host.Live)
		}
		return nil
	}
	n := len(r.runs)
	switch {
	case key.Matches(msg, k.Filter):
		r.filtering = true // a new filter each time, as in the picker and the editor
		r.filter.SetValue("")
		r.apply()
		return r.filter.Focus()
	case key.Matches(msg, k.Sort):
		r.sortBy = (r.sortBy + 1) % len(sortCols)
		name := sortCols[r.sortBy].name
		r.sortAsc = name == "name" || name == "env" || name == "agent" // words A–Z, numbers high first
		r.apply()
		return nil
	case key.Matches(msg, k.SortReverse):
		r.sortAsc = !r.sortAsc
		r.apply()
		return nil
	case r.move(k.navKeys, msg, n, r.rows()):
	case key.Matches(msg, k.Refresh):
		return r.open(r.dir)
	case key.Matches(msg, k.Back) && r.filter.Value() != "":
		r.filter.SetValue("") // esc clears the filter first
		r.apply()
		return nil
	case key.Matches(msg, k.Back):
		return send(backMsg{})
	case n == 0:
		return nil
	case key.Matches(msg, k.Delete):
		run := r.runs[r.cursor]
		if r.live[run.Dir] {
			r.problem = "not deleted: it is training now; stop it first (a attaches)"
			return nil
		}
		r.confirm = run.Dir
		return nil
	case key.Matches(msg, k.Rename):
		r.openPrompt(promptName)
		return r.input.Focus()
	case key.Matches(msg, k.Tag):
		r.openPrompt(promptTags)
		return r.input.Focus()
	case key.Matches(msg, k.Note):
		r.openPrompt(promptNote)
		return r.input.Focus()
	case key.Matches(msg, k.Details):
		r.mode, r.detail = runsDetail, nil
		return loadDetailCmd(r.runs[r.cursor].Dir)
	case key.Matches(msg, k.Mark):
		d := r.runs[r.cursor].Dir
		if i := r.isMarked(d); i > 0 {
			r.marked = append(r.marked[:i-1], r.marked[i:]...)
		} else {
			r.marked = append(r.marked, d)
		}
		r.cursor = min(r.cursor+1, n-1)
	case key.Matches(msg, k.Watch):
		return send(gotoMsg{to: scrWatch, msg: watchRunMsg{dir: r.runs[r.cursor].Dir}})
	case key.Matches(msg, k.Words):
		run := r.runs[r.cursor]
		return readTranscriptsCmd(run.Dir, filepath.Base(run.Dir))
	case key.Matches(msg, k.Attach):
		d := r.runs[r.cursor].Dir
		if !r.live[d] {
			r.problem = "not training now; r resumes it from its latest checkpoint"
			return nil
		}
		return send(attachRunMsg{dir: d, from: scrRuns})
	case key.Matches(msg, k.Resume):
		return r.resume(r.runs[r.cursor].Dir)
	case key.Matches(msg, k.Open):
		r.mode, r.opening, r.loaded = runsOne, true, nil
		return loadRunsCmd([]runstore.RunInfo{r.runs[r.cursor]})
	case key.Matches(msg, k.Compare):
		var infos []runstore.RunInfo
		for _, d := range r.marked { // marked under any filter
			for _, run := range r.all {
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
		r.opening, r.loaded = true, nil
		return loadRunsCmd(infos)
	}
	r.scroll()
	return nil
}

func (r *runsBrowser) SetSize(w, h int) {
	r.w, r.h = w, h
	if r.words.open {
		r.words.resize(w, h)
	}
	r.scroll()
}

// rows is how many runs fit: title and heading take two lines, and the
// preview of the highlighted run takes the last one.
func (r *runsBrowser) rows() int { return max(r.h-3, 1) }

func (r *runsBrowser) scroll() { r.follow(len(r.runs), r.rows()) }

func (r *runsBrowser) View() string {
	if r.words.open {
		return r.words.view()
	}
	if r.ctl.picking && (r.mode == runsOne || r.mode == runsCompare) {
		return r.ctl.viewPicker(r.w, r.h, r.last)
	}
	switch r.mode {
	case runsOne:
		return r.viewOne()
	case runsCompare:
		return r.viewCompare()
	case runsDetail:
		return r.viewDetail()
	}
	return r.viewList()
}

func fmtReturn(f trainer.Float) string {
	if math.IsNaN(float64(f)) {
		return "-"
	}
	return num(float64(f))
}

// shortLabel is a run's name for a list w cells wide that has no room for
// a start column: the start (kept whole: it tells apart runs of the same
// environment and agent) and what follows the time stamp in its
// directory's name, cut in the middle; or its given name.
func shortLabel(run runstore.RunInfo, w int) string {
	if run.Meta.Name != "" {
		return cutMiddle(run.Meta.Name, w)
	}
	name := run.Name
	sweepName, base := "", name
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		sweepName, base = name[:i+1], name[i+1:]
	}
	if len(base) > 16 && base[8] == '-' && base[15] == '-' && w > 20 {
		start := run.Started.Format("01-02 15:04") + " "
		return start + cutMiddle(sweepName+base[16:], w-len(start))
	}
	return cutMiddle(name, w)
}

func (r *runsBrowser) viewList() string {
	th := r.th
	var b strings.Builder
	var extra []string
	if len(r.unread) > 0 {
		extra = append(extra, th.Warn.Render(fmt.Sprintf("reading %d/%d…", len(r.all)-len(r.unread), len(r.all))))
	}
	if q := strings.TrimSpace(r.filter.Value()); q != "" && !r.filtering {
		extra = append(extra, th.Good.Render(fmt.Sprintf("filter %q %d of %d", q, len(r.runs), len(r.all))))
	}
	extra = append(extra, th.Dim.Render("sort "+r.sortLabel()))
	if n := r.liveCount(); n > 0 {
		extra = append(extra, th.Good.Render(fmt.Sprintf("%d training now %c", n, liveMark)))
	}
	if len(r.marked) > 0 {
		extra = append(extra, th.Dim.Render(fmt.Sprintf("%d marked", len(r.marked))))
	}
	tail := ""
	for _, e := range extra {
		tail += th.Dim.Render(" · ") + e
	}
	title := th.Title.Render("Runs") + " " + th.Dim.Render("in "+cutLeft(r.dir, max(r.w-lipgloss.Width(tail)-8, 10)))
	b.WriteString(cut(title+tail, r.w) + "\n")
	// Columns never touch (each keeps a blank cell, a sort arrow too) and
	// a run's name is cut in its middle, keeping the suffix that tells runs
	// apart. Wide screens split the name into date, env and agent; narrower
	// ones show the start and the rest of the name, and the numbers.
	wide := r.w >= 110
	numW := 10
	if wide {
		numW = 9 // a return's digits and a blank; the name takes the rest
	}
	heading := func(s string, w int) string {
		if strings.EqualFold(s, sortCols[r.sortBy].name) {
			s += map[bool]string{true: "↑", false: "↓"}[r.sortAsc]
		}
		return fitLine(cut(s, w-1), w)
	}
	stepsW := numW + 2 // "2.24M/50M" and a blank
	var head string
	nameW := max(r.w-5-2*numW-stepsW, 12)
	envW := 0
	if wide {
		envW = min(20, max(r.w-5-17-9-3*numW-stepsW-6-20, 12))
		nameW = max(r.w-5-17-envW-9-2*numW-stepsW-7, 12)
		head = "     " + heading("STARTED", 17) + heading("ENV", envW) + heading("AGENT", 9) +
			heading("STEPS", stepsW) + heading("BEST", numW) + heading("LAST", numW) + heading("EDITS", 7) + heading("NAME", nameW)
	} else {
		head = "     " + heading("NAME", nameW) + heading("STEPS", stepsW) + heading("BEST", numW) + heading("LAST", numW)
	}
	col := func(s string, w int) string { return fitLine(cut(s, w-1), w) }
	b.WriteString(th.Heading.Render(fitLine(head, r.w)) + "\n")
	switch {
	case r.loading && len(r.all) == 0:
		b.WriteString(th.Dim.Render("  reading runs…"))
	case r.err != nil:
		b.WriteString(th.Bad.Render(cut("  "+r.err.Error(), r.w)))
	case len(r.all) == 0:
		b.WriteString(th.Dim.Render("  no runs yet under " + r.dir + ": start one from the picker"))
	case len(r.runs) == 0:
		b.WriteString(th.Dim.Render(cut(fmt.Sprintf("  none of the %d runs passes the filter; esc clears it", len(r.all)), r.w)))
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
		if run.TotalSteps > 0 && r.runState(run) != "done" {
			stepsCol += "/" + steps(float64(run.TotalSteps))
		}
		best, last, edits := fmtReturn(run.Best), fmtReturn(run.Last), fmt.Sprint(run.Edits)
		if r.unread[run.Dir] && run.Iters == 0 && run.EnvID == "" {
			stepsCol, best, last, edits = "…", "…", "…", "…"
		}
		var line string
		if wide {
			line = string(mark) + col(run.Started.Format("2006-01-02 15:04"), 17) + col(run.EnvID, envW) + col(run.Agent, 9) +
				col(stepsCol, stepsW) + col(best, numW) + col(last, numW) +
				col(edits, 7) + cutMiddle(run.Label(), nameW)
		} else {
			line = string(mark) + col(shortLabel(run, nameW-1), nameW) + col(stepsCol, stepsW) +
				col(best, numW) + cut(last, numW)
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
	return fit(body+"\n"+cut(r.foot(), r.w), r.w, r.h)
}

// foot is the list's last line: the text field or question at hand, the
// last problem, else what there is to know about the highlighted run.
func (r *runsBrowser) foot() string {
	th := r.th
	var cur *runstore.RunInfo
	if r.cursor < len(r.runs) {
		cur = &r.runs[r.cursor]
	}
	switch {
	case r.filtering:
		return r.filter.View()
	case r.prompt != promptNone:
		return r.input.View()
	case r.confirm != "":
		name := filepath.Base(r.confirm)
		if cur != nil && cur.Dir == r.confirm {
			name = cur.Label()
		}
		return th.Warn.Render("Delete "+cutMiddle(name, max(r.w-50, 12))+" and all its files?") + th.Dim.Render(" y deletes it · n keeps it")
	case r.problem != "":
		return th.Bad.Render(firstLine(r.problem))
	case cur != nil && r.live[cur.Dir]:
		return th.Good.Render(string(liveMark)+" training now") + th.Dim.Render(": a attaches to it and opens its dashboard")
	case cur != nil && cur.Err != nil:
		return th.Warn.Render("! " + firstLine(cur.Err.Error()))
	case cur != nil && (len(cur.Meta.Tags) > 0 || cur.Meta.Note != ""):
		s := ""
		if len(cur.Meta.Tags) > 0 {
			s = th.Good.Render("#"+strings.Join(cur.Meta.Tags, " #")) + " "
		}
		return s + cur.Meta.Note
	case cur != nil && r.runState(*cur) == "stopped":
		return th.Dim.Render("stopped at " + steps(float64(cur.Steps)) + " of " + steps(float64(cur.TotalSteps)) + " steps: r resumes it from its latest checkpoint")
	case r.liveCount() > 0:
		return th.Dim.Render(string(liveMark) + " marks runs training now (a attaches) · space marks runs to compare, c compares them")
	}
	return th.Dim.Render("space marks runs to compare; c overlays their curves and diffs their configs")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func (r *runsBrowser) viewOne() string {
	th := r.th
	if r.opening || len(r.loaded) == 0 {
		return fit(th.Dim.Render("reading the run…"), r.w, r.h)
	}
	run := r.loaded[0]
	info := run.info
	var b strings.Builder
	b.WriteString(th.Title.Render(cut(info.Label(), r.w)) + "\n")
	facts := fmt.Sprintf("%s · %s · %s of %s steps · %s · best %s · last %s · %s",
		info.EnvID, info.Agent, thousands(info.Steps), thousands(info.TotalSteps), plural(info.Iters, "iteration", "iterations"),
		fmtReturn(info.Best), fmtReturn(info.Last), plural(len(run.edits), "live edit", "live edits"))
	b.WriteString(th.Dim.Render(cut(facts, r.w)) + "\n")
	if run.err != nil {
		b.WriteString(th.Warn.Render(cut("! "+firstLine(run.err.Error()), r.w)) + "\n")
	}
	if r.problem != "" {
		b.WriteString(th.Warn.Render(cut(r.problem, r.w)) + "\n")
	}
	if r.ctl.ranging {
		b.WriteString(r.ctl.viewRange(r.w) + "\n")
	}
	used := strings.Count(b.String(), "\n")
	if r.sh.chart.grid {
		b.WriteString(r.charts(r.w, max(r.h-used, 4)))
		return fit(b.String(), r.w, r.h)
	}
	// The return's own figures are in the facts line above.
	sparks := runMetrics(run.hist, func(m runstore.Metric) bool { return sparkMetric(m) && m.Band[0] == "" })
	sparkRows := len(sparks)
	if r.h-used-sparkRows < 8 {
		sparkRows = max(min(r.h-used-8, sparkRows), 0)
	}
	chartH := max(r.h-used-sparkRows, 4)
	b.WriteString(r.charts(r.w, chartH))
	sw := max(r.w-30, 8)
	for _, s := range sparks[:sparkRows] {
		// The figure is the last record's, as the dashboard's: the
		// sparkline averages, the number does not.
		b.WriteString("\n" + th.Dim.Render(fitLine(s.Label, 15)) + fitLine(num(run.hist.last(s.Name)), 12) + " " + th.Curve.Render(sparkline(run.hist.values(s.Name), sw)))
	}
	return fit(b.String(), r.w, r.h)
}

func (r *runsBrowser) viewCompare() string {
	th := r.th
	if r.opening || len(r.loaded) == 0 {
		return fit(th.Dim.Render("reading the runs…"), r.w, r.h)
	}
	var b strings.Builder
	title := th.Title.Render(fmt.Sprintf("Comparing %d runs", len(r.loaded)))
	if hidden := r.hiddenCount(); hidden > 0 {
		title += th.Dim.Render(fmt.Sprintf(" · %d hidden", hidden))
	}
	b.WriteString(title + "\n")
	if r.problem != "" {
		b.WriteString(th.Warn.Render(cut(r.problem, r.w)) + "\n")
	}
	if r.ctl.ranging {
		b.WriteString(r.ctl.viewRange(r.w) + "\n")
	}
	used := strings.Count(b.String(), "\n")
	legend := r.legend()
	diff := configDiff(r.loaded)
	diffRows := 0
	if len(diff) > 0 {
		diffRows = min(len(r.loaded)+1, max((r.h-used-len(legend))/3, 2))
		if len(r.loaded) <= 4 {
			diffRows = min(len(diff)+1, max((r.h-used-len(legend))/3, 2))
		}
	}
	if len(diff) == 0 {
		diffRows = 1
	}
	chartH := max(r.h-used-len(legend)-diffRows, 4)
	b.WriteString(r.charts(r.w, chartH) + "\n")
	b.WriteString(strings.Join(legend, "\n") + "\n")
	if len(diff) == 0 {
		b.WriteString(th.Dim.Render("configs are identical"))
		return fit(b.String(), r.w, r.h)
	}
	b.WriteString(strings.Join(r.diffTable(diff, diffRows), "\n"))
	return fit(b.String(), r.w, r.h)
}

func (r *runsBrowser) hiddenCount() int {
	n := 0
	for _, run := range r.loaded {
		if run.hidden {
			n++
		}
	}
	return n
}

// legend names the overlaid runs, the picked one marked; many runs share
// lines.
func (r *runsBrowser) legend() []string {
	th := r.th
	items := make([]string, len(r.loaded))
	for i, run := range r.loaded {
		st := th.Palette[i%len(th.Palette)]
		mark := " "
		if i == r.sel {
			mark = "▸"
		}
		state := "" // first, where a narrow screen does not cut it
		switch {
		case run.hidden:
			state = "(hidden) "
		case r.hilite && i == r.sel:
			state = "(highlighted) "
		}
		items[i] = mark + st.Render(fmt.Sprintf("%d ━━", i+1)) + " " + state + fmt.Sprintf("%s  %s steps  best %s  last %s",
			run.info.Label(), steps(float64(run.info.Steps)), fmtReturn(run.info.Best), fmtReturn(run.info.Last))
	}
	if len(items) <= 6 {
		for i := range items {
			items[i] = cut(items[i], r.w)
		}
		return items
	}
	// Many runs: two or three to a line, names cut in the middle.
	cols := max(r.w/40, 1)
	cw := r.w / cols
	var out []string
	for i := 0; i < len(items); i += cols {
		line := ""
		for j := i; j < min(i+cols, len(items)); j++ {
			line += fitLine(cut(items[j], cw-1), cw)
		}
		out = append(out, line)
	}
	return out
}

// diffTable shows the config differences in rows lines: a key a row with
// a column a run for a few runs; a run a row with a column a key for many
// (sixteen trials' learning rates side by side), numbers in four digits.
func (r *runsBrowser) diffTable(diff []diffRow, rows int) []string {
	th := r.th
	var out []string
	if len(r.loaded) <= 4 {
		colW := max((r.w-22)/len(r.loaded), 6)
		head := fitLine("config differences", 22)
		for i := range r.loaded {
			head += fitLine(fmt.Sprint(i+1), colW)
		}
		out = append(out, th.Heading.Render(cut(head, r.w)))
		for i, row := range diff {
			if i+2 >= rows && len(diff)-i > 1 { // the heading takes a line
				out = append(out, th.Dim.Render(fmt.Sprintf("… and %d more", len(diff)-i)))
				break
			}
			line := fitLine(cut(row.key, 21), 22)
			for _, v := range row.values {
				line += fitLine(cut(v, colW-1), colW)
			}
			out = append(out, cut(line, r.w))
		}
		return out
	}
	colW := 12
	cols := max((r.w-4)/colW, 1)
	head := "#   "
	for _, row := range diff[:min(len(diff), cols)] {
		head += fitLine(cut(shortKey(row.key), colW-1), colW)
	}
	out = append(out, th.Heading.Render(cut(head, r.w)))
	for i := range r.loaded {
		if i+2 >= rows && len(r.loaded)-i > 1 {
			out = append(out, th.Dim.Render(fmt.Sprintf("… and %d more runs", len(r.loaded)-i)))
			break
		}
		line := th.Palette[i%len(th.Palette)].Render(fitLine(fmt.Sprint(i+1), 4))
		for _, row := range diff[:min(len(diff), cols)] {
			line += fitLine(cut(row.values[i], colW-1), colW)
		}
		out = append(out, cut(line, r.w))
	}
	return out
}

// diffRow is one config key whose value differs between compared runs.
type diffRow struct {
	key    string
	values []string
}

// configDiff lists the keys whose values differ between the runs' configs
// (run names and directories are expected to differ and are left out);
// numbers are printed to four significant digits.
func configDiff(runs []loadedRun) []diffRow {
	var out []diffRow
	for _, k := range config.Schema() {
		if k.Name == "trainer.name" || k.Name == "trainer.runs_dir" {
			continue
		}
		row := diffRow{key: k.Name}
		same := true
		for i, run := range runs {
			v, err := run.cfg.Get(k.Name)
			s := "?"
			if err == nil {
				s = paramValue(v)
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
	switch {
	case r.words.open:
		return r.words.help()
	case (r.mode == runsOne || r.mode == runsCompare) && r.ctl.help() != nil:
		return *r.ctl.help()
	case r.mode == runsOne:
		return r.chartKeys
	case r.mode == runsCompare:
		return r.compareKeys
	case r.mode == runsDetail:
		return r.detailKeys
	case r.filtering:
		return r.filterKeys
	case r.prompt != promptNone:
		return r.textKeys
	case r.confirm != "":
		return r.deleteKeys
	}
	return r.keys
}

func (r *runsBrowser) KeyMaps() []help.KeyMap {
	return []help.KeyMap{r.keys, r.chartKeys, r.compareKeys, r.detailKeys, r.textKeys, r.filterKeys, r.deleteKeys, metricPickKeys, rangeKeys}
}
