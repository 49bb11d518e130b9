package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/internal/anynum"
	"github.com/agenttrainer/agenttrainer/internal/inputfile"
	"github.com/agenttrainer/agenttrainer/internal/suggest"
)

// Error is a configuration mistake: which key (if any), where it came from
// (a file, the command line, a live edit) and what is wrong.
type Error struct {
	Source string // "config.toml", "command line", …; may be empty
	Key    string
	Msg    string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Source != "" {
		b.WriteString(e.Source + ": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// IsConfigError reports whether err is (or wraps) a configuration mistake,
// as opposed to a failure while running.
func IsConfigError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// The free-form tables: their keys are not in the schema, and their
// values are whatever the environment or text agent reads.
var tableKeys = []string{"env.args", "workflow.agent_args"}

// tableKey returns the free-form table that name is or lies inside ("":
// none).
func tableKey(name string) string {
	for _, t := range tableKeys {
		if name == t || strings.HasPrefix(name, t+".") {
			return t
		}
	}
	return ""
}

// table returns the address of a free-form table's field.
func (c *Config) table(key string) *map[string]any {
	if key == "workflow.agent_args" {
		return &c.Workflow.AgentArgs
	}
	return &c.Env.Args
}

// Resolve builds a config from the embedded defaults, the preset of its
// env.id, an optional file and key=value overrides, and validates it.
func Resolve(file string, overrides []string) (Config, error) {
	return ResolveWith(func(c *Config) error {
		if file != "" {
			if err := c.LoadFile(file); err != nil {
				return err
			}
		}
		return c.ApplyArgs(overrides)
	})
}

// LoadFile applies every key of a TOML file on top of c.
func (c *Config) LoadFile(path string) error {
	data, err := inputfile.Read(path, maxConfigFile, "config file")
	if err != nil {
		if u := errors.Unwrap(err); u != nil {
			err = u // the path is the Source already
		}
		return &Error{Source: path, Msg: fmt.Sprintf("cannot read config file: %v", err)}
	}
	return c.LoadTOML(string(data), path)
}

// maxConfigFile bounds a config file: the documented defaults are 5 KiB.
const maxConfigFile = 1 << 20

// LoadTOML applies every key of a TOML document on top of c; source names
// the document in error messages.
func (c *Config) LoadTOML(src, source string) error {
	var m map[string]any
	if _, err := toml.Decode(src, &m); err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return &Error{Source: source, Msg: fmt.Sprintf("not valid TOML at line %d: %s", perr.Position.Line, perr.Message)}
		}
		return &Error{Source: source, Msg: "not valid TOML: " + err.Error()}
	}
	return c.applyTable(m, source)
}

// ApplyArgs applies overrides written as "key=value" (dot-notation keys,
// TOML values; strings may go without quotes).
func (c *Config) ApplyArgs(args []string) error {
	var errs []error
	for _, arg := range args {
		key, raw, ok := strings.Cut(arg, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			errs = append(errs, &Error{Source: "override " + strconv.Quote(arg),
				Msg: "not of the form key=value (for example ppo.learning_rate=3e-4)"})
			continue
		}
		if err := c.SetString(key, raw); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ApplyMap applies overrides given as a Go map with dot-notation keys; values
// may also be nested maps ({"ppo": {"gamma": 0.98}}).
func (c *Config) ApplyMap(m map[string]any) error { return c.applyTable(m, "") }

func (c *Config) applyTable(m map[string]any, source string) error {
	flat := map[string]any{}
	flatten("", m, flat)
	keys := make([]string, 0, len(flat))
	for k := range flat {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var errs []error
	for _, k := range keys {
		if err := c.set(k, flat[k], source); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func flatten(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		name := k
		if prefix != "" {
			name = prefix + "." + k
		}
		// An empty table is a value where tables are values (env.args and
		// the tables inside it: `[env.args.0]` reads back as {}), else
		// nothing to set.
		isArgs := tableKey(name) != ""
		if sub, ok := v.(map[string]any); ok && (len(sub) > 0 || !isArgs) {
			flatten(name, sub, out)
			continue
		}
		out[name] = v
	}
}

// SetString sets a key from its textual form: a TOML value, or a bare string.
func (c *Config) SetString(key, raw string) error {
	if !utf8.ValidString(key) || !utf8.ValidString(raw) {
		// The resolved config is written as TOML, which must be UTF-8.
		return &Error{Key: strconv.QuoteToASCII(key), Msg: fmt.Sprintf("%s is not UTF-8 text", strconv.QuoteToASCII(raw))}
	}
	v, err := ParseValue(raw)
	if err != nil {
		return &Error{Key: key, Msg: err.Error()}
	}
	return c.set(key, v, "")
}

// Set sets a key to a Go value (int, float, bool, string, []int, …).
func (c *Config) Set(key string, v any) error { return c.set(key, v, "") }

// ParseValue reads a TOML value; text that is not TOML and does not look
// like an attempt at a quoted string, list or table is taken as a bare string.
func ParseValue(raw string) (any, error) {
	var m map[string]any
	if _, err := toml.Decode("v = "+raw, &m); err == nil {
		return m["v"], nil
	}
	s := strings.TrimSpace(raw)
	if s != "" && strings.ContainsAny(s[:1], `["'{`) {
		return nil, fmt.Errorf("cannot read %s as a TOML value (check brackets and quotes, e.g. [64, 64] or \"text\")", raw)
	}
	return s, nil
}

func (c *Config) set(key string, v any, source string) error {
	fail := func(format string, a ...any) error {
		return &Error{Source: source, Key: key, Msg: fmt.Sprintf(format, a...)}
	}
	v = normalize(v)
	if t := tableKey(key); t != "" {
		return c.setArg(c.table(t), strings.TrimPrefix(strings.TrimPrefix(key, t), "."), v, fail)
	}
	k, ok := Lookup(key)
	if !ok {
		e := unknownKeyError(key)
		e.Source = source
		return e
	}
	if err := c.setKey(k, v); err != nil {
		return fail("%s", err)
	}
	return nil
}

// setKey converts v to k's type, checks it and stores it.
func (c *Config) setKey(k Key, v any) error {
	var t reflect.Type
	var field reflect.Value
	if k.agentKey != "" {
		t = reflect.TypeOf(k.Default)
	} else {
		field = reflect.ValueOf(c).Elem().FieldByIndex(k.index)
		t = field.Type()
	}
	val, err := convert(t, v)
	if err != nil {
		return err
	}
	if err := k.check(val.Interface()); err != nil {
		return err
	}
	if k.agentKey != "" {
		if c.Agent.Params == nil {
			c.Agent.Params = agents.Config{}
		}
		c.Agent.Params[k.agentKey] = val.Interface()
		return nil
	}
	field.Set(val)
	return nil
}

// check enforces k's constraint: an agent's own validation where it has
// one (Check then describes it), else the check words.
func (k Key) check(v any) error {
	if k.validate != nil {
		return k.validate(v)
	}
	return checkValue(k.Check, v)
}

func (c *Config) setArg(table *map[string]any, sub string, v any, fail func(string, ...any) error) error {
	if sub == "" {
		t, ok := v.(map[string]any)
		if !ok {
			return fail("expects a table such as {command = [\"python3\", \"server.py\"]}, got %s", describe(v))
		}
		*table = cloneTable(t)
		return nil
	}
	if *table == nil {
		*table = map[string]any{}
	}
	parts := strings.Split(sub, ".")
	m := *table
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
	return nil
}

// normalize maps Go values onto the types TOML decoding produces.
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case float32:
		return float64(x)
	case []int:
		out := make([]any, len(x))
		for i, n := range x {
			out[i] = int64(n)
		}
		return out
	case [][]int:
		out := make([]any, len(x))
		for i, l := range x {
			out[i] = normalize(l)
		}
		return out
	case []int64:
		out := make([]any, len(x))
		for i, n := range x {
			out[i] = n
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	}
	return v
}

// describe names a value and its TOML type for error messages.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q (a string)", x)
	case int64:
		return fmt.Sprintf("%d (an integer)", x)
	case float64:
		return fmt.Sprintf("%s (a float)", formatFloat(x))
	case bool:
		return fmt.Sprintf("%v (a boolean)", x)
	case []any:
		return fmt.Sprintf("%v (a list)", x)
	case map[string]any:
		return "a table"
	case nil:
		return "nothing"
	}
	return fmt.Sprintf("%v (a %T)", v, v)
}

func convert(t reflect.Type, v any) (reflect.Value, error) {
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		num := v
		if x, ok := v.(string); ok { // "1e6", "1_000_000"
			if p, err := strconv.ParseFloat(strings.ReplaceAll(x, "_", ""), 64); err == nil {
				num = p
			}
		}
		n, ok := anynum.Int(num)
		if !ok {
			return reflect.Value{}, fmt.Errorf("expects an integer, got %s", describe(v))
		}
		return reflect.ValueOf(n).Convert(t), nil
	case reflect.Float64:
		if x, ok := v.(string); ok {
			if p, err := strconv.ParseFloat(x, 64); err == nil && !math.IsNaN(p) && !math.IsInf(p, 0) {
				return reflect.ValueOf(p), nil
			}
		}
		x, ok := anynum.Float(v)
		if !ok {
			return reflect.Value{}, fmt.Errorf("expects a number, got %s", describe(v))
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return reflect.Value{}, fmt.Errorf("expects a finite number, got %s", describe(v))
		}
		return reflect.ValueOf(x), nil
	case reflect.Bool:
		switch x := v.(type) {
		case bool:
			return reflect.ValueOf(x), nil
		case string:
			if b, err := strconv.ParseBool(x); err == nil {
				return reflect.ValueOf(b), nil
			}
		}
		return reflect.Value{}, fmt.Errorf("expects true or false, got %s", describe(v))
	case reflect.String:
		if s, ok := v.(string); ok {
			return reflect.ValueOf(s), nil
		}
		return reflect.Value{}, fmt.Errorf("expects a string, got %s (quote it if you meant text)", describe(v))
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return convertStrings(v)
		}
		if t.Elem().Kind() == reflect.Slice {
			return convertLayers(v)
		}
		list, ok := v.([]any)
		if !ok {
			return reflect.Value{}, fmt.Errorf("expects a list of integers such as [64, 64], got %s", describe(v))
		}
		out := make([]int, len(list))
		for i, e := range list {
			n, ok := e.(int64)
			if !ok {
				return reflect.Value{}, fmt.Errorf("expects a list of integers such as [64, 64], but element %d is %s", i, describe(e))
			}
			out[i] = int(n)
		}
		return reflect.ValueOf(out), nil
	case reflect.Map:
		if m, ok := v.(map[string]any); ok {
			return reflect.ValueOf(cloneTable(m)), nil
		}
		return reflect.Value{}, fmt.Errorf("expects a table, got %s", describe(v))
	}
	return reflect.Value{}, fmt.Errorf("unsupported type %s", t)
}

// convertLayers reads a list of lists of integers (agent.conv).
func convertLayers(v any) (reflect.Value, error) {
	const example = "[[16, 3, 1]] (out_channels, kernel, stride[, padding] per layer)"
	list, ok := v.([]any)
	if !ok {
		return reflect.Value{}, fmt.Errorf("expects a list of layers such as %s, got %s", example, describe(v))
	}
	out := make([][]int, len(list))
	for i, e := range list {
		inner, ok := e.([]any)
		if !ok {
			return reflect.Value{}, fmt.Errorf("expects a list of layers such as %s, but layer %d is %s", example, i+1, describe(e))
		}
		out[i] = make([]int, len(inner))
		for j, x := range inner {
			n, ok := x.(int64)
			if !ok {
				return reflect.Value{}, fmt.Errorf("expects a list of layers such as %s, but element %d of layer %d is %s", example, j+1, i+1, describe(x))
			}
			out[i][j] = int(n)
		}
	}
	return reflect.ValueOf(out), nil
}

func convertStrings(v any) (reflect.Value, error) {
	if s, ok := v.(string); ok { // one file without brackets
		return reflect.ValueOf([]string{s}), nil
	}
	list, ok := v.([]any)
	if !ok {
		return reflect.Value{}, fmt.Errorf("expects a list of strings such as [\"train.jsonl\"], got %s", describe(v))
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			return reflect.Value{}, fmt.Errorf("expects a list of strings, but element %d is %s", i, describe(e))
		}
		out[i] = s
	}
	return reflect.ValueOf(out), nil
}

// MaxRunName bounds trainer.name: the run directory's name is
// <YYYYMMDD-HHMMSS>-<env>-<agent>-<name>[.N], and most file systems take at
// most 255 bytes for one name.
const MaxRunName = 128

var (
	// intervalRE is a range check such as [1,1048576] or (0,1]: square
	// brackets include the bound, round ones exclude it.
	intervalRE = regexp.MustCompile(`^([\[(])(-?[0-9.e+]+),(-?[0-9.e+]+)([\])])$`)
	deviceRE   = regexp.MustCompile(`^(auto|cpu|cuda|cuda:[0-9]+)$`)
	runNameRE  = regexp.MustCompile(`^[A-Za-z0-9._-]*$`)
)

// checkInterval enforces a range check such as [1,1048576] or (0,1]; the
// refusal names the range, so the user learns the limit.
func checkInterval(check string, x float64, v any) error {
	m := intervalRE.FindStringSubmatch(check)
	lo, _ := strconv.ParseFloat(m[2], 64)
	hi, _ := strconv.ParseFloat(m[3], 64)
	ok := !math.IsNaN(x) &&
		(x > lo || (m[1] == "[" && x == lo)) &&
		(x < hi || (m[4] == "]" && x == hi))
	if !ok {
		return fmt.Errorf("must be %s, got %v", DescribeCheck(check), v)
	}
	return nil
}

// DescribeCheck puts a schema constraint into words, for messages and the
// config editor.
func DescribeCheck(c string) string {
	switch {
	case c == "":
		return ""
	case c == ">0":
		return "must be > 0"
	case c == ">=0":
		return "must be ≥ 0"
	case intervalRE.MatchString(c):
		m := intervalRE.FindStringSubmatch(c)
		lo, hi := m[2], m[3]
		if n, err := strconv.ParseFloat(hi, 64); err == nil && n >= 10000 && n == math.Trunc(n) {
			hi = strconv.FormatFloat(n, 'f', 0, 64)
		}
		switch m[1] + m[4] {
		case "[]":
			return "between " + lo + " and " + hi
		case "(]":
			return "over " + lo + " and at most " + hi
		case "[)":
			return "at least " + lo + " and under " + hi
		}
		return "between " + lo + " and " + hi + " (exclusive)"
	case c == "nonempty":
		return "must not be empty"
	case strings.HasPrefix(c, "each"):
		return "each layer " + DescribeCheck(strings.TrimPrefix(c, "each"))
	case strings.HasPrefix(c, "oneof="):
		return "one of " + strings.ReplaceAll(strings.TrimPrefix(c, "oneof="), "|", ", ")
	case c == "device":
		return "auto, cpu, cuda or cuda:N"
	case c == "name":
		return fmt.Sprintf("letters, digits, . _ -; at most %d bytes", MaxRunName)
	}
	return c
}

// checkValue enforces a field's `check` tag.
func checkValue(check string, v any) error {
	num := func() float64 {
		if x, ok := anynum.Float(v); ok {
			return x
		}
		return math.NaN()
	}
	switch {
	case check == "":
		return nil
	case check == ">0":
		if !(num() > 0) {
			return fmt.Errorf("must be greater than 0, got %v", v)
		}
	case check == ">=0":
		if !(num() >= 0) {
			return fmt.Errorf("must be 0 or more, got %v", v)
		}
	case intervalRE.MatchString(check):
		return checkInterval(check, num(), v)
	case check == "nonempty":
		if v.(string) == "" {
			return errors.New("must not be empty")
		}
	case strings.HasPrefix(check, "each"):
		list := v.([]int)
		if len(list) == 0 {
			return errors.New("needs at least one hidden layer, e.g. [64, 64]")
		}
		for _, n := range list {
			if checkValue(strings.TrimPrefix(check, "each"), n) != nil {
				return fmt.Errorf("layer sizes must be %s, got %v", DescribeCheck(strings.TrimPrefix(check, "each")), list)
			}
		}
	case strings.HasPrefix(check, "oneof="):
		opts := strings.Split(strings.TrimPrefix(check, "oneof="), "|")
		if !slices.Contains(opts, v.(string)) {
			return fmt.Errorf("must be one of %s, got %q", strings.Join(opts, ", "), v)
		}
	case check == "device":
		if !deviceRE.MatchString(v.(string)) {
			return fmt.Errorf(`must be "auto", "cpu", "cuda" or "cuda:N", got %q`, v)
		}
	case check == "name":
		if n := len(v.(string)); n > MaxRunName {
			return fmt.Errorf("is %d bytes long, over the limit of %d (it names the run's directory, which a file system keeps under 255 bytes with the date, env and agent)", n, MaxRunName)
		}
		if !runNameRE.MatchString(v.(string)) {
			return fmt.Errorf("may use only letters, digits, '.', '_' and '-' (it names a directory), got %q", v)
		}
	}
	return nil
}

// MaxLossCoef bounds ppo.vf_coef and ppo.ent_coef: the loss they weigh is
// computed in float32, and 1e308 made it NaN once the run had started.
const MaxLossCoef = 10000

// Validate checks every key's constraint and the relations between keys.
func (c *Config) Validate() error {
	var errs []error
	for _, k := range Schema() {
		if err := k.check(c.value(k)); err != nil {
			errs = append(errs, &Error{Key: k.Name, Msg: err.Error()})
		}
	}
	for _, coef := range []struct {
		key string
		v   float64
	}{{"ppo.vf_coef", c.PPO.VFCoef}, {"ppo.ent_coef", c.PPO.EntCoef}} {
		if coef.v > MaxLossCoef {
			errs = append(errs, &Error{Key: coef.key, Msg: fmt.Sprintf("must be at most %d: a larger one makes the loss overflow float32 and the run fail, got %v", MaxLossCoef, coef.v)})
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if c.Grouped() {
		if c.PPO.GroupSize < 2 {
			errs = append(errs, &Error{Key: "ppo.group_size", Msg: fmt.Sprintf("%s compares episodes within a group, so it needs at least 2, got %d", c.PPO.AdvEstimator, c.PPO.GroupSize)})
		} else if c.Env.NumEnvs%c.PPO.GroupSize != 0 {
			errs = append(errs, &Error{Key: "ppo.group_size", Msg: fmt.Sprintf("%d does not divide env.num_envs %d (each group of environments plays one task)", c.PPO.GroupSize, c.Env.NumEnvs)})
		}
	}
	batch := c.BatchSize()
	if batch%c.PPO.NumMinibatches != 0 {
		errs = append(errs, &Error{Key: "ppo.num_minibatches", Msg: fmt.Sprintf(
			"%d does not divide the batch of %d (env.num_envs %d × ppo.num_steps %d); try %s",
			c.PPO.NumMinibatches, batch, c.Env.NumEnvs, c.PPO.NumSteps, divisorsNear(batch, c.PPO.NumMinibatches))})
	} else if c.PPO.NormAdv && c.MinibatchSize() < 2 {
		errs = append(errs, &Error{Key: "ppo.num_minibatches", Msg: fmt.Sprintf(
			"minibatches of %d sample cannot normalise advantages; use fewer minibatches or ppo.norm_adv=false", c.MinibatchSize())})
	}
	return errors.Join(errs...)
}

// divisorsNear names the divisors of n just below and above want.
func divisorsNear(n, want int) string {
	var ds []string
	for d := min(want, n); d >= 1; d-- {
		if n%d == 0 {
			ds = append(ds, strconv.Itoa(d))
			break
		}
	}
	for d := want + 1; d <= n; d++ {
		if n%d == 0 {
			ds = append(ds, strconv.Itoa(d))
			break
		}
	}
	return strings.Join(ds, " or ")
}

func unknownKeyError(key string) *Error {
	e := &Error{Key: key, Msg: "unknown key"}
	if near := Nearest(key); len(near) > 0 {
		e.Msg += suggest.DidYouMean(near)
	} else {
		e.Msg += " (`agenttrainer config` lists every key)"
	}
	return e
}

// Nearest returns up to two keys closest to name by edit distance, also
// matching the last segment alone (learning_rate → ppo.learning_rate).
func Nearest(name string) []string {
	keys := Schema()
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Name
	}
	last := name[strings.LastIndex(name, ".")+1:]
	return suggest.Closest(names, max(2, len(last)/3), func(k string) int {
		return min(suggest.Distance(name, k), suggest.Distance(last, k[strings.LastIndex(k, ".")+1:])+1)
	})
}
