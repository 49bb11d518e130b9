// Package sweep runs many trainings from one spec: it reads and checks the spec, draws the trials (grid or seeded random search), runs them as processes of their own (on this machine or as a Slurm job array), stops the poor ones early (median stopping, ASHA), resumes, and writes the results table.
package sweep

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/agenttrainer/agenttrainer/internal/inputfile"
	"github.com/agenttrainer/agenttrainer/internal/suggest"
	"github.com/agenttrainer/agenttrainer/internal/termtext"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// Files of a sweep directory (runs/<sweep-name>/).
const (
	SpecFile    = "sweep.toml"  // the spec, resolved
	ResultsFile = "sweep.jsonl" // one record per trial, rewritten whole
	CSVFile     = "results.csv" // the trials ranked by the metric, the best first
	BestFile    = "best.toml"   // the best trial's config
	TrialConfig = "trial.toml"  // in each trial's directory: the config it was started with
)

// Spec is a sweep: what to vary, how to search, what to optimise.
type Spec struct {
	Name       string         `toml:"name"`        // the sweep directory under trainer.runs_dir
	Method     string         `toml:"method"`      // "grid" or "random"
	Trials     int            `toml:"trials"`      // random: configurations drawn (each runs once per seed)
	Seeds      []int64        `toml:"seeds"`       // trainer.seed of each configuration's runs
	SampleSeed int64          `toml:"sample_seed"` // seeds the random search's draws
	Metric     string         `toml:"metric"`      // a metrics.jsonl field, e.g. ep_return_mean
	Direction  string         `toml:"direction"`   // "maximize" or "minimize"
	Budget     int64          `toml:"budget"`      // ppo.total_timesteps of every trial
	Parallel   int            `toml:"parallel"`    // trials at once; 0: one per core
	Base       map[string]any `toml:"base"`        // config keys every trial shares
	Params     []Param        `toml:"-"`           // the keys to vary, in name order
	EarlyStop  EarlyStop      `toml:"early_stop"`
	Slurm      SlurmSpec      `toml:"slurm"`
	Backend    string         `toml:"backend"` // "local" or "slurm" (--backend; sweep.toml records the one used)

	parallelDefault bool // Parallel was not given: one per core here, no limit on Slurm
}

// Param is one key to vary: a list of values, a range (num points with
// linear or log spacing), or a random draw (uniform, log_uniform, choice).
type Param struct {
	Key          string   `toml:"-"`
	Values       []any    `toml:"values,omitempty"`
	Min          *float64 `toml:"min,omitempty"`
	Max          *float64 `toml:"max,omitempty"`
	Num          int      `toml:"num,omitempty"`
	Spacing      string   `toml:"spacing,omitempty"`      // "linear" (default) or "log"
	Distribution string   `toml:"distribution,omitempty"` // "uniform", "log_uniform", "choice"

	keyType string
}

// EarlyStop stops poor trials at milestones (env steps).
type EarlyStop struct {
	Method     string  `toml:"method"`     // "", "median" or "asha"
	Milestones []int64 `toml:"milestones"` // env steps at which trials are compared
	Reduction  float64 `toml:"reduction"`  // asha: keep the best 1/reduction at each milestone (default 3)
	MinTrials  int     `toml:"min_trials"` // median: compare once this many others reached the milestone (default 3)
}

// SlurmSpec is how trials are submitted with --backend slurm.
type SlurmSpec struct {
	Partition string   `toml:"partition"`
	Time      string   `toml:"time"` // e.g. "00:30:00"
	CPUs      int      `toml:"cpus"` // per trial; default trainer.threads or 1
	GPUs      int      `toml:"gpus"`
	Extra     []string `toml:"extra"` // more #SBATCH lines, e.g. "--qos=short"
}

// maxSpecFile bounds a sweep spec (a long one is a few KiB).
const maxSpecFile = 1 << 20

// specKeys are the spec's own fields, for did-you-mean.
var specKeys = []string{"name", "method", "trials", "seeds", "sample_seed", "metric", "direction", "budget", "parallel", "base", "params", "early_stop", "slurm", "backend"}

var paramFields = []string{"values", "min", "max", "num", "spacing", "distribution"}

// MetricNames are the declared metrics a sweep can optimise: every one
// but the axes (iter, step). Figures that environments, agents and
// workflows report ("env/score") may be optimised too.
func MetricNames() []string {
	var out []string
	for _, m := range runstore.MetricList() {
		if !m.Axis {
			out = append(out, m.Name)
		}
	}
	return out
}

// metricValue reads a metric out of a record; ok is false when the record
// does not carry it (NaN, or a validation field on a training record).
func metricValue(m runstore.Metrics, name string) (float64, bool) {
	v, _ := m.Value(name)
	return v, !math.IsNaN(v)
}

// Maximize reports whether larger values of the metric are better.
func (s *Spec) Maximize() bool { return s.Direction == "maximize" }

// ParseSpec reads a spec file and checks everything that does not need the
// trials' configs (LoadSpec does the rest). Every mistake is a
// *config.Error naming the spec file and the field.
func ParseSpec(path string) (*Spec, error) {
	data, err := inputfile.Read(path, maxSpecFile, "sweep spec")
	if err != nil {
		if u := errors.Unwrap(err); u != nil && errors.Is(err, fs.ErrNotExist) {
			err = u // the path is the Source already
		}
		return nil, termtext.Error(&config.Error{Source: path, Msg: fmt.Sprintf("cannot read the sweep spec: %v", err)})
	}
	return ParseSpecTOML(string(data), path)
}

// ParseSpecTOML is ParseSpec on the spec's text; source names it in errors.
// The messages are cleaned for a terminal (they may quote the spec).
func ParseSpecTOML(src, source string) (*Spec, error) {
	s, err := parseSpecTOML(src, source)
	return s, termtext.Error(err)
}

func parseSpecTOML(src, source string) (*Spec, error) {
	fail := func(key, format string, a ...any) *config.Error {
		return &config.Error{Source: source, Key: key, Msg: fmt.Sprintf(format, a...)}
	}
	var raw map[string]any
	if _, err := toml.Decode(src, &raw); err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return nil, fail("", "not valid TOML at line %d: %s", perr.Position.Line, perr.Message)
		}
		return nil, fail("", "not valid TOML: %v", err)
	}
	var errs []error
	for k := range raw {
		if !slices.Contains(specKeys, k) {
			msg := "unknown sweep field"
			if near := suggest.Names(k, specKeys); len(near) > 0 {
				msg += suggest.DidYouMean(near)
			} else {
				msg += " (fields: " + strings.Join(specKeys, ", ") + ")"
			}
			errs = append(errs, fail(k, "%s", msg))
		}
	}
	params, _ := raw["params"]
	delete(raw, "params")
	s := &Spec{}
	if len(errs) == 0 {
		var buf strings.Builder
		if err := toml.NewEncoder(&buf).Encode(raw); err != nil {
			return nil, fail("", "%v", err)
		}
		md, err := toml.Decode(buf.String(), s)
		if err != nil {
			return nil, fail("", "%s", strings.TrimPrefix(err.Error(), "toml: "))
		}
		for _, k := range md.Undecoded() {
			if len(k) >= 1 && k[0] == "base" {
				continue
			}
			errs = append(errs, fail(k.String(), "unknown field"))
		}
	}
	if params != nil {
		table, ok := params.(map[string]any)
		if !ok {
			errs = append(errs, fail("params", "must be a table of keys to vary, e.g. [params] \"ppo.learning_rate\" = [1e-4, 3e-4]"))
		} else {
			ps, err := readParams("", table, source)
			errs = append(errs, err)
			s.Params = ps
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if s.Base == nil {
		s.Base = map[string]any{}
	}
	// The fields a listing shows (the app's sweeps screen reads sweep.toml
	// back) are cleaned for a terminal; Check then refuses what is not one
	// of the values it knows.
	for _, f := range []*string{&s.Name, &s.Method, &s.Metric, &s.Direction, &s.Backend, &s.EarlyStop.Method} {
		*f = termtext.Clean(*f)
	}
	for i := range s.Params {
		s.Params[i].Key = termtext.Clean(s.Params[i].Key)
	}
	return s, nil
}

// readParams flattens [params]: a table with a param field is one param,
// another table nests key segments ([params.ppo.learning_rate]), a list
// is a list of values.
func readParams(prefix string, m map[string]any, source string) ([]Param, error) {
	var out []Param
	var errs []error
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		switch x := v.(type) {
		case []any:
			out = append(out, Param{Key: key, Values: x})
		case map[string]any:
			isParam := false
			for f := range x {
				if slices.Contains(paramFields, f) {
					isParam = true
				}
			}
			if !isParam {
				ps, err := readParams(key, x, source)
				out = append(out, ps...)
				errs = append(errs, err)
				continue
			}
			var p Param
			var buf strings.Builder
			if err := toml.NewEncoder(&buf).Encode(x); err != nil {
				errs = append(errs, &config.Error{Source: source, Key: "params." + key, Msg: err.Error()})
				continue
			}
			md, err := toml.Decode(buf.String(), &p)
			if err != nil {
				errs = append(errs, &config.Error{Source: source, Key: "params." + key, Msg: strings.TrimPrefix(err.Error(), "toml: ")})
				continue
			}
			for _, u := range md.Undecoded() {
				msg := "unknown field"
				if near := suggest.Names(u.String(), paramFields); len(near) > 0 {
					msg += suggest.DidYouMean(near)
				} else {
					msg += " (a param has " + strings.Join(paramFields, ", ") + ")"
				}
				errs = append(errs, &config.Error{Source: source, Key: "params." + key + "." + u.String(), Msg: msg})
			}
			p.Key = key
			out = append(out, p)
		default:
			out = append(out, Param{Key: key, Values: []any{x}})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, errors.Join(errs...)
}

// Check fills in the defaults and checks the spec against the config
// schema: base is the config every trial starts from (defaults, preset,
// --config, the spec's base, the command line's overrides).
func (s *Spec) Check(base config.Config, source string, cores int) error {
	fail := func(key, format string, a ...any) error {
		return &config.Error{Source: source, Key: key, Msg: fmt.Sprintf(format, a...)}
	}
	var errs []error
	switch s.Method {
	case "":
		s.Method = "grid"
		for _, p := range s.Params {
			if p.Distribution != "" {
				s.Method = "random"
			}
		}
		if s.Trials > 0 {
			s.Method = "random"
		}
	case "grid", "random":
	default:
		errs = append(errs, fail("method", "must be \"grid\" or \"random\", got %q%s", s.Method, suggest.DidYouMean(suggest.Names(s.Method, []string{"grid", "random"}))))
	}
	switch {
	case s.Method == "random" && s.Trials <= 0:
		errs = append(errs, fail("trials", "a random search needs the number of configurations to draw (trials = 16), got %d", s.Trials))
	case s.Method == "grid" && s.Trials != 0:
		errs = append(errs, fail("trials", "a grid runs every combination; drop trials or use method = \"random\""))
	}
	if s.Backend != "" && s.Backend != "local" && s.Backend != "slurm" {
		errs = append(errs, fail("backend", "must be \"local\" or \"slurm\", got %q", s.Backend))
	}
	if s.Metric == "" {
		s.Metric = "ep_return_mean"
	}
	d, known := runstore.LookupMetric(s.Metric)
	if !known || d.Axis {
		errs = append(errs, fail("metric", "unknown metric %q%s", s.Metric, didYouMeanOr(s.Metric, MetricNames())))
	}
	if strings.HasPrefix(s.Metric, "val_") && (base.Trainer.TestFreq == 0 || len(base.Data.ValFiles) == 0) {
		errs = append(errs, fail("metric", "%s is measured only by validation, which is off; give data.val_files (and trainer.test_freq above 0) in [base]", s.Metric))
	}
	if s.Direction == "" && known && d.Better == runstore.Lower {
		s.Direction = "minimize" // the metric's own direction: a loss or a time improves downwards
	}
	switch strings.ToLower(s.Direction) {
	case "", "max", "maximize", "maximise":
		s.Direction = "maximize"
	case "min", "minimize", "minimise":
		s.Direction = "minimize"
	default:
		errs = append(errs, fail("direction", "must be \"maximize\" or \"minimize\", got %q", s.Direction))
	}
	if s.Budget == 0 {
		s.Budget = base.PPO.TotalTimesteps
	}
	if s.Budget < 0 {
		errs = append(errs, fail("budget", "the env steps of every trial must be positive, got %d", s.Budget))
	}
	if len(s.Seeds) == 0 {
		s.Seeds = []int64{base.Trainer.Seed}
	}
	if len(s.Seeds) > MaxTrials {
		errs = append(errs, fail("seeds", "gives %d seeds; a sweep runs at most %d trials", len(s.Seeds), MaxTrials))
	} else {
		seen := make(map[int64]bool, len(s.Seeds))
		for _, sd := range s.Seeds {
			if sd < 0 || seen[sd] {
				errs = append(errs, fail("seeds", "must be distinct and not negative, got %d twice or below 0", sd))
				break
			}
			seen[sd] = true
		}
	}
	if s.Trials > MaxTrials {
		errs = append(errs, fail("trials", "a sweep runs at most %d trials, got %d", MaxTrials, s.Trials))
	}
	if s.Parallel < 0 {
		errs = append(errs, fail("parallel", "must be at least 1 (0: one per core), got %d", s.Parallel))
	}
	if s.Parallel == 0 {
		s.parallelDefault = true
		s.Parallel = max(1, cores)
	}
	if s.Name != "" {
		if err := runstore.CheckDirName(s.Name); err != nil {
			errs = append(errs, fail("name", "%v", err))
		}
	}
	if len(s.Params) == 0 {
		errs = append(errs, fail("params", "names no key to vary; add e.g. [params] \"ppo.learning_rate\" = [1e-4, 3e-4]"))
	}
	for i := range s.Params {
		errs = append(errs, s.Params[i].check(s.Method, base, source))
	}
	if err := errors.Join(errs...); err == nil {
		if n, ok := s.count(); !ok {
			errs = append(errs, fail("params", "draws more than %d trials (%s); a sweep runs at most %d: vary fewer values, or use method = \"random\" with trials = N", MaxTrials, s.countWords(), MaxTrials))
		} else if n == 0 {
			errs = append(errs, fail("params", "draws no trial"))
		}
	}
	errs = append(errs, s.EarlyStop.check(s.Budget, source))
	errs = append(errs, checkSlurm(s.Slurm, source, specSlurmField))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return nil
}

// MaxTrials bounds the trials of one sweep (configurations × seeds): each
// is a run directory, a record and, on Slurm, an array task. The spec's
// counts are checked against it before anything is drawn.
const MaxTrials = 10000

// count is the number of trials the spec draws; ok is false past MaxTrials
// (counted without overflowing).
func (s *Spec) count() (n int, ok bool) {
	n = len(s.Seeds)
	if s.Method == "random" {
		n *= s.Trials
		return n, n <= MaxTrials
	}
	for _, p := range s.Params {
		k := len(p.Values)
		if k == 0 {
			k = p.Num
		}
		if k > 0 && n > MaxTrials/k {
			return 0, false
		}
		n *= k
	}
	return n, n <= MaxTrials
}

// countWords spells out how count multiplies, for its message.
func (s *Spec) countWords() string {
	var parts []string
	if s.Method == "random" {
		parts = append(parts, fmt.Sprintf("%d configurations", s.Trials))
	} else {
		for _, p := range s.Params {
			k := len(p.Values)
			if k == 0 {
				k = p.Num
			}
			parts = append(parts, fmt.Sprintf("%d of %s", k, termtext.Clean(p.Key)))
		}
	}
	return strings.Join(append(parts, fmt.Sprintf("%d seeds", len(s.Seeds))), " × ")
}

func didYouMeanOr(name string, options []string) string {
	if near := suggest.Names(name, options); len(near) > 0 {
		return suggest.DidYouMean(near)
	}
	return " (one of " + strings.Join(options, ", ") + ")"
}

func (p *Param) check(method string, base config.Config, source string) error {
	key := "params." + p.Key
	fail := func(format string, a ...any) error {
		return &config.Error{Source: source, Key: key, Msg: fmt.Sprintf(format, a...)}
	}
	if p.Key == "trainer.seed" || p.Key == "ppo.total_timesteps" {
		return fail("is set by the spec's seeds and budget")
	}
	if p.Num > MaxTrials || len(p.Values) > MaxTrials {
		return fail("gives %d values; a sweep runs at most %d trials", max(p.Num, len(p.Values)), MaxTrials)
	}
	k, ok := config.Lookup(p.Key)
	if !ok && strings.HasPrefix(p.Key, "env.args.") && len(p.Key) > len("env.args.") {
		// The env's own arguments are not in the schema: any value goes
		// where the env takes it, as `train env.args.X=…` does.
		k, ok = config.Key{Name: p.Key, Type: "float"}, true
		if len(p.Values) > 0 {
			k.Type = "any"
		}
	}
	if !ok {
		e := fmt.Errorf("%s", "unknown key")
		if near := config.Nearest(p.Key); len(near) > 0 {
			e = fmt.Errorf("unknown key%s", suggest.DidYouMean(near))
		} else {
			e = fmt.Errorf("unknown key (`agenttrainer config` lists every key)")
		}
		return fail("%s", e)
	}
	p.keyType = k.Type
	numeric := k.Type == "int" || k.Type == "float"
	switch p.Distribution {
	case "", "uniform", "log_uniform", "choice":
	default:
		return fail("unknown distribution %q%s", p.Distribution, didYouMeanOr(p.Distribution, []string{"uniform", "log_uniform", "choice"}))
	}
	switch p.Spacing {
	case "", "linear", "log":
	default:
		return fail("unknown spacing %q (linear or log)", p.Spacing)
	}
	hasRange := p.Min != nil || p.Max != nil
	switch {
	case len(p.Values) > 0 && hasRange:
		return fail("gives both values and a range; keep one")
	case len(p.Values) == 0 && !hasRange:
		return fail("gives nothing to vary: values = [...], or min and max")
	case hasRange && (p.Min == nil || p.Max == nil):
		return fail("a range needs both min and max")
	case hasRange && !numeric:
		return fail("is a %s key; a range needs a number key, give values = [...]", k.Type)
	case p.Distribution == "choice" && len(p.Values) == 0 && p.Num == 0:
		return fail("a choice draws from values (or from num points of a range)")
	case len(p.Values) > 0 && (p.Distribution == "uniform" || p.Distribution == "log_uniform"):
		return fail("a %s draw needs min and max, not values", p.Distribution)
	}
	if hasRange {
		lo, hi := *p.Min, *p.Max
		logScale := p.Spacing == "log" || p.Distribution == "log_uniform"
		switch {
		case !(lo < hi) && !(lo == hi && p.Num == 1):
			return fail("empty range: min %s is not below max %s", config.FormatValue(lo), config.FormatValue(hi))
		case logScale && lo <= 0:
			return fail("a log scale needs min above 0, got %s", config.FormatValue(lo))
		case p.Num < 0:
			return fail("num must be positive, got %d", p.Num)
		case p.Num > 0 && p.Distribution != "" && p.Distribution != "choice":
			return fail("num gives points of a grid; a %s draw takes none", p.Distribution)
		case method == "grid" && p.Num == 0:
			return fail("a grid needs the number of points of the range (num = 4), or method = \"random\"")
		case method == "grid" && p.Distribution != "":
			return fail("a grid cannot draw at random; drop distribution or use method = \"random\"")
		case k.Type == "int" && p.Num > 0 && int64(hi)-int64(lo)+1 < int64(p.Num) && lo != hi:
			return fail("%d points do not fit between %s and %s for an integer key", p.Num, config.FormatValue(lo), config.FormatValue(hi))
		}
	}
	if method == "grid" && p.Distribution != "" && p.Distribution != "choice" {
		return fail("a grid cannot draw at random; drop distribution or use method = \"random\"")
	}
	// Every value the key may take must be one it accepts.
	var errs []error
	for _, v := range p.candidates() {
		c := base.Clone()
		if err := c.Set(p.Key, v); err != nil {
			var ce *config.Error
			if errors.As(err, &ce) {
				errs = append(errs, fail("%s", ce.Msg))
			} else {
				errs = append(errs, fail("%v", err))
			}
		}
	}
	return errors.Join(errs...)
}

// candidates are the values to check: the list, the grid points, or the
// ends of a random draw's range.
func (p *Param) candidates() []any {
	if len(p.Values) > 0 {
		return p.Values
	}
	if p.Num > 0 {
		return p.points()
	}
	return []any{p.typed(*p.Min), p.typed(*p.Max)}
}

// typed rounds a drawn number for an integer key.
func (p *Param) typed(x float64) any {
	if p.keyType == "int" {
		return int64(math.Round(x))
	}
	return x
}

// points are a range's num values, linearly or log spaced.
func (p *Param) points() []any {
	lo, hi := *p.Min, *p.Max
	out := make([]any, p.Num)
	for i := range p.Num {
		f := 0.0
		if p.Num > 1 {
			f = float64(i) / float64(p.Num-1)
		}
		x := lo + f*(hi-lo)
		if p.Spacing == "log" {
			x = math.Exp(math.Log(lo) + f*(math.Log(hi)-math.Log(lo)))
		}
		if i == p.Num-1 {
			x = hi
		}
		out[i] = p.typed(x)
	}
	return out
}

// draw is one random value.
func (p *Param) draw(r *rand.Rand) any {
	switch {
	case len(p.Values) > 0:
		return p.Values[r.IntN(len(p.Values))]
	case p.Num > 0:
		pts := p.points()
		return pts[r.IntN(len(pts))]
	case p.Distribution == "log_uniform" || p.Spacing == "log":
		lo, hi := math.Log(*p.Min), math.Log(*p.Max)
		return p.typed(math.Exp(lo + r.Float64()*(hi-lo)))
	default:
		return p.typed(*p.Min + r.Float64()*(*p.Max-*p.Min))
	}
}

func (e *EarlyStop) check(budget int64, source string) error {
	fail := func(key, format string, a ...any) error {
		return &config.Error{Source: source, Key: "early_stop." + key, Msg: fmt.Sprintf(format, a...)}
	}
	switch e.Method {
	case "", "none":
		e.Method = ""
		if len(e.Milestones) > 0 {
			return fail("method", "milestones are given but no method; use \"median\" or \"asha\"")
		}
		return nil
	case "median", "asha":
	default:
		return fail("method", "must be \"median\" or \"asha\", got %q%s", e.Method, suggest.DidYouMean(suggest.Names(e.Method, []string{"median", "asha"})))
	}
	if len(e.Milestones) == 0 {
		return fail("milestones", "%s stopping compares trials at milestones in env steps, e.g. milestones = [25000, 50000]", e.Method)
	}
	for i, m := range e.Milestones {
		if m <= 0 || m >= budget || (i > 0 && m <= e.Milestones[i-1]) {
			return fail("milestones", "must rise strictly between 0 and the budget %d, got %v", budget, e.Milestones)
		}
	}
	if e.Reduction == 0 {
		e.Reduction = 3
	}
	if !(e.Reduction > 1) || math.IsInf(e.Reduction, 1) { // NaN fails the comparison
		return fail("reduction", "asha keeps the best 1/reduction, so reduction must be a number above 1, got %v", e.Reduction)
	}
	if e.MinTrials == 0 {
		e.MinTrials = 3
	}
	if e.MinTrials < 1 {
		return fail("min_trials", "must be at least 1, got %d", e.MinTrials)
	}
	return nil
}

// Trial is one run of the sweep: a configuration and a seed.
type Trial struct {
	Index  int
	ID     string         // trial-000
	Params map[string]any // the varied keys' values
	Seed   int64
}

// Draw lists the sweep's trials: a grid's every combination, or the random
// search's draws (reproducible from sample_seed), each once per seed.
func (s *Spec) Draw() []Trial {
	var configs []map[string]any
	if s.Method == "grid" {
		configs = []map[string]any{{}}
		for _, p := range s.Params {
			var next []map[string]any
			for _, c := range configs {
				for _, v := range p.candidates() {
					m := maps(c)
					m[p.Key] = v
					next = append(next, m)
				}
			}
			configs = next
		}
	} else {
		r := rand.New(rand.NewPCG(uint64(s.SampleSeed), 0x5eed))
		for range s.Trials {
			m := map[string]any{}
			for i := range s.Params {
				m[s.Params[i].Key] = s.Params[i].draw(r)
			}
			configs = append(configs, m)
		}
	}
	var out []Trial
	for _, c := range configs {
		for _, seed := range s.Seeds {
			out = append(out, Trial{Index: len(out), ID: fmt.Sprintf("trial-%03d", len(out)), Params: c, Seed: seed})
		}
	}
	return out
}

func maps(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Keys are the varied keys in order.
func (s *Spec) Keys() []string {
	out := make([]string, len(s.Params))
	for i, p := range s.Params {
		out[i] = p.Key
	}
	return out
}

// TrialConfig resolves one trial's config: base, the trial's values, its
// seed, the budget, and threads.
func TrialConfigFor(base config.Config, t Trial, budget int64, threads int) (config.Config, error) {
	c := base.Clone()
	keys := make([]string, 0, len(t.Params))
	for k := range t.Params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var errs []error
	for _, k := range keys {
		errs = append(errs, c.Set(k, t.Params[k]))
	}
	errs = append(errs, c.Set("trainer.seed", t.Seed), c.Set("ppo.total_timesteps", budget))
	if c.Trainer.Threads == 0 && threads > 0 {
		errs = append(errs, c.Set("trainer.threads", threads))
	}
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("%s: %w", t.ID, err)
	}
	return c, nil
}

// TOML renders the resolved spec (sweep.toml).
func (s *Spec) TOML() string {
	var b strings.Builder
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	out := map[string]any{
		"name": s.Name, "method": s.Method, "seeds": s.Seeds, "sample_seed": s.SampleSeed,
		"metric": s.Metric, "direction": s.Direction, "budget": s.Budget, "parallel": s.Parallel,
	}
	if s.Backend != "" {
		out["backend"] = s.Backend
	}
	if s.Trials > 0 {
		out["trials"] = s.Trials
	}
	if len(s.Base) > 0 {
		out["base"] = s.Base
	}
	params := map[string]any{}
	for _, p := range s.Params {
		params[p.Key] = p
	}
	out["params"] = params
	if s.EarlyStop.Method != "" {
		out["early_stop"] = s.EarlyStop
	}
	if !reflect.DeepEqual(s.Slurm, SlurmSpec{}) {
		out["slurm"] = s.Slurm
	}
	enc.Encode(out)
	return b.String()
}

// SpecName is the sweep's name, the directory it gets under the runs
// directory: the spec's name, else the spec file's base name with the
// characters a name may not hold made '_'. A name that still cannot be a
// directory of its own (".." from a file named "...toml") is a
// *config.Error.
func SpecName(s *Spec, path string) (string, error) {
	if s.Name != "" {
		if err := runstore.CheckDirName(s.Name); err != nil {
			return "", &config.Error{Source: path, Key: "name", Msg: err.Error()}
		}
		return s.Name, nil
	}
	name := unsafeName(strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	if err := runstore.CheckDirName(name); err != nil {
		return "", &config.Error{Source: path, Key: "name", Msg: fmt.Sprintf("the sweep is named after its file, and that name %v; give it one with name = \"my-sweep\"", err)}
	}
	return name, nil
}

func unsafeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
