package sweep

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
	"github.com/agenttrainer/agenttrainer/internal/inputfile"
	"github.com/agenttrainer/agenttrainer/internal/termtext"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// Trial states in sweep.jsonl.
const (
	Pending     = "pending"
	Running     = "running"
	Done        = "done"
	Failed      = "failed"
	Stopped     = "stopped"     // early stopping (or a stop from outside) ended it; its files are kept
	Interrupted = "interrupted" // the sweep was interrupted; --resume continues it
	Cancelled   = "cancelled"   // Slurm cancelled it (not by early stopping)
)

// knownStates are the states a record may hold.
var knownStates = map[string]bool{Pending: true, Running: true, Done: true, Failed: true, Stopped: true, Interrupted: true, Cancelled: true}

// Record is one trial's line in sweep.jsonl.
type Record struct {
	Trial      string         `json:"trial"`
	Dir        string         `json:"dir"`
	Seed       int64          `json:"seed"`
	Params     map[string]any `json:"params"`
	State      string         `json:"state"`
	Reason     string         `json:"reason,omitempty"`
	Steps      int64          `json:"steps"`
	Metric     *float64       `json:"metric"` // the last value
	Best       *float64       `json:"best"`   // the best value seen
	Milestones int            `json:"milestones"`
	Starts     int            `json:"starts"`
	Seconds    float64        `json:"seconds"`
	JobID      string         `json:"job_id,omitempty"`
	Slurm      string         `json:"slurm_state,omitempty"`

	started time.Time
	stopReq string
	ms      []runstore.Metrics // read so far
	offset  int64              // of metrics.jsonl read so far
	target  int64              // the steps of a whole run (reachedBudget)
}

// Options configure a sweep.
type Options struct {
	Spec       string   // the spec file (a new sweep)
	ConfigFile string   // --config, under the spec's base
	Overrides  []string // key=value over the spec's base
	Resume     string   // continue the sweep in this directory
	Parallel   int      // > 0: overrides the spec's parallel
	Backend    string   // "local" (default) or "slurm"
	Exe        string   // the agenttrainer executable the trials run
	Cores      int      // this machine's cores
	Poll       time.Duration
	Out        io.Writer
	Slurm      SlurmSpec // flags over the spec's [slurm]
}

// Sweep is a checked sweep, ready to run.
type Sweep struct {
	Spec    *Spec
	Dir     string
	Records []*Record
	configs []config.Config // per trial; nil on resume (read from trial.toml)
	opts    Options
	resumed bool
	st      *Stopper
}

// Prepare reads and checks everything and creates nothing: a mistake in
// the spec, the config or any trial's values is a *config.Error. Its
// message may quote the spec, so it is cleaned for a terminal.
func Prepare(o Options) (*Sweep, error) {
	sw, err := prepare(o)
	return sw, termtext.Error(err)
}

func prepare(o Options) (*Sweep, error) {
	if o.Cores <= 0 {
		o.Cores = 1
	}
	if o.Poll == 0 {
		o.Poll = 100 * time.Millisecond
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if err := CheckSlurmFlags(o.Slurm); err != nil {
		return nil, err
	}
	if o.Resume != "" {
		return prepareResume(o)
	}
	spec, err := ParseSpec(o.Spec)
	if err != nil {
		return nil, err
	}
	if o.Backend == "" {
		o.Backend = spec.Backend
	}
	if o.Backend == "" {
		o.Backend = "local"
	}
	base, err := config.ResolveWith(func(c *config.Config) error {
		if o.ConfigFile != "" {
			if err := c.LoadFile(o.ConfigFile); err != nil {
				return err
			}
		}
		if len(spec.Base) > 0 {
			var b bytes.Buffer
			if err := toml.NewEncoder(&b).Encode(spec.Base); err != nil {
				return &config.Error{Source: o.Spec + " [base]", Msg: err.Error()}
			}
			if err := c.LoadTOML(b.String(), o.Spec+" [base]"); err != nil {
				return err
			}
		}
		return c.ApplyArgs(o.Overrides)
	})
	if err != nil {
		return nil, err
	}
	if o.Parallel > 0 {
		spec.Parallel = o.Parallel
	}
	if err := spec.Check(base, o.Spec, o.Cores); err != nil {
		return nil, err
	}
	mergeSlurm(&spec.Slurm, o.Slurm)
	spec.Backend = o.Backend
	trials := spec.Draw()
	threads := max(1, o.Cores/max(1, min(spec.Parallel, len(trials))))
	if o.Backend == "slurm" {
		threads = max(1, spec.Slurm.CPUs)
	}
	sw := &Sweep{Spec: spec, opts: o}
	if spec.Name, err = SpecName(spec, o.Spec); err != nil {
		return nil, err
	}
	sw.Dir = filepath.Join(base.Trainer.RunsDir, spec.Name)
	var errs []error
	for _, t := range trials {
		c, err := TrialConfigFor(base, t, spec.Budget, threads)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sw.configs = append(sw.configs, c)
		sw.Records = append(sw.Records, &Record{Trial: t.ID, Dir: filepath.Join(sw.Dir, t.ID), Seed: t.Seed, Params: t.Params, State: Pending})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := sw.checkBackend(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(sw.Dir, SpecFile)); err == nil {
		return nil, &config.Error{Source: o.Spec, Key: "name", Msg: fmt.Sprintf("%s already holds a sweep; continue it with `agenttrainer sweep --resume %s`, or name this one differently", sw.Dir, sw.Dir)}
	}
	return sw, nil
}

// checkBackend checks what the backend needs of the sweep's paths: a
// Slurm job script names the sweep directory in its directives.
func (sw *Sweep) checkBackend() error {
	if sw.opts.Backend != "slurm" {
		return nil
	}
	abs, err := filepath.Abs(sw.Dir)
	if err != nil {
		return err
	}
	return checkScriptPath(abs, "trainer.runs_dir")
}

func mergeSlurm(s *SlurmSpec, flags SlurmSpec) {
	if flags.Partition != "" {
		s.Partition = flags.Partition
	}
	if flags.Time != "" {
		s.Time = flags.Time
	}
	if flags.CPUs > 0 {
		s.CPUs = flags.CPUs
	}
	if flags.GPUs > 0 {
		s.GPUs = flags.GPUs
	}
	s.Extra = append(s.Extra, flags.Extra...)
}

func prepareResume(o Options) (*Sweep, error) {
	dir := o.Resume
	specPath := filepath.Join(dir, SpecFile)
	spec, err := ParseSpec(specPath)
	if err != nil {
		return nil, err
	}
	if o.Parallel > 0 {
		spec.Parallel = o.Parallel
	}
	base := config.Default()
	if c, err := readTrialConfig(filepath.Join(dir, "trial-000")); err == nil {
		base = c
	}
	if err := spec.Check(base, specPath, o.Cores); err != nil {
		return nil, err
	}
	mergeSlurm(&spec.Slurm, o.Slurm)
	if o.Backend == "" {
		o.Backend = spec.Backend // where it ran before
	}
	if o.Backend == "" {
		o.Backend = "local"
	}
	spec.Backend = o.Backend
	sw := &Sweep{Spec: spec, Dir: dir, opts: o, resumed: true}
	if err := sw.checkBackend(); err != nil {
		return nil, err
	}
	old, err := sw.oldRecords()
	if err != nil {
		return nil, err
	}
	trials := spec.Draw()
	drawn := map[string]bool{}
	for _, t := range trials {
		drawn[t.ID] = true
	}
	for id := range old {
		if !drawn[id] {
			return nil, changedSpec(specPath, fmt.Sprintf("%s has a record of %s, which its trials no longer include", ResultsFile, id))
		}
	}
	for _, t := range trials {
		r := old[t.ID]
		switch {
		case r == nil:
			r = &Record{Trial: t.ID, Seed: t.Seed, Params: t.Params, State: Pending}
			if hasRecords(filepath.Join(dir, t.ID)) {
				// sweep.jsonl lost its record (a torn or missing file), but
				// the trial trained: it continues, or is found done.
				r.State, r.Reason = Interrupted, "its record was lost; continued from its directory"
				sw.logf("%s: no record in %s; continuing it from what its directory holds", t.ID, ResultsFile)
			}
		case r.Seed != t.Seed || !sameParams(r.Params, t.Params):
			return nil, changedSpec(specPath, fmt.Sprintf("%s ran with %s, but the spec now draws %s for it", t.ID, describeParams(r.Params, r.Seed), describeParams(t.Params, t.Seed)))
		}
		r.Reason, r.JobID, r.Slurm = termtext.Clean(r.Reason), termtext.Clean(r.JobID), termtext.Clean(r.Slurm)
		switch {
		case !knownStates[r.State]:
			r.State = Interrupted // what it was is unknown: it continues from its checkpoint, or starts again
		case r.State == Pending && hasRecords(filepath.Join(dir, t.ID)):
			r.State = Interrupted // it started after its record was written: continue it, or start it afresh
		case r.State == Failed || r.State == Cancelled:
			// A failure may have been passing (a full disk, a node that
			// went away): resuming tries again, from the trial's checkpoint
			// when it has one.
			sw.logf("%s %s before (%s); trying it again", t.ID, r.State, r.Reason)
			r.State = Interrupted
		}
		trialDir, err := filepath.Abs(filepath.Join(dir, t.ID))
		if err != nil {
			return nil, err
		}
		if r.JobID != "" && !sameDir(r.Dir, trialDir) {
			// The record's Slurm task ran for another directory (this sweep
			// was copied or moved): it is not this sweep's to cancel.
			r.JobID, r.Slurm = "", ""
		}
		r.Dir = trialDir
		if err := checkOwnDir(r.Dir); err != nil {
			return nil, &config.Error{Source: r.Dir, Msg: fmt.Sprintf("cannot resume this trial: %v", err)}
		}
		if _, err := readTrialConfig(r.Dir); err != nil {
			return nil, &config.Error{Source: filepath.Join(r.Dir, TrialConfig), Msg: fmt.Sprintf("cannot resume this trial: %v", err)}
		}
		sw.Records = append(sw.Records, r)
	}
	return sw, nil
}

// oldRecords reads the records a resumed sweep continues: lines of
// sweep.jsonl that are not records (torn, garbage, binary) are skipped,
// and a missing, empty or unreadable file holds none — the trials'
// directories say what they did. A directory in the file's place is
// refused: the sweep could not write its results.
func (sw *Sweep) oldRecords() (map[string]*Record, error) {
	path := filepath.Join(sw.Dir, ResultsFile)
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, &config.Error{Source: path, Msg: "is a directory, so the sweep cannot write its results there; move it away and resume again (the trials' directories hold what the sweep needs)"}
	}
	recs, err := readResults(sw.Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		sw.logf("note: %v", err)
	}
	old := map[string]*Record{}
	for _, r := range recs {
		old[r.Trial] = r
	}
	return old, nil
}

// changedSpec is the refusal to resume a sweep whose sweep.toml no longer
// draws the trials it ran: their records would be lost or mixed up.
func changedSpec(specPath, what string) error {
	return &config.Error{Source: specPath, Msg: what + "; a resumed sweep runs the trials it started with, so its spec must stay as it was (put it back, or start a new sweep with the changed spec)"}
}

// sameParams reports whether two trials' values are the same, compared as
// sweep.jsonl writes them.
func sameParams(a, b map[string]any) bool {
	norm := func(m map[string]any) string {
		j, _ := json.Marshal(m)
		var back map[string]any
		json.Unmarshal(j, &back)
		j, _ = json.Marshal(back)
		return string(j)
	}
	return norm(a) == norm(b)
}

func describeParams(p map[string]any, seed int64) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+shortValue(p[k]))
	}
	return termtext.Clean(strings.Join(append(parts, "seed="+strconv.FormatInt(seed, 10)), " "))
}

// hasRecords reports whether a run directory holds metrics records.
func hasRecords(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, runstore.MetricsFile))
	return err == nil && st.Mode().IsRegular() && st.Size() > 0
}

// sameDir reports whether two paths name the same directory.
func sameDir(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

func readTrialConfig(dir string) (config.Config, error) {
	return config.ResolveWith(func(c *config.Config) error { return c.LoadFile(filepath.Join(dir, TrialConfig)) })
}

// ReadResults reads sweep.jsonl for display: the text of every record is
// cleaned for a terminal (termtext.Clean), since anyone who can write the
// file could have put control characters in it.
func ReadResults(dir string) ([]*Record, error) {
	recs, err := readResults(dir)
	for _, r := range recs {
		r.Dir = filepath.Join(dir, r.Trial) // where the trial is, whatever the file says
		r.clean()
	}
	return recs, termtext.Error(err)
}

// clean makes a record's text safe to print.
func (r *Record) clean() {
	r.Trial, r.Dir, r.State, r.Reason = termtext.Clean(r.Trial), termtext.Clean(r.Dir), termtext.Clean(r.State), termtext.Clean(r.Reason)
	r.JobID, r.Slurm = termtext.Clean(r.JobID), termtext.Clean(r.Slurm)
	params := make(map[string]any, len(r.Params))
	for k, v := range r.Params {
		if s, ok := v.(string); ok {
			v = termtext.Clean(s)
		}
		params[termtext.Clean(k)] = v
	}
	r.Params = params
}

// readResults reads sweep.jsonl as it is.
func readResults(dir string) ([]*Record, error) {
	var out []*Record
	err := runstore.ScanJSONL(filepath.Join(dir, ResultsFile), maxResultsFile, "sweep results file", func(line []byte) error {
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if !trialIDRE.MatchString(r.Trial) {
			return fmt.Errorf("%q is not a trial of a sweep (trial-NNN)", r.Trial)
		}
		out = append(out, &r)
		return nil
	})
	if err == nil {
		if _, serr := os.Stat(filepath.Join(dir, ResultsFile)); serr != nil {
			err = serr // missing: say so (ScanJSONL takes it for empty)
		}
	}
	return out, err
}

// maxResultsFile bounds sweep.jsonl: MaxTrials records of a few hundred
// bytes each.
const maxResultsFile = 64 << 20

var trialIDRE = regexp.MustCompile(`^trial-[0-9]{3,7}$`)

// Create writes the sweep directory: sweep.toml, every trial's directory
// with its trial.toml, and sweep.jsonl with every trial pending.
func (sw *Sweep) create() error {
	if err := os.MkdirAll(sw.Dir, 0o755); err != nil {
		return err
	}
	for i, r := range sw.Records {
		if err := os.MkdirAll(r.Dir, 0o755); err != nil {
			return err
		}
		if err := checkOwnDir(r.Dir); err != nil {
			return fmt.Errorf("%s: %v", r.Dir, err)
		}
		if err := atomicfile.Write(filepath.Join(r.Dir, TrialConfig), []byte(sw.configs[i].TOML()), 0o644); err != nil {
			return err
		}
	}
	if err := sw.writeResults(); err != nil {
		return err
	}
	// sweep.toml last: a directory with it holds a whole sweep.
	return atomicfile.Write(filepath.Join(sw.Dir, SpecFile), []byte(sw.Spec.TOML()), 0o644)
}

// writeResults rewrites sweep.jsonl, results.csv and best.toml.
func (sw *Sweep) writeResults() error {
	var b bytes.Buffer
	for _, r := range sw.Records {
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := atomicfile.Write(filepath.Join(sw.Dir, ResultsFile), b.Bytes(), 0o644); err != nil {
		return err
	}
	ranked := sw.Ranked()
	keys := sw.Spec.Keys()
	var c bytes.Buffer
	w := csv.NewWriter(&c)
	w.Write(append(append([]string{"rank", "trial", "state", "seed"}, keys...), sw.Spec.Metric, "best_"+sw.Spec.Metric, "steps", "reason", "dir"))
	for i, r := range ranked {
		row := []string{strconv.Itoa(i + 1), r.Trial, r.State, strconv.FormatInt(r.Seed, 10)}
		for _, k := range keys {
			row = append(row, config.FormatValue(r.Params[k]))
		}
		row = append(row, num(r.Metric), num(r.Best), strconv.FormatInt(r.Steps, 10), r.Reason, r.Dir)
		for i := range row { // a table people open or cat: no control characters
			row[i] = termtext.Clean(row[i])
		}
		w.Write(row)
	}
	w.Flush()
	if err := atomicfile.Write(filepath.Join(sw.Dir, CSVFile), c.Bytes(), 0o644); err != nil {
		return err
	}
	if best := sw.Best(); best != nil {
		if data, err := inputfile.Read(filepath.Join(best.Dir, TrialConfig), 1<<20, "trial config"); err == nil {
			head := fmt.Sprintf("# best trial of sweep %s: %s, %s %s = %s\n", sw.Spec.Name, best.Trial, sw.Spec.Direction, sw.Spec.Metric, num(best.Metric))
			return atomicfile.Write(filepath.Join(sw.Dir, BestFile), append([]byte(head), data...), 0o644)
		}
	}
	return nil
}

func num(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(*f, 'g', 6, 64)
}

// Ranked orders the trials: finished ones by the metric (best first), then
// the others by the metric, then those without a value.
func (sw *Sweep) Ranked() []*Record {
	out := slices.Clone(sw.Records)
	group := func(r *Record) int {
		switch {
		case r.Metric == nil:
			return 2
		case r.State == Done:
			return 0
		}
		return 1
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if ga, gb := group(a), group(b); ga != gb {
			return ga < gb
		}
		if a.Metric == nil || b.Metric == nil || *a.Metric == *b.Metric {
			return false
		}
		if sw.Spec.Maximize() {
			return *a.Metric > *b.Metric
		}
		return *a.Metric < *b.Metric
	})
	return out
}

// Best is the best finished trial, else the best with a value; nil if none.
func (sw *Sweep) Best() *Record {
	r := sw.Ranked()
	if len(r) == 0 || r[0].Metric == nil {
		return nil
	}
	return r[0]
}

// refresh reads what a trial's metrics.jsonl gained since the last look:
// steps, last and best value.
func (sw *Sweep) refresh(r *Record) []runstore.Metrics {
	data, err := readFrom(filepath.Join(r.Dir, runstore.MetricsFile), r.offset)
	if err == nil {
		for len(data) > 0 {
			line, rest, complete := bytes.Cut(data, []byte{'\n'})
			if !complete {
				break // the writer has not finished this line
			}
			data = rest
			r.offset += int64(len(line)) + 1
			var m runstore.Metrics
			if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &m) != nil {
				continue
			}
			r.ms = append(r.ms, m)
		}
	}
	if len(r.ms) > 0 {
		r.Steps = r.ms[len(r.ms)-1].Step
	}
	if last, best, ok := Summary(r.ms, sw.Spec.Metric, sw.Spec.Maximize()); ok {
		r.Metric, r.Best = &last, &best
	}
	return r.ms
}

// forget drops what refresh read (a trial whose files are rewritten).
func (r *Record) forget() { r.ms, r.offset = nil, 0 }

// readFrom reads a trial's metrics file from offset on (what it gained
// since the last look), through inputfile: a run directory's files may be
// anything.
func readFrom(path string, offset int64) ([]byte, error) {
	f, st, err := inputfile.Open(path, "metrics file")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > runstore.MaxMetricsFile {
		return nil, &inputfile.TooBigError{Path: path, What: "metrics file", Size: st.Size(), Limit: runstore.MaxMetricsFile}
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(f, runstore.MaxMetricsFile-offset))
}

// milestones advances r past the milestones its metrics reached, asking
// the stopper at each; it returns the reason to stop, or "".
func (sw *Sweep) milestones(r *Record, ms []runstore.Metrics, st *Stopper) string {
	es := sw.Spec.EarlyStop
	for r.Milestones < len(es.Milestones) {
		m := es.Milestones[r.Milestones]
		if r.Steps < m {
			return ""
		}
		v, ok := AtMilestone(ms, sw.Spec.Metric, m)
		r.Milestones++
		if !ok {
			continue // no value there (no episode finished): no decision
		}
		if stop, reason := st.Decide(r.Milestones-1, r.Trial, v); stop {
			return reason
		}
	}
	return ""
}

// stopper rebuilds the milestone values the trials reported so far (on
// resume) so that decisions compare with them.
func (sw *Sweep) stopper() *Stopper {
	es := sw.Spec.EarlyStop
	st := NewStopper(es, sw.Spec.Maximize())
	if es.Method == "" {
		return st
	}
	for _, r := range sw.Records {
		if r.Milestones == 0 {
			continue
		}
		ms, _ := runstore.ReadMetrics(r.Dir)
		for i := 0; i < r.Milestones && i < len(es.Milestones); i++ {
			if v, ok := AtMilestone(ms, sw.Spec.Metric, es.Milestones[i]); ok {
				st.Record(i, r.Trial, v)
			}
		}
	}
	return st
}

func (sw *Sweep) logf(format string, a ...any) {
	fmt.Fprintf(sw.opts.Out, format+"\n", a...)
}

// describe is a trial's values in one line.
func (sw *Sweep) describe(r *Record) string {
	var parts []string
	for _, k := range sw.Spec.Keys() {
		parts = append(parts, k+"="+shortValue(r.Params[k]))
	}
	parts = append(parts, "seed="+strconv.FormatInt(r.Seed, 10))
	return termtext.Clean(strings.Join(parts, " "))
}

func shortValue(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'g', 4, 64)
	}
	return config.FormatValue(v)
}

// Run runs the sweep until every trial has ended (nil, even when some
// failed, unless all did), or ctx ends (ctx.Err(), the trials interrupted
// and resumable).
func (sw *Sweep) Run(ctx context.Context) error {
	if !sw.resumed {
		if err := sw.create(); err != nil {
			return err
		}
	}
	n := len(sw.Records)
	sw.logf("sweep %s: %d trials (%s search, %d seeds), %d at once, %s %s over %d steps each; results in %s",
		sw.Spec.Name, n, sw.Spec.Method, len(sw.Spec.Seeds), sw.Spec.Parallel, sw.Spec.Direction, sw.Spec.Metric, sw.Spec.Budget, sw.Dir)
	if sw.resumed {
		sw.cancelOldTasks(ctx)
	}
	var err error
	if sw.opts.Backend == "slurm" {
		err = sw.runSlurm(ctx)
	} else {
		err = sw.runLocal(ctx)
	}
	if werr := sw.writeResults(); err == nil {
		err = werr
	}
	if err != nil && ctx.Err() != nil {
		sw.logf("sweep %s interrupted; what was done is kept: continue with `agenttrainer sweep --resume %s`", sw.Spec.Name, sw.Dir)
	}
	if err != nil {
		return err
	}
	sw.summary()
	failed := 0
	for _, r := range sw.Records {
		if r.State == Failed {
			failed++
		}
	}
	if failed == n {
		return fmt.Errorf("every trial failed; see the train.log of each in %s", sw.Dir)
	}
	return nil
}

func (sw *Sweep) summary() {
	count := map[string]int{}
	for _, r := range sw.Records {
		count[r.State]++
	}
	var parts []string
	for _, s := range []string{Done, Stopped, Failed, Cancelled, Interrupted, Pending} {
		if count[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[s], s))
		}
	}
	sw.logf("sweep %s finished: %s; results in %s", sw.Spec.Name, strings.Join(parts, ", "), filepath.Join(sw.Dir, CSVFile))
	if b := sw.Best(); b != nil {
		sw.logf("best: %s %s %s = %s (%s), config in %s", b.Trial, sw.describe(b), sw.Spec.Metric, num(b.Metric), b.State, filepath.Join(sw.Dir, BestFile))
	}
	if len(sw.Spec.Seeds) > 1 {
		if c, ok := sw.BestConfig(); ok {
			sw.logf("best configuration over its %d seeds: %s, mean %s %.4g (trials %s)", len(c.Trials), c.Values, sw.Spec.Metric, c.Mean, strings.Join(c.Trials, ", "))
		}
	}
}

// ConfigResult is one configuration's trials over the seeds.
type ConfigResult struct {
	Values string   // the varied keys' values in one line
	Trials []string // its trials, one per seed
	Mean   float64  // the metric's mean over them
}

// BestConfig is the configuration whose trials all finished with the best
// mean metric over the seeds; ok is false when no configuration finished
// on every seed.
func (sw *Sweep) BestConfig() (best ConfigResult, ok bool) {
	groups := map[string]*ConfigResult{}
	complete := map[string]bool{}
	var order []string
	for _, r := range sw.Records {
		var parts []string
		for _, k := range sw.Spec.Keys() {
			parts = append(parts, k+"="+shortValue(r.Params[k]))
		}
		key := strings.Join(parts, " ")
		g := groups[key]
		if g == nil {
			g = &ConfigResult{Values: key}
			groups[key], complete[key] = g, true
			order = append(order, key)
		}
		g.Trials = append(g.Trials, r.Trial)
		if r.State != Done || r.Metric == nil {
			complete[key] = false
			continue
		}
		g.Mean += *r.Metric
	}
	for _, key := range order {
		g := groups[key]
		if !complete[key] {
			continue
		}
		g.Mean /= float64(len(g.Trials))
		if !ok || (sw.Spec.Maximize() && g.Mean > best.Mean) || (!sw.Spec.Maximize() && g.Mean < best.Mean) {
			best, ok = *g, true
		}
	}
	return best, ok
}

// startable lists the trials to start, interrupted ones first.
func (sw *Sweep) startable() []*Record {
	var first, rest []*Record
	for _, r := range sw.Records {
		switch r.State {
		case Running, Interrupted:
			first = append(first, r)
		case Pending:
			rest = append(rest, r)
		}
	}
	return append(first, rest...)
}

// prepareStart decides how a trial starts: it continues from its latest
// checkpoint when it has one, and otherwise starts afresh in a cleaned
// directory. It returns the train arguments.
func (sw *Sweep) prepareStart(r *Record) ([]string, error) {
	if err := checkOwnDir(r.Dir); err != nil {
		return nil, fmt.Errorf("%s: %v", r.Dir, err)
	}
	resume := false
	if r.Starts > 0 || r.State != Pending {
		if names, _ := runstore.Checkpoints(filepath.Join(r.Dir, runstore.CheckpointsDir)); len(names) > 0 {
			resume = true
		} else if err := cleanTrialDir(r.Dir); err != nil {
			return nil, err
		}
	}
	r.Starts++
	r.forget() // a resumed run truncates its records to the checkpoint
	if resume {
		return []string{"train", "--quiet", "--resume", r.Dir}, nil
	}
	return []string{"train", "--quiet", "--run-dir", r.Dir, "--config", filepath.Join(r.Dir, TrialConfig)}, nil
}

// cleanTrialDir removes what a trial without a checkpoint left, keeping its
// trial.toml.
func cleanTrialDir(dir string) error {
	if err := checkOwnDir(dir); err != nil {
		return fmt.Errorf("%s: %v; nothing in it was removed", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() != TrialConfig {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkOwnDir checks that a trial's directory is a directory of the
// sweep's own, not a symbolic link: a trial cleans its directory before it
// starts afresh, and a link would have it delete and train elsewhere.
func checkOwnDir(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	switch {
	case st.Mode()&os.ModeSymlink != 0:
		target, _ := os.Readlink(dir)
		return fmt.Errorf("it is a symbolic link (to %q), and a sweep trains only in directories of its own; put the trial's own directory back in its place", target)
	case !st.IsDir():
		return fmt.Errorf("it is %s, not a directory", inputfile.Kind(st.Mode()))
	}
	return nil
}

// tailLine is the last non-empty line of a trial's log, cleaned for a
// terminal: it becomes the trial's reason, which is printed. Only the end
// of the log is read.
func tailLine(path string) string {
	f, st, err := inputfile.Open(path, "log")
	if err != nil {
		return ""
	}
	defer f.Close()
	const tail = 64 << 10
	if st.Size() > tail {
		f.Seek(st.Size()-tail, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, tail))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(lines[i]); s != "" {
			return termtext.Clean(strings.TrimPrefix(s, "agenttrainer: "))
		}
	}
	return ""
}

// Backend is where the trials run: "local" or "slurm".
func (sw *Sweep) Backend() string { return sw.opts.Backend }

// List prints the trials the sweep would run.
func (sw *Sweep) List(w io.Writer) {
	fmt.Fprintf(w, "sweep %s: %d trials (%s search), %d at once, %s %s over %d steps each, in %s\n",
		sw.Spec.Name, len(sw.Records), sw.Spec.Method, sw.Spec.Parallel, sw.Spec.Direction, sw.Spec.Metric, sw.Spec.Budget, sw.Dir)
	for _, r := range sw.Records {
		fmt.Fprintf(w, "  %s %-11s %s\n", r.Trial, r.State, sw.describe(r))
	}
}

// reachedBudget reports whether a trial trained all its iterations: the
// trainer runs budget / batch whole iterations, so it may end a little
// short of the budget.
func (sw *Sweep) reachedBudget(r *Record) bool {
	if r.target == 0 {
		r.target = sw.Spec.Budget
		if c, err := readTrialConfig(r.Dir); err == nil && c.BatchSize() > 0 {
			r.target = c.PPO.TotalTimesteps / int64(c.BatchSize()) * int64(c.BatchSize())
		}
	}
	return r.Steps >= r.target
}
