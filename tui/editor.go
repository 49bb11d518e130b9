package tui

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/agenttrainer/agenttrainer/trainer/config"
)

const scrEditor screenID = "config"

// editorKeys are the config editor's bindings before a run.
type editorKeys struct {
	navKeys
	Edit, Reset, ResetAll, Start, Filter, Back key.Binding
}

func newEditorKeys() editorKeys {
	return editorKeys{navKeys: newNavKeys(),
		Edit:     bind("enter", "edit", "enter"),
		Reset:    bind("d", "preset value", "d"),
		ResetAll: bind("R", "all to preset", "R"),
		Start:    bind("s", "start training", "s"),
		Filter:   bind("/", "filter", "/"),
		Back:     bind("esc", "back", "esc"),
	}
}

func (k editorKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Start, k.Edit, k.Reset, k.ResetAll, k.Filter, k.Back}
}

func (k editorKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{k.navKeys.group(), {k.Start, k.Edit, k.Reset, k.ResetAll, k.Filter, k.Back}}
}

// liveEditorKeys are the editor's bindings on a running training.
type liveEditorKeys struct {
	navKeys
	Edit, Reset, Filter, Back key.Binding
}

func newLiveEditorKeys() liveEditorKeys {
	return liveEditorKeys{navKeys: newNavKeys(),
		Edit:   bind("enter", "edit live", "enter"),
		Reset:  bind("d", "send the preset value", "d"),
		Filter: bind("/", "filter", "/"),
		Back:   bind("esc", "dashboard", "esc"),
	}
}

func (k liveEditorKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Edit, k.Reset, k.Filter, k.Back}
}

func (k liveEditorKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{k.navKeys.group(), k.ShortHelp()}
}

// Messages of the editor.
type (
	// openEditorMsg opens the editor: on the draft when live is nil, else
	// on a running training's config.
	openEditorMsg struct {
		cfg   config.Config
		live  Trainer
		title string
	}
	// editDoneMsg is the trainer's answer to a live edit.
	editDoneMsg struct {
		key, raw string
		err      error
		cfg      config.Config // the run's config after the edit (when err is nil)
	}
)

// editor shows every config key with its value, type, preset value, doc
// and whether it may change while training, and edits values in place with
// the command line's validation. Before a run it edits the draft (the
// pending config every screen reads); during a run (live) it sends edits of
// live keys to the trainer and shows restart-only keys as locked.
type editor struct {
	sh         *shared
	th         *theme
	keys       editorKeys
	liveKeys   liveEditorKeys
	editKeys   textKeys
	filterKeys textKeys
	schema     []config.Key

	live      Trainer // nil before a run starts
	liveCfg   config.Config
	liveTitle string

	shown []int // schema indices passing the filter, best match first
	listCursor
	input     promptInput
	editing   bool
	filter    textinput.Model
	filtering bool

	errs     map[string]string // key → why the last edit of it was refused
	problems map[string]string // key → what Validate says about the whole config
	note     string            // the outcome of the last action
	inFlight string            // live edit awaiting the trainer's answer
	w, h     int
}

func newEditor(sh *shared) Screen {
	th := sh.th
	e := &editor{sh: sh, th: th, keys: newEditorKeys(), liveKeys: newLiveEditorKeys(),
		editKeys: newTextKeys("apply", "cancel"), filterKeys: newTextKeys("keep filter", "clear filter"),
		schema: config.Schema(), input: newPromptInput(th, "", ""), filter: th.newInput("/", "filter keys (fuzzy)"),
		errs: map[string]string{}, problems: map[string]string{}}
	e.refilter()
	e.validate()
	return e
}

func (e *editor) Init() tea.Cmd { return nil }
func (e *editor) Title() string { return "config" }

// Capturing: a value or the filter is being typed.
func (e *editor) Capturing() bool { return e.editing || e.filtering }

// config is what the editor shows: the draft, or the running training's.
func (e *editor) config() *config.Config {
	if e.live != nil {
		return &e.liveCfg
	}
	return &e.sh.draft.cfg
}

// Focus shows the draft again when the editor was left on a run that has
// ended meanwhile; a draft's problems are looked at afresh.
func (e *editor) Focus() tea.Cmd {
	e.validate()
	return nil
}

// open starts editing the draft (live nil) or a running training's config.
func (e *editor) open(msg openEditorMsg) {
	e.live, e.liveCfg, e.liveTitle = msg.live, msg.cfg.Clone(), msg.title
	e.editing, e.note, e.inFlight = false, "", ""
	e.input.Blur()
	e.filtering = false
	e.filter.Blur()
	e.filter.SetValue("")
	e.refilter()
	clear(e.errs)
	e.validate()
}

func (e *editor) current() (config.Key, bool) {
	if e.cursor < 0 || e.cursor >= len(e.shown) {
		return config.Key{}, false
	}
	return e.schema[e.shown[e.cursor]], true
}

// refilter matches key names fuzzily (lrate finds ppo.learning_rate) and
// their docs as plain text, best first; the cursor stays on its key.
func (e *editor) refilter() {
	cur, _ := e.current()
	e.shown = fuzzyFilter(e.filter.Value(), len(e.schema),
		func(i int) string { return e.schema[i].Name }, func(i int) string { return e.schema[i].Doc })
	e.cursor = 0
	if strings.TrimSpace(e.filter.Value()) == "" {
		for i, idx := range e.shown {
			if e.schema[idx].Name == cur.Name {
				e.cursor = i
			}
		}
	}
	e.scroll()
}

// validate records what Validate says about the config as a whole, keyed by
// the key each problem names, so the rows can show them.
func (e *editor) validate() {
	clear(e.problems)
	if e.live != nil {
		return // the trainer validates live edits itself
	}
	for _, err := range flatten(e.config().Validate()) {
		var ce *config.Error
		if errors.As(err, &ce) {
			e.problems[ce.Key] = err.Error()
		} else {
			e.problems[""] = err.Error()
		}
	}
}

// flatten splits an errors.Join tree into its leaves.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// locked reports whether a key cannot change now.
func (e *editor) locked(k config.Key) bool { return e.live != nil && !k.Live }

// changeable returns the key under the cursor if it may be changed now,
// and otherwise says why next to it.
func (e *editor) changeable() (config.Key, bool) {
	k, ok := e.current()
	if ok && e.locked(k) {
		e.errs[k.Name] = fmt.Sprintf("%s: %s", k.Name, lockedMsg)
		return k, false
	}
	return k, ok
}

func (e *editor) value(k config.Key) string {
	v, err := e.config().Get(k.Name)
	if err != nil {
		return "?"
	}
	return formatValue(v)
}

// changed reports whether the user changed key k: in the draft, a key
// set in the editor (a preset's value is no change); live, a value other
// than the preset's.
func (e *editor) changed(k config.Key) bool {
	if e.live == nil {
		return e.sh.draft.isChanged(k.Name)
	}
	return e.value(k) != e.baseValue(k)
}

// baseValue is what key k holds before the user changes anything: the
// environment's preset under the user's file and overrides.
func (e *editor) baseValue(k config.Key) string {
	if e.live == nil {
		return e.sh.draft.baseValue(k.Name)
	}
	return formatValue(presetDefault(e.liveCfg.Env.ID, k))
}

// presetBases caches config.ForEnv by env id: the live editor asks for
// every key it draws.
var presetBases sync.Map

// presetDefault is key k's value in config.ForEnv(envID).
func presetDefault(envID string, k config.Key) any {
	cached, ok := presetBases.Load(envID)
	if !ok {
		cfg, err := config.ForEnv(envID)
		if err != nil {
			return k.Default
		}
		cached, _ = presetBases.LoadOrStore(envID, cfg)
	}
	base := cached.(config.Config)
	if v, err := base.Get(k.Name); err == nil {
		return v
	}
	return k.Default
}

func (e *editor) changedCount() int {
	if e.live == nil {
		return len(e.sh.draft.changedKeys())
	}
	n := 0
	for _, k := range e.schema {
		if e.changed(k) {
			n++
		}
	}
	return n
}

func (e *editor) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case editDoneMsg:
		return e.editDone(msg)
	case openEditorMsg:
		e.open(msg)
		return nil
	case launchFailedMsg:
		e.startFailed(msg.err)
		return nil
	case runEndedMsg:
		if e.live == nil || e.live != msg.t {
			return nil
		}
		e.open(openEditorMsg{})
		return send(backMsg{fallback: scrDashboard})
	case tea.KeyMsg:
		switch {
		case e.editing:
			return e.updateInput(msg)
		case e.filtering:
			return e.updateFilter(msg)
		}
		return e.updateKeys(msg)
	default:
		if e.editing {
			return e.input.update(msg)
		}
	}
	return nil
}

func (e *editor) updateInput(msg tea.KeyMsg) tea.Cmd {
	k, ok := e.current()
	switch {
	case msg.Type == tea.KeyEsc || !ok:
		e.editing = false
		e.input.Blur()
		delete(e.errs, k.Name)
		return nil
	case msg.Type == tea.KeyEnter:
		return e.commit(k, e.input.Value())
	}
	return e.input.update(msg)
}

func (e *editor) updateFilter(msg tea.KeyMsg) tea.Cmd {
	switch msg.Type {
	case tea.KeyEnter:
		e.filtering = false
		e.filter.Blur()
		return nil
	case tea.KeyEsc:
		e.filtering = false
		e.filter.Blur()
		e.filter.SetValue("")
		e.refilter()
		return nil
	case tea.KeyUp, tea.KeyDown:
		e.filtering = false
		e.filter.Blur()
		return e.updateKeys(msg)
	}
	var cmd tea.Cmd
	e.filter, cmd = e.filter.Update(msg)
	e.refilter()
	return cmd
}

func (e *editor) updateKeys(msg tea.KeyMsg) tea.Cmd {
	km := e.keys
	n := len(e.shown)
	switch {
	case e.move(km.navKeys, msg, n, e.rows()):
	case key.Matches(msg, km.Filter):
		e.filtering = true // a new filter each time, as in less and vim
		e.filter.SetValue("")
		e.refilter()
		return e.filter.Focus()
	case key.Matches(msg, km.Edit):
		k, ok := e.changeable()
		if !ok {
			return nil
		}
		e.editing = true
		e.input.fill(e.value(k))
		return e.input.Focus()
	case key.Matches(msg, km.Reset):
		k, ok := e.changeable()
		if !ok {
			return nil
		}
		if e.live != nil {
			return e.commit(k, e.baseValue(k))
		}
		return e.resetKey(k)
	case key.Matches(msg, km.ResetAll) && e.live == nil:
		if err := e.sh.draft.resetAll(); err != nil {
			e.note = "cannot reset: " + err.Error()
			return nil
		}
		clear(e.errs)
		e.validate()
		e.note = "every key back to " + e.sh.draft.cfg.Env.ID + "'s preset"
		return nil
	case key.Matches(msg, km.Start) && e.live == nil:
		return e.start()
	case key.Matches(msg, km.Back):
		if e.filter.Value() != "" {
			e.filter.SetValue("")
			e.refilter()
			return nil
		}
		if e.live != nil {
			e.open(openEditorMsg{})
			return send(backMsg{fallback: scrDashboard})
		}
		return send(backMsg{fallback: scrPicker})
	}
	e.scroll()
	return nil
}

// lockedMsg is shown for restart-only keys while training (the trainer's own
// refusal reads the same).
const lockedMsg = "applies only when a run starts; change it before starting"

// commit applies raw to key k: to the draft as the command line does (an
// unknown environment is refused here, with the nearest names), or through
// the trainer for a live edit.
func (e *editor) commit(k config.Key, raw string) tea.Cmd {
	if e.live != nil {
		t := e.live
		e.inFlight = k.Name
		e.note = fmt.Sprintf("sending %s = %s…", k.Name, raw)
		return func() tea.Msg {
			err := t.Edit(k.Name, raw)
			var cfg config.Config
			if err == nil {
				cfg = t.Config()
			}
			return editDoneMsg{key: k.Name, raw: raw, err: err, cfg: cfg}
		}
	}
	note, err := e.sh.draft.set(k.Name, raw)
	if err != nil {
		e.errs[k.Name] = err.Error() // keep the field open to fix it
		return nil
	}
	e.settled(k, note)
	return nil
}

// resetKey puts k back to its preset value in the draft.
func (e *editor) resetKey(k config.Key) tea.Cmd {
	note, err := e.sh.draft.reset(k.Name)
	if err != nil {
		e.errs[k.Name] = err.Error()
		return nil
	}
	e.settled(k, note)
	return nil
}

// settled closes the field after a change of the draft and says what it
// did.
func (e *editor) settled(k config.Key, note string) {
	e.editing = false
	e.input.Blur()
	delete(e.errs, k.Name)
	e.validate()
	e.note = fmt.Sprintf("%s = %s", k.Name, e.value(k))
	if note != "" {
		e.note += " · " + note
	}
	if n := len(e.problems); n > 0 {
		e.note += " · " + plural(n, "problem", "problems") + " to fix before starting"
	}
}

func (e *editor) editDone(m editDoneMsg) tea.Cmd {
	e.inFlight = ""
	if m.err != nil {
		e.errs[m.key] = m.err.Error()
		e.note = ""
		return nil
	}
	e.liveCfg = m.cfg
	e.editing = false
	e.input.Blur()
	delete(e.errs, m.key)
	k, _ := config.Lookup(m.key)
	e.note = fmt.Sprintf("%s = %s applies from the next iteration", m.key, e.value(k))
	return nil
}

func (e *editor) start() tea.Cmd {
	e.validate()
	if n := len(e.problems); n > 0 {
		e.note = "fix " + plural(n, "problem", "problems") + " before starting (marked !)"
		for i, idx := range e.shown { // show the first one
			if _, bad := e.problems[e.schema[idx].Name]; bad {
				e.cursor = i
				e.scroll()
				break
			}
		}
		return nil
	}
	e.note = "starting…"
	return send(startMsg{cfg: e.sh.draft.config(), from: scrEditor})
}

// startFailed shows why the trainer refused the config, at the key it names.
func (e *editor) startFailed(err error) {
	e.note = "could not start: see the marked key"
	for _, err := range flatten(err) {
		var ce *config.Error
		if errors.As(err, &ce) && ce.Key != "" {
			e.errs[ce.Key] = err.Error()
			for i, idx := range e.shown {
				if e.schema[idx].Name == ce.Key {
					e.cursor = i
				}
			}
			continue
		}
		e.note = "could not start: " + err.Error()
	}
	e.scroll()
}

func (e *editor) SetSize(w, h int) {
	e.w, e.h = w, h
	e.input.Width = max(e.valueWidth()-1, 4)
	e.filter.Width = max(w-4, 4)
	e.scroll()
}

// detailLines is the height of the pane that explains the selected key.
func (e *editor) detailLines() int {
	if e.h < 16 {
		return 2
	}
	return 4
}

// rows is how many keys fit: title, heading and separator take a row each.
func (e *editor) rows() int { return max(e.h-3-e.detailLines(), 1) }

func (e *editor) scroll() { e.follow(len(e.shown), e.rows()) }

// Column widths: marks, key, value, type, preset (wide screens), live.
func (e *editor) keyWidth() int {
	w := 0
	for _, k := range e.schema {
		w = max(w, len(k.Name))
	}
	return min(w, max(e.w/3, 12))
}

func (e *editor) showDefault() bool { return e.w >= 100 }

// typeWidth fits the longest type name ("[]string") and a space.
func (e *editor) typeWidth() int {
	w := len("TYPE")
	for _, k := range e.schema {
		w = max(w, len(k.Type))
	}
	return w + 1
}

func (e *editor) valueWidth() int {
	rest := e.w - 3 - e.keyWidth() - 1 - e.typeWidth() - 8
	if e.showDefault() {
		rest -= 17
	}
	return max(rest, 6)
}

func (e *editor) title() string {
	if e.live != nil {
		return e.liveTitle
	}
	return e.sh.draft.title()
}

func (e *editor) View() string {
	th := e.th
	var b strings.Builder
	mode := "Config"
	if e.live != nil {
		mode = "Live edit"
	}
	head := th.Title.Render(mode) + " " + e.title()
	n := e.changedCount()
	right := plural(n, "key", "keys") + " changed"
	if n == 0 {
		right = "preset values"
	}
	if e.live != nil {
		right = "restart-only keys locked"
	}
	if e.filtering || e.filter.Value() != "" {
		f := "/" + e.filter.Value()
		if e.filtering {
			f += "█"
		}
		right = fmt.Sprintf("%s (%d of %d keys) · %s", f, len(e.shown), len(e.schema), right)
	}
	b.WriteString(fitLine(head, max(e.w-lipgloss.Width(right)-1, 0)) + " " + th.Dim.Render(right) + "\n")

	kw, vw := e.keyWidth(), e.valueWidth()
	heading := "   " + fitLine("KEY", kw) + " " + fitLine("VALUE", vw) + fitLine("TYPE", e.typeWidth())
	if e.showDefault() {
		heading += fitLine("PRESET", 17)
	}
	heading += "APPLIES"
	b.WriteString(th.Heading.Render(fitLine(heading, e.w)) + "\n")

	for i := e.offset; i < len(e.shown) && i < e.offset+e.rows(); i++ {
		b.WriteString(e.row(e.schema[e.shown[i]], i == e.cursor, kw, vw) + "\n")
	}
	for i := len(e.shown) - e.offset; i < e.rows(); i++ {
		if len(e.shown) == 0 && i == 0 {
			b.WriteString(th.Dim.Render("   no key matches the filter"))
		}
		b.WriteString("\n")
	}
	b.WriteString(th.Border.Render(strings.Repeat("─", e.w)) + "\n")
	b.WriteString(e.detail())
	return fit(b.String(), e.w, e.h)
}

func (e *editor) row(k config.Key, selected bool, kw, vw int) string {
	th := e.th
	mark := []rune("   ")
	if selected {
		mark[0] = '▸'
	}
	if e.changed(k) {
		mark[1] = '*'
	}
	if e.errs[k.Name] != "" || e.problems[k.Name] != "" {
		mark[2] = '!'
	}
	val := e.value(k)
	valCell := fitLine(cut(val, vw-1), vw)
	if selected && e.editing {
		valCell = fitLine(e.input.View(), vw)
	}
	applies := "live"
	switch {
	case e.locked(k):
		applies = "locked"
	case !k.Live:
		applies = "restart"
	}
	line := string(mark) + fitLine(cut(k.Name, kw), kw) + " "
	rest := fitLine(k.Type, e.typeWidth())
	if e.showDefault() {
		rest += fitLine(cut(e.baseValue(k), 16), 17)
	}
	rest += applies
	switch {
	case selected && !e.editing:
		return th.Selected.Render(fitLine(line+valCell+rest, e.w))
	case e.locked(k):
		return th.Locked.Render(fitLine(line+valCell+rest, e.w))
	case e.changed(k):
		return fitLine(th.Changed.Render(line+valCell)+th.Dim.Render(rest), e.w)
	}
	return fitLine(line+valCell+th.Dim.Render(rest), e.w)
}

// detail explains the selected key: its doc, type, preset value,
// constraint and when it applies, then the error or note of the moment.
func (e *editor) detail() string {
	th := e.th
	k, ok := e.current()
	if !ok {
		return th.Dim.Render(e.note)
	}
	lines := []string{th.Heading.Render(k.Name) + "  " + cut(k.Doc, max(e.w-len(k.Name)-2, 0))}
	facts := fmt.Sprintf("type %s · default %s", k.Type, e.baseValue(k))
	if b := e.baseValue(k); b != formatValue(k.Default) {
		facts = fmt.Sprintf("type %s · %s here (%s's preset or your config; built-in %s)", k.Type, b, e.config().Env.ID, formatValue(k.Default))
	}
	if c := config.DescribeCheck(k.Check); c != "" {
		facts += " · " + c
	}
	switch {
	case e.locked(k):
		facts += " · locked: " + lockedMsg
	case k.Live:
		facts += " · live: may change while training"
	default:
		facts += " · restart: applies when a run starts"
	}
	if e.detailLines() > 2 {
		lines = append(lines, th.Dim.Render(cut(facts, e.w)))
	}
	status := ""
	switch {
	case e.errs[k.Name] != "":
		status = th.Bad.Render("✗ " + e.errs[k.Name])
	case e.problems[k.Name] != "":
		status = th.Warn.Render("! " + e.problems[k.Name])
	case e.problems[""] != "":
		status = th.Warn.Render("! " + e.problems[""])
	case e.inFlight != "":
		status = th.Dim.Render(e.note)
	case e.note != "":
		status = th.Good.Render(e.note)
	case e.editing:
		status = th.Dim.Render("enter applies, esc cancels; typing replaces the value, ← → edit it; TOML values, bare strings need no quotes")
	}
	lines = append(lines, status)
	// Long messages wrap onto the spare line rather than being cut.
	out := strings.Join(lines, "\n")
	return lipgloss.NewStyle().Width(e.w).Render(out)
}

func (e *editor) Help() help.KeyMap {
	switch {
	case e.editing:
		return e.editKeys
	case e.filtering:
		return e.filterKeys
	case e.live != nil:
		return e.liveKeys
	}
	return e.keys
}

func (e *editor) KeyMaps() []help.KeyMap {
	return []help.KeyMap{e.keys, e.liveKeys, e.editKeys, e.filterKeys}
}
