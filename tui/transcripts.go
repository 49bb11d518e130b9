package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/agenttrainer/agenttrainer/internal/termtext"
	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// A language-model run writes its sampled episodes to transcripts.jsonl
// (runstore.Transcript). The dashboard shows the latest group beside the
// curves; the runs browser pages through them all. Every word in them came
// from a model or an environment, so it reaches the terminal only through
// termtext.

// transcriptTail is how much of the end of a transcripts file the
// dashboard reads for the latest group: the file grows every iteration,
// the group is at its end.
const transcriptTail = 1 << 20

// latestGroup returns the last group the run in dir wrote (its samples in
// order), reading only the end of the file; none when the run has no
// transcripts.
func latestGroup(dir string) ([]runstore.Transcript, error) {
	f, err := os.Open(filepath.Join(dir, runstore.TranscriptsFile))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(st.Size()-transcriptTail, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return nil, err
	}
	if off > 0 { // the first line is cut: skip it
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	var all []runstore.Transcript
	for _, line := range bytes.Split(buf, []byte{'\n'}) {
		var t runstore.Transcript
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &t) != nil {
			continue // a line being written, or not a record
		}
		all = append(all, t)
	}
	if len(all) == 0 {
		return nil, nil
	}
	last := all[len(all)-1]
	var group []runstore.Transcript
	for _, t := range all {
		if t.Iter == last.Iter && t.Group == last.Group && t.Split == last.Split {
			group = append(group, t)
		}
	}
	slices.SortStableFunc(group, func(a, b runstore.Transcript) int { return a.Sample - b.Sample })
	return group, nil
}

// transcriptLines draws transcripts w cells wide: a line for each sample
// (its reward, whether it is right, how it ended), then its messages, the
// model's marked "model│" and the environment's (and the template's)
// " env│", each message's text as the environment or the model wrote it
// (FrozenLake's grid keeps its rows). full shows every message whole
// (system prompts too when sys is set, else their first line); otherwise
// the model's turns, a line each, and the environment's last message.
func transcriptLines(th *theme, ts []runstore.Transcript, w int, full, sys bool) []string {
	var out []string
	for i, t := range ts {
		if i > 0 {
			out = append(out, "")
		}
		mark := th.Bad.Render("✗")
		if t.Correct {
			mark = th.Good.Render("✓")
		}
		head := fmt.Sprintf("#%d %s reward %s · adv %s · %s · %s", t.Sample, mark, num(t.Reward), num(t.Advantage),
			plural(t.Turns, "turn", "turns"), termtext.Clean(t.Termination))
		if !full {
			head = fmt.Sprintf("#%d %s reward %s · %s · %s", t.Sample, mark, num(t.Reward), plural(t.Turns, "turn", "turns"), termtext.Clean(t.Termination))
		}
		out = append(out, cut(th.Heading.Render(head), w))
		lastEnv := -1
		for j, m := range t.Messages {
			if m.Role != "assistant" {
				lastEnv = j
			}
		}
		for j, m := range t.Messages {
			switch {
			case full:
			case m.Role == "system" || m.Role != "assistant" && j != lastEnv:
				continue // beside the curves: the model's turns and where they led
			case m.Role == "assistant":
				m.Content = strings.Join(strings.Fields(m.Content), " ")
			}
			out = append(out, messageLines(th, m, w, full && sys)...)
		}
	}
	return out
}

// messageLines draws one message with its speaker's mark.
func messageLines(th *theme, m runstore.TranscriptTurn, w int, full bool) []string {
	tag, style := " env│", th.Dim
	if m.Role == "assistant" {
		tag, style = "model│", th.Good
	}
	text := strings.TrimRight(termtext.CleanText(expandTabs(m.Content)), "\n ")
	if m.Role == "system" && !full {
		first, _, _ := strings.Cut(text, "\n")
		text = "(system) " + first
	}
	inner := max(w-len(tag)-1, 4)
	var out []string
	for _, line := range strings.Split(text, "\n") {
		for _, part := range strings.Split(ansi.Wrap(line, inner, ""), "\n") {
			body := part
			if m.Role == "assistant" {
				body = style.Render(part)
			}
			out = append(out, cut(style.Render(tag)+" "+body, w))
		}
		if m.Role == "system" && !full {
			break
		}
	}
	if m.Reward != nil {
		out = append(out, cut(th.Dim.Render("     │ ")+"reward "+num(*m.Reward), w))
	}
	return out
}

// expandTabs puts spaces for tabs, to the next multiple of four columns
// of the line, as a terminal would (FrozenLake's rows are tab-separated).
func expandTabs(s string) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	var b strings.Builder
	col := 0
	for _, r := range s {
		switch r {
		case '\t':
			n := 4 - col%4
			b.WriteString(strings.Repeat(" ", n))
			col += n
		case '\n':
			b.WriteRune(r)
			col = 0
		default:
			b.WriteRune(r)
			col++
		}
	}
	return b.String()
}

// groupTitle names a group: its iteration, split and task.
func groupTitle(ts []runstore.Transcript) string {
	if len(ts) == 0 {
		return "transcripts"
	}
	t := ts[0]
	s := fmt.Sprintf("transcripts · iter %d · %s task %s · %s", t.Iter, termtext.Clean(t.Split), termtext.Clean(t.Task), plural(len(ts), "sample", "samples"))
	right := 0
	for _, x := range ts {
		if x.Correct {
			right++
		}
	}
	return s + fmt.Sprintf(" · %d right", right)
}

// wordsCache is the latest group of a run's transcripts as the dashboard
// last read it, read again when the file changes.
type wordsCache struct {
	dir   string
	size  int64
	mtime int64
	group []runstore.Transcript
	err   error
}

// load reads dir's latest group unless the file is as it was.
func (c *wordsCache) load(dir string) {
	st, err := os.Stat(filepath.Join(dir, runstore.TranscriptsFile))
	if err != nil {
		*c = wordsCache{dir: dir}
		return
	}
	if c.dir == dir && c.size == st.Size() && c.mtime == st.ModTime().UnixNano() {
		return
	}
	g, err := latestGroup(dir)
	*c = wordsCache{dir: dir, size: st.Size(), mtime: st.ModTime().UnixNano(), group: g, err: err}
}

// wordsKeys are the transcripts pager's bindings.
type wordsKeys struct {
	navKeys
	PrevIter, NextIter, Correct, AllIters, System, Close key.Binding
}

func newWordsKeys() wordsKeys {
	return wordsKeys{navKeys: newNavKeys(),
		PrevIter: bind("[", "earlier iteration", "["),
		NextIter: bind("]", "later iteration", "]"),
		AllIters: bind("a", "all iterations", "a"),
		Correct:  bind("c", "right/wrong/all", "c"),
		System:   bind("s", "system prompts", "s"),
		Close:    bind("esc", "back", "esc", "T"),
	}
}

func (k wordsKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.PrevIter, k.NextIter, k.AllIters, k.Correct, k.System, k.PageUp, k.PageDown, k.Close}
}

func (k wordsKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{k.navKeys.group(), {k.PrevIter, k.NextIter, k.AllIters, k.Correct, k.System, k.Close}}
}

// wordsPager is a run's transcripts on the full screen, scrolled like a
// log, one iteration at a time or all, right, wrong or every sample.
type wordsPager struct {
	th      *theme
	keys    wordsKeys
	open    bool
	name    string
	all     []runstore.Transcript
	iters   []int // the iterations the run has transcripts of
	iter    int   // index into iters; -1 all of them
	correct int   // 0 all, 1 right only, 2 wrong only
	sys     bool  // system prompts whole (s), not their first line
	problem string
	vp      viewport.Model
	w, h    int
}

func newWordsPager(th *theme) wordsPager {
	return wordsPager{th: th, keys: newWordsKeys(), vp: viewport.New(10, 3)}
}

// transcriptsMsg carries a run's transcripts read for the pager.
type transcriptsMsg struct {
	name string
	ts   []runstore.Transcript
	err  error
}

// readTranscriptsCmd reads the run in dir's transcripts.
func readTranscriptsCmd(dir, name string) tea.Cmd {
	return func() tea.Msg {
		ts, err := runstore.ReadTranscripts(dir)
		return transcriptsMsg{name: name, ts: ts, err: err}
	}
}

// show opens the pager on transcripts read from a run, at its latest
// iteration.
func (p *wordsPager) show(msg transcriptsMsg, w, h int) {
	p.open, p.name, p.all, p.correct, p.problem = true, termtext.Clean(msg.name), msg.ts, 0, ""
	if msg.err != nil {
		p.problem = termtext.Clean(firstLine(msg.err.Error()))
	}
	p.iters = nil
	for _, t := range msg.ts {
		if !slices.Contains(p.iters, t.Iter) {
			p.iters = append(p.iters, t.Iter)
		}
	}
	slices.Sort(p.iters)
	p.iter = len(p.iters) - 1
	p.resize(w, h)
}

func (p *wordsPager) resize(w, h int) {
	p.w, p.h = w, h
	p.vp.Width, p.vp.Height = max(w, 1), max(h-1, 1)
	p.render()
}

// shown are the transcripts the filters let through.
func (p *wordsPager) shown() []runstore.Transcript {
	var out []runstore.Transcript
	for _, t := range p.all {
		if p.iter >= 0 && p.iter < len(p.iters) && t.Iter != p.iters[p.iter] {
			continue
		}
		if p.correct == 1 && !t.Correct || p.correct == 2 && t.Correct {
			continue
		}
		out = append(out, t)
	}
	return out
}

func (p *wordsPager) render() {
	var lines []string
	var group [2]int
	for i, t := range p.shown() {
		if key := [2]int{t.Iter, t.Group}; i == 0 || key != group {
			group = key
			if i > 0 {
				lines = append(lines, "")
			}
			lines = append(lines, p.th.Title.Render(cut(fmt.Sprintf("── iteration %d · %s · group %d · task %s", t.Iter, termtext.Clean(t.Split), t.Group, termtext.Clean(t.Task)), p.w)))
		}
		lines = append(lines, transcriptLines(p.th, []runstore.Transcript{t}, p.w, true, p.sys)...)
	}
	if len(lines) == 0 {
		lines = []string{p.th.Dim.Render("no transcript passes the filters (c: right/wrong/all, a: all iterations)")}
		if len(p.all) == 0 {
			lines = []string{p.th.Dim.Render("this run wrote no transcripts (only language-model runs do)")}
		}
	}
	p.vp.SetContent(strings.Join(lines, "\n"))
	p.vp.GotoTop()
}

func (p *wordsPager) key(km tea.KeyMsg) tea.Cmd {
	k := p.keys
	switch {
	case key.Matches(km, k.Close):
		p.open = false
	case key.Matches(km, k.PrevIter):
		if p.iter < 0 {
			p.iter = len(p.iters) - 1
		} else {
			p.iter = max(p.iter-1, 0)
		}
		p.render()
	case key.Matches(km, k.NextIter):
		if p.iter >= 0 {
			p.iter = min(p.iter+1, len(p.iters)-1)
		}
		p.render()
	case key.Matches(km, k.AllIters):
		p.iter = -1
		p.render()
	case key.Matches(km, k.Correct):
		p.correct = (p.correct + 1) % 3
		p.render()
	case key.Matches(km, k.System):
		p.sys = !p.sys
		p.render()
	default:
		var cmd tea.Cmd
		p.vp, cmd = p.vp.Update(km)
		return cmd
	}
	return nil
}

func (p *wordsPager) view() string {
	th := p.th
	which := "all iterations"
	if p.iter >= 0 && p.iter < len(p.iters) {
		which = fmt.Sprintf("iteration %d (%d of %d)", p.iters[p.iter], p.iter+1, len(p.iters))
	}
	filter := []string{"", " · right only", " · wrong only"}[p.correct]
	title := th.Title.Render("Transcripts") + th.Dim.Render(" · "+which+filter+fmt.Sprintf(" · %d%% · ", int(p.vp.ScrollPercent()*100))) + p.name
	if p.problem != "" {
		title += " " + th.Warn.Render(p.problem)
	}
	return fit(cut(title, p.w)+"\n"+p.vp.View(), p.w, p.h)
}

func (p *wordsPager) help() help.KeyMap { return p.keys }

// hasTranscripts reports whether the run in dir wrote transcripts (a
// language model's run).
func hasTranscripts(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, runstore.TranscriptsFile))
	return err == nil
}

// evaluate is trainer.Evaluate, a failure inside it an error rather than
// the app's end.
func evaluate(ctx context.Context, dir string, o trainer.EvalOptions) (res trainer.EvalResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("evaluating the run in %s failed: %v", dir, p)
		}
	}()
	return trainer.Evaluate(ctx, dir, o)
}

// replayTranscripts plays the latest group of a language-model run's
// transcripts as the watch view plays episodes (when its checkpoint
// cannot be played): a frame a turn, the
// environment's words (FrozenLake's grid) as the drawing and the model's
// answer and the reward under it. These are the trainer's own samples
// (o.Episodes of them at most), not a fresh evaluation.
func replayTranscripts(ctx context.Context, dir string, o trainer.EvalOptions) (trainer.EvalResult, error) {
	group, err := latestGroup(dir)
	if err != nil {
		return trainer.EvalResult{}, err
	}
	if len(group) == 0 {
		return trainer.EvalResult{}, fmt.Errorf("the run in %s has written no transcripts yet", dir)
	}
	if len(group) > o.Episodes && o.Episodes > 0 {
		group = group[:o.Episodes]
	}
	t0 := group[0]
	res := trainer.EvalResult{EnvID: t0.Env, Agent: "lm", HasSuccess: true,
		Tasks: fmt.Sprintf("the samples of iteration %d's group %d (task %s), from transcripts.jsonl", t0.Iter, t0.Group, termtext.Clean(t0.Task))}
	for ep, t := range group {
		var obs string
		step, ret := 0, 0.0
		frames := []trainer.Frame{}
		for _, m := range t.Messages {
			switch m.Role {
			case "system":
			case "assistant":
				step++
				caption := "model: " + termtext.Clean(strings.Join(strings.Fields(m.Content), " "))
				if m.Reward != nil {
					ret += *m.Reward
					caption += "\nreward " + num(*m.Reward)
				}
				frames = append(frames, trainer.Frame{Episode: ep, Step: step, Return: ret, Drawing: obs, Caption: caption + "\n"})
			default:
				obs = strings.TrimRight(termtext.CleanText(expandTabs(m.Content)), "\n ") + "\n"
			}
		}
		end := "ended: " + termtext.Clean(t.Termination)
		frames = append(frames, trainer.Frame{Episode: ep, Step: step, Return: t.Reward, Last: true, Drawing: obs, Caption: end + "\n"})
		for _, f := range frames {
			if err := o.Frame(f); err != nil {
				return res, err
			}
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
		}
		res.Returns = append(res.Returns, t.Reward)
		res.Lengths = append(res.Lengths, float64(t.Turns))
		if t.Correct {
			res.Successes++
		}
	}
	return res, nil
}
