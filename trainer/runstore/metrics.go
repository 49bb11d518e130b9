package runstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The metric registry: every figure a metrics record can hold is declared
// once, here (the trainer's own) or by whoever computes it (DeclareMetric),
// and every sink iterates over the registry: metrics.jsonl, TensorBoard,
// the CSV export, the headless progress line, sweeps, plot and the app.
// Environments, agents and workflows may also report figures of their own
// without declaring them (PufferLib's infos → stats): a reported name has a
// namespace ("env/score"), the record keeps it beside the declared ones, and
// LookupMetric describes it with defaults, so it reaches every sink too.

// Metric describes one figure of a metrics record.
type Metric struct {
	// Name is the record's key in metrics.jsonl ("ep_return_mean"); a
	// reported figure's has a namespace ("env/score").
	Name string
	// Label is what a chart, a panel or a picker calls it ("return").
	Label string
	// Tag is the TensorBoard tag ("charts/ep_return_mean"), grouped as
	// CleanRL's are; "" writes none. Its group (before the slash) also
	// groups the progress line's columns.
	Tag string
	// Grid puts it in the app's grid of small charts; Figure in the app's
	// panel of figures.
	Grid, Figure bool
	// Progress is its column width on the headless progress line; 0 leaves
	// it off.
	Progress int
	// Better is the direction in which it improves (a sweep's default, a
	// chart's hint); 0 where neither is better (a loss whose size says
	// little, a learning rate).
	Better Direction
	// Axis marks the counters the others are drawn against (iter, step):
	// never a sweep's target.
	Axis bool
	// Integer marks counts, printed without decimals.
	Integer bool
	// Optional marks figures only some records carry (validation's): a
	// record without one leaves it out of metrics.jsonl.
	Optional bool
	// Band names the figures that bound a band drawn around this one (the
	// mean return's min and max), or is empty.
	Band [2]string

	// get reads a built-in figure from its field of the record (ok false
	// when an optional one is absent); nil for the rest, which the record
	// keeps in Extra.
	get func(*Metrics) (v float64, ok bool)
}

// Direction is the way a metric improves.
type Direction int8

const (
	Neither Direction = iota
	Higher            // larger is better (returns)
	Lower             // smaller is better (value loss, seconds)
)

// Format prints a value of the metric compactly: counts with thousands
// separators, other figures to four significant digits (two in exponent
// form below 0.01), an undefined value as "-".
func (m Metric) Format(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case m.Integer:
		return thousands(v)
	case v != 0 && math.Abs(v) < 0.01:
		return fmt.Sprintf("%.2e", v)
	}
	return fmt.Sprintf("%.4g", v)
}

// Reported reports whether the metric is a figure an environment, agent or
// workflow reported without declaring it.
func (m Metric) Reported() bool { return m.get == nil && !declaredExtra(m.Name) }

func thousands(v float64) string {
	s := strconv.FormatFloat(v, 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// builtin are the trainer's own figures, in the order of a record's fields
// (metrics.jsonl and the CSV columns keep it).
var builtin = []Metric{
	{Name: "iter", Label: "iteration", Figure: true, Axis: true, Integer: true,
		get: func(m *Metrics) (float64, bool) { return float64(m.Iter), true }},
	{Name: "step", Label: "step", Figure: true, Axis: true, Integer: true,
		get: func(m *Metrics) (float64, bool) { return float64(m.Step), true }},
	{Name: "time_s", Label: "time (s)", Better: Lower, get: field(func(m *Metrics) Float { return m.TimeS })},
	{Name: "sps", Label: "steps/s", Tag: "charts/sps", Grid: true, Figure: true, Better: Higher,
		get: field(func(m *Metrics) Float { return m.SPS })},
	{Name: "episodes", Label: "episodes", Figure: true, Integer: true, Better: Higher,
		get: func(m *Metrics) (float64, bool) { return float64(m.Episodes), true }},
	{Name: "ep_return_mean", Label: "return", Tag: "charts/ep_return_mean", Grid: true, Figure: true, Progress: 8, Better: Higher,
		Band: [2]string{"ep_return_min", "ep_return_max"}, get: field(func(m *Metrics) Float { return m.EpReturnMean })},
	{Name: "ep_return_min", Label: "return min", Tag: "charts/ep_return_min", Better: Higher,
		get: field(func(m *Metrics) Float { return m.EpReturnMin })},
	{Name: "ep_return_max", Label: "return max", Tag: "charts/ep_return_max", Better: Higher,
		get: field(func(m *Metrics) Float { return m.EpReturnMax })},
	{Name: "ep_length_mean", Label: "ep length", Tag: "charts/ep_length_mean", Grid: true, Figure: true,
		get: field(func(m *Metrics) Float { return m.EpLengthMean })},
	{Name: "policy_loss", Label: "policy loss", Tag: "losses/policy_loss", Grid: true, Figure: true, Progress: 7,
		get: field(func(m *Metrics) Float { return m.PolicyLoss })},
	{Name: "value_loss", Label: "value loss", Tag: "losses/value_loss", Grid: true, Figure: true, Progress: 8, Better: Lower,
		get: field(func(m *Metrics) Float { return m.ValueLoss })},
	{Name: "entropy", Label: "entropy", Tag: "losses/entropy", Grid: true, Figure: true, Progress: 6,
		get: field(func(m *Metrics) Float { return m.Entropy })},
	{Name: "approx_kl", Label: "approx_kl", Tag: "losses/approx_kl", Grid: true, Figure: true, Progress: 7,
		get: field(func(m *Metrics) Float { return m.ApproxKL })},
	{Name: "clipfrac", Label: "clipfrac", Tag: "losses/clipfrac", Grid: true, Figure: true,
		get: field(func(m *Metrics) Float { return m.ClipFrac })},
	{Name: "explained_variance", Label: "explained var", Tag: "losses/explained_variance", Grid: true, Figure: true, Better: Higher,
		get: field(func(m *Metrics) Float { return m.ExplainedVariance })},
	{Name: "lr", Label: "learning rate", Tag: "charts/learning_rate", Grid: true, Figure: true,
		get: field(func(m *Metrics) Float { return m.LR })},
	{Name: "grad_norm", Label: "grad norm", Tag: "losses/grad_norm",
		get: field(func(m *Metrics) Float { return m.GradNorm })},
	{Name: "rollout_s", Label: "rollout s", Better: Lower, get: field(func(m *Metrics) Float { return m.RolloutS })},
	{Name: "update_s", Label: "update s", Better: Lower, get: field(func(m *Metrics) Float { return m.UpdateS })},
	{Name: "val_return_mean", Label: "val return", Tag: "charts/val_return_mean", Grid: true, Figure: true, Better: Higher, Optional: true,
		get: optional(func(m *Metrics) *Float { return m.ValReturnMean })},
	{Name: "val_success_rate", Label: "val success", Tag: "charts/val_success_rate", Grid: true, Figure: true, Better: Higher, Optional: true,
		get: optional(func(m *Metrics) *Float { return m.ValSuccessRate })},
}

func field(f func(*Metrics) Float) func(*Metrics) (float64, bool) {
	return func(m *Metrics) (float64, bool) { return float64(f(m)), true }
}

func optional(f func(*Metrics) *Float) func(*Metrics) (float64, bool) {
	return func(m *Metrics) (float64, bool) {
		if p := f(m); p != nil {
			return float64(*p), true
		}
		return math.NaN(), false
	}
}

var (
	registryMu sync.RWMutex
	registry   = slices.Clone(builtin) // built-in first, then declared
	byName     = indexMetrics(registry)
)

func indexMetrics(ms []Metric) map[string]int {
	idx := make(map[string]int, len(ms))
	for i, m := range ms {
		idx[m.Name] = i
	}
	return idx
}

// reportedName is what a figure's name may be: words of letters, digits,
// '_', '.' and '-' joined by slashes, at most 64 bytes (a JSON key, a CSV
// column and a TensorBoard tag alike).
var reportedName = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$`)

// CheckMetricName says what is wrong with a figure's name, or nil.
func CheckMetricName(name string) error {
	if len(name) > 64 || !reportedName.MatchString(name) {
		return fmt.Errorf("metric name %q: use at most 64 letters, digits, '_', '.', '-' and '/'", name)
	}
	return nil
}

// DeclareMetric adds a figure that the trainer, an agent or a workflow
// computes and sets on records (Metrics.Set); its name must be new. Call
// it from an init function; it returns a function that removes it again
// (for tests). A figure left undeclared is still written and shown, with
// default presentation, when its name has a namespace ("agent/kl").
func DeclareMetric(m Metric) (remove func()) {
	if err := CheckMetricName(m.Name); err != nil {
		panic("runstore: DeclareMetric: " + err.Error())
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := byName[m.Name]; dup {
		panic("runstore: metric " + m.Name + " declared twice")
	}
	m.get = nil
	if m.Label == "" {
		m.Label = m.Name
	}
	registry = append(registry, m)
	byName = indexMetrics(registry)
	return func() {
		registryMu.Lock()
		defer registryMu.Unlock()
		registry = slices.DeleteFunc(registry, func(x Metric) bool { return x.Name == m.Name && x.get == nil })
		byName = indexMetrics(registry)
	}
}

// MetricList returns the declared metrics: the built-in ones in a record's
// order, then the declared ones in the order of their declaration.
func MetricList() []Metric {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return slices.Clone(registry)
}

// MetricNames lists the declared metrics' names in MetricList's order.
func MetricNames() []string {
	ms := MetricList()
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	return names
}

// LookupMetric describes a metric by name: a declared one, or a reported
// one (a name with a namespace), which gets its name as label and
// TensorBoard tag, a place in the grid and among the figures, and higher
// as better. ok is false for any other name.
func LookupMetric(name string) (Metric, bool) {
	registryMu.RLock()
	i, ok := byName[name]
	var m Metric
	if ok {
		m = registry[i]
	}
	registryMu.RUnlock()
	if ok {
		return m, true
	}
	if !strings.Contains(name, "/") || CheckMetricName(name) != nil {
		return Metric{}, false
	}
	return Metric{Name: name, Label: name, Tag: name, Grid: true, Figure: true, Better: Higher}, true
}

// declaredExtra reports whether name is a declared metric that is not a
// built-in one (its values live in a record's Extra).
func declaredExtra(name string) bool {
	registryMu.RLock()
	defer registryMu.RUnlock()
	i, ok := byName[name]
	return ok && registry[i].get == nil
}

// numDeclared is how many metrics beyond the built-in ones are declared.
func numDeclared() int {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return len(registry) - len(builtin)
}

// Value returns the figure the record holds under a metric's name: ok is
// false for a name LookupMetric does not know. An undefined value (null in
// the file, an optional figure the record lacks, a reported one it does not
// carry) is NaN.
func (m *Metrics) Value(name string) (v float64, ok bool) {
	if i, isBuiltin := builtinIndex[name]; isBuiltin {
		v, _ = builtin[i].get(m)
		return v, true
	}
	if x, has := m.Extra[name]; has {
		return float64(x), true
	}
	if _, known := LookupMetric(name); known {
		return math.NaN(), true
	}
	return math.NaN(), false
}

// builtinIndex finds a built-in metric without the registry's lock.
var builtinIndex = indexMetrics(builtin)

// Set records a figure that is not one of the record's fields: a declared
// metric's, or a reported one's.
func (m *Metrics) Set(name string, v float64) {
	if m.Extra == nil {
		m.Extra = map[string]Float{}
	}
	m.Extra[name] = Float(v)
}

// ExtraNames lists the names of the figures the record carries beyond its
// fields, sorted.
func (m *Metrics) ExtraNames() []string {
	names := make([]string, 0, len(m.Extra))
	for k := range m.Extra {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// MarshalJSON writes the record as one JSON object: the built-in figures in
// their order (null where undefined, optional ones only when present), then
// the others, sorted by name.
func (m Metrics) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 512)
	b = append(b, '{')
	for _, d := range builtin {
		v, ok := d.get(&m)
		if !ok {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = appendKey(b, d.Name)
		if d.Integer {
			b = strconv.AppendInt(b, int64(v), 10)
		} else {
			b = appendJSONFloat(b, v)
		}
	}
	for _, name := range m.ExtraNames() {
		b = append(b, ',')
		b = appendKey(b, name)
		b = appendJSONFloat(b, float64(m.Extra[name]))
	}
	return append(b, '}'), nil
}

func appendKey(b []byte, name string) []byte {
	b = strconv.AppendQuote(b, name) // names are checked to be plain ASCII
	return append(b, ':')
}

func appendJSONFloat(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// plainMetrics is Metrics without its methods, for the standard decoder.
type plainMetrics Metrics

// UnmarshalJSON reads a record: its fields, and every other figure into
// Extra (numbers; null as NaN). Only records that may carry others (a name
// with a slash, or declared metrics about) pay for the second look.
func (m *Metrics) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, (*plainMetrics)(m)); err != nil {
		return err
	}
	m.Extra = nil
	if bytes.IndexByte(b, '/') < 0 && numDeclared() == 0 {
		return nil
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for k, raw := range all {
		if _, isBuiltin := builtinIndex[k]; isBuiltin {
			continue
		}
		var f Float
		if err := f.UnmarshalJSON(raw); err != nil {
			continue // not a figure: left alone, as the standard decoder leaves unknown keys
		}
		m.Set(k, float64(f))
	}
	return nil
}
