package envs

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Task files hold one task (the arguments of one environment) per row:
//
//   - JSON Lines (.jsonl, .ndjson, .json): one JSON object per line; blank
//     lines are skipped. A .json file that holds one JSON array of objects
//     is read too.
//   - CSV (.csv): a header row naming the columns, then one row per task.
//     Cells are typed: integers, then floats, then true/false (any case);
//     anything else is a string, and an empty cell leaves the column out
//     of that row.
//
// Parquet is not read: the pure-Go Parquet readers are large dependencies
// (parquet-go with its compression codecs, or Apache Arrow) for what a
// one-line pandas call converts to JSON Lines; the error says how.
//
// JSON numbers become int64 when they are written without a fraction or
// exponent and fit, float64 otherwise, as CSV cells do.

// taskRequired are the columns each task of an environment must give
// (rLLM's FrozenLakeEnv.from_dict reads size, seed and p without defaults).
var taskRequired = map[string][]string{
	"FrozenLake-v1": {"size", "p", "seed"},
}

// maxReportedRows is how many bad rows ValidateTasks describes.
const maxReportedRows = 3

// LoadTasks reads a task file, JSON Lines or CSV by its extension. It checks
// the file's syntax only; ValidateTasks checks the rows against an
// environment.
func LoadTasks(path string) ([]Params, error) {
	ext := strings.ToLower(filepath.Ext(path))
	switch ext {
	case ".jsonl", ".ndjson", ".json", ".csv":
	case ".parquet", ".pq":
		return nil, fmt.Errorf("task file %s: Parquet is not supported; convert it to JSON Lines, e.g. "+
			"pandas.read_parquet(%q).to_json(%q, orient=\"records\", lines=True)",
			path, path, strings.TrimSuffix(path, filepath.Ext(path))+".jsonl")
	case "":
		return nil, fmt.Errorf("task file %s has no extension; name it .jsonl (JSON Lines) or .csv (with a header row)", path)
	default:
		return nil, fmt.Errorf("task file %s: unsupported format %q; use .jsonl (JSON Lines) or .csv (with a header row)", path, ext)
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("task file %s does not exist", path)
	}
	if err != nil {
		return nil, fmt.Errorf("task file %s: %v", path, err)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte-order mark
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("task file %s is empty", path)
	}
	var rows []Params
	if ext == ".csv" {
		rows, err = parseCSVTasks(data)
	} else if trimmed := bytes.TrimSpace(data); ext == ".json" && trimmed[0] == '[' {
		rows, err = parseJSONArrayTasks(trimmed)
	} else {
		rows, err = parseJSONLTasks(data)
	}
	if err != nil {
		return nil, fmt.Errorf("task file %s: %w", path, err)
	}
	return rows, nil
}

func parseJSONLTasks(data []byte) ([]Params, error) {
	var rows []Params
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		row, err := jsonTask(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", i+1, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func parseJSONArrayTasks(data []byte) ([]Params, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("not a JSON array of tasks: %v", err)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("the JSON array holds no tasks")
	}
	rows := make([]Params, len(raw))
	for i, r := range raw {
		row, err := jsonTask(r)
		if err != nil {
			return nil, fmt.Errorf("element %d: %v", i+1, err)
		}
		rows[i] = row
	}
	return rows, nil
}

// jsonTask decodes one JSON object into a task.
func jsonTask(b []byte) (Params, error) {
	if !json.Valid(b) {
		var v any
		err := json.Unmarshal(b, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("not valid JSON (%v at byte %d)", se, se.Offset)
		}
		return nil, fmt.Errorf("not valid JSON (%v)", err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON (%v)", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want a JSON object like {\"size\": 4, \"p\": 0.8, \"seed\": 1}, got %s", jsonKind(v))
	}
	row := make(Params, len(obj))
	for k, x := range obj {
		row[k] = jsonValue(x)
	}
	return row, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// jsonValue turns JSON numbers into int64 or float64, recursively.
func jsonValue(v any) any {
	switch v := v.(type) {
	case json.Number:
		s := v.String()
		if !strings.ContainsAny(s, ".eE") {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return n
			}
		}
		f, _ := strconv.ParseFloat(s, 64) // valid JSON; huge values become ±Inf
		return f
	case []any:
		for i := range v {
			v[i] = jsonValue(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = jsonValue(v[k])
		}
	}
	return v
}

func parseCSVTasks(data []byte) ([]Params, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	header, err := r.Read()
	if err != nil {
		return nil, csvError(err)
	}
	for i, h := range header {
		header[i] = strings.TrimSpace(h)
		if header[i] == "" {
			return nil, fmt.Errorf("line 1: header column %d has no name", i+1)
		}
		if j := slices.Index(header[:i], header[i]); j >= 0 {
			return nil, fmt.Errorf("line 1: header names column %q twice (columns %d and %d)", header[i], j+1, i+1)
		}
	}
	var rows []Params
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(err)
		}
		line, _ := r.FieldPos(0)
		if len(rec) != len(header) {
			return nil, fmt.Errorf("line %d has %d values, the header has %d columns", line, len(rec), len(header))
		}
		row := make(Params, len(rec))
		for i, cell := range rec {
			if v, ok := csvValue(cell); ok {
				row[header[i]] = v
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("a header (%s) but no tasks", strings.Join(header, ","))
	}
	return rows, nil
}

func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("line %d, column %d: %v", pe.Line, pe.Column, pe.Err)
	}
	return err
}

// csvValue types a CSV cell; an empty cell is no value.
func csvValue(cell string) (any, bool) {
	s := strings.TrimSpace(cell)
	if s == "" {
		return nil, false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f, true
	}
	switch strings.ToLower(s) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return s, true
}

// ValidateTasks checks every row of a task set by building the environment
// from it, as training will: the columns the environment needs are there,
// each row's values are allowed, and all rows give the same spaces. The
// error names the first few bad rows (numbered from 1, the header not
// counted).
func ValidateTasks(envID string, rows []Params) error {
	spec, ok := registry[envID]
	if !ok {
		return fmt.Errorf("unknown environment %q (registered: %s)", envID, strings.Join(IDs(), ", "))
	}
	if len(rows) == 0 {
		return fmt.Errorf("no tasks")
	}
	var msgs []string
	bad := 0
	var first Env
	firstRow := 0
	for i, row := range rows {
		msg := taskProblem(spec, row)
		if msg == "" {
			e, err := spec.New(row)
			switch {
			case err != nil:
				msg = err.Error()
			case first == nil:
				first, firstRow = e, i+1
			default:
				if o, fo := e.ObservationSpace(), first.ObservationSpace(); o.Kind != fo.Kind || o.Size() != fo.Size() {
					msg = fmt.Sprintf("observation %v differs from row %d's %v (every task must share the arguments that shape the observation)", o, firstRow, fo)
				} else if as, fa := e.ActionSpace(), first.ActionSpace(); as.Kind != fa.Kind || as.Size() != fa.Size() || as.N != fa.N {
					msg = fmt.Sprintf("actions %v differ from row %d's %v", as, firstRow, fa)
				}
			}
		}
		if msg == "" {
			continue
		}
		bad++
		if len(msgs) < maxReportedRows {
			msgs = append(msgs, fmt.Sprintf("row %d: %s", i+1, msg))
		}
	}
	if bad == 0 {
		return nil
	}
	s := strings.Join(msgs, "; ")
	if bad > len(msgs) {
		s += fmt.Sprintf(" (and %d more bad rows; %d of %d in all)", bad-len(msgs), bad, len(rows))
	}
	return errors.New(s)
}

// taskProblem reports the columns a row lacks.
func taskProblem(spec Spec, row Params) string {
	need := taskRequired[spec.ID]
	var missing []string
	for _, k := range need {
		if _, ok := row[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("missing %s (every %s task needs %s)", strings.Join(missing, ", "), spec.ID, strings.Join(need, ", "))
}

// FrozenLakeTaskOptions describe a generated set of FrozenLake tasks.
type FrozenLakeTaskOptions struct {
	N        int     // how many tasks
	Size     int     // the lakes' side
	P        float64 // probability that a tile is frozen
	Slippery bool
	MaxSteps int
	// Seed picks the maps: set k draws map seeds Seed·10⁹, Seed·10⁹+1, …,
	// so sets made with different seeds never share a map seed.
	Seed int64
	// Exclude are tasks whose maps must not appear (the training set, when
	// making a validation set): two seeds can still draw the same small
	// lake.
	Exclude []Params
}

// flSeedStride separates the map seeds of task sets made with different
// seeds.
const flSeedStride = 1_000_000_000

// GenerateFrozenLakeTasks draws o.N tasks with distinct maps, none of them
// in o.Exclude, each solvable within o.MaxSteps. Map seeds are tried in
// order (see FrozenLakeTaskOptions.Seed); seeds whose map is a repeat or
// needs more than MaxSteps steps are skipped.
func GenerateFrozenLakeTasks(o FrozenLakeTaskOptions) ([]Params, error) {
	if o.N < 1 {
		return nil, fmt.Errorf("the number of tasks must be positive, got %d", o.N)
	}
	const maxSeed = math.MaxInt64/flSeedStride - 1
	if o.Seed < -maxSeed || o.Seed > maxSeed {
		return nil, fmt.Errorf("seed must be between %d and %d, got %d", -maxSeed, maxSeed, o.Seed)
	}
	cfg, err := parseFrozenLakeArgs(Params{"size": o.Size, "p": o.P, "is_slippery": o.Slippery,
		"max_steps": o.MaxSteps, "max_size": flMaxMaxSize})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, row := range o.Exclude {
		key, err := frozenLakeMapKey(row)
		if err != nil {
			return nil, fmt.Errorf("excluded task %d: %v", i+1, err)
		}
		seen[key] = true
	}
	tries := min(1000+50*o.N, flSeedStride)
	rows := make([]Params, 0, o.N)
	for k := 0; k < tries && len(rows) < o.N; k++ {
		cfg.seed = o.Seed*flSeedStride + int64(k)
		f, err := newFrozenLake(cfg)
		if err != nil {
			return nil, err
		}
		key := f.MapString()
		if seen[key] || f.shortest > cfg.maxSteps {
			continue
		}
		seen[key] = true
		rows = append(rows, Params{"seed": cfg.seed, "size": int64(cfg.size), "p": cfg.p,
			"is_slippery": cfg.slippery, "max_steps": int64(cfg.maxSteps)})
	}
	if len(rows) < o.N {
		excl := ""
		if len(o.Exclude) > 0 {
			excl = fmt.Sprintf(" and not among the %d excluded tasks", len(o.Exclude))
		}
		return nil, fmt.Errorf("asked for %d tasks, but only %d of %d map seeds gave distinct %d×%d maps solvable in %d steps%s; ask for fewer tasks or larger lakes",
			o.N, len(rows), tries, o.Size, o.Size, o.MaxSteps, excl)
	}
	return rows, nil
}

// FrozenLakeColumns is the column order of generated task files.
var FrozenLakeColumns = []string{"seed", "size", "p", "is_slippery", "max_steps"}

// WriteFrozenLakeTasks writes n generated FrozenLake tasks (see
// GenerateFrozenLakeTasks) to w as "jsonl" or "csv".
func WriteFrozenLakeTasks(w io.Writer, format string, n, size int, p float64, slippery bool, maxSteps int, seed int64) error {
	if err := checkTaskFormat(format); err != nil {
		return err
	}
	rows, err := GenerateFrozenLakeTasks(FrozenLakeTaskOptions{N: n, Size: size, P: p, Slippery: slippery, MaxSteps: maxSteps, Seed: seed})
	if err != nil {
		return err
	}
	return WriteTasks(w, format, FrozenLakeColumns, rows)
}

func checkTaskFormat(format string) error {
	if format != "jsonl" && format != "csv" {
		return fmt.Errorf("unknown task file format %q; use \"jsonl\" or \"csv\"", format)
	}
	return nil
}

// WriteTasks writes rows to w as "jsonl" (keys in the order of columns) or
// "csv" (a header of columns); a column a row lacks is left out (JSON) or
// empty (CSV).
func WriteTasks(w io.Writer, format string, columns []string, rows []Params) error {
	if err := checkTaskFormat(format); err != nil {
		return err
	}
	if format == "csv" {
		cw := csv.NewWriter(w)
		if err := cw.Write(columns); err != nil {
			return err
		}
		rec := make([]string, len(columns))
		for _, row := range rows {
			for i, c := range columns {
				rec[i] = ""
				if v, ok := row[c]; ok {
					rec[i] = csvCell(v)
				}
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	}
	var b bytes.Buffer
	for _, row := range rows {
		b.Reset()
		b.WriteByte('{')
		sep := ""
		for _, c := range columns {
			v, ok := row[c]
			if !ok {
				continue
			}
			k, _ := json.Marshal(c)
			x, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("column %s: %v", c, err)
			}
			b.WriteString(sep)
			b.Write(k)
			b.WriteString(": ")
			b.Write(x)
			sep = ", "
		}
		b.WriteString("}\n")
		if _, err := w.Write(b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

func csvCell(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(v), 'g', -1, 32)
	}
	return fmt.Sprint(v)
}

// SharedFrozenLakeMaps returns the indices (from 0) of the tasks in b whose
// map is also the map of a task in a: a validation set should share none
// with its training set.
func SharedFrozenLakeMaps(a, b []Params) ([]int, error) {
	inA := map[string]bool{}
	for i, row := range a {
		key, err := frozenLakeMapKey(row)
		if err != nil {
			return nil, fmt.Errorf("first set, row %d: %v", i+1, err)
		}
		inA[key] = true
	}
	var shared []int
	for i, row := range b {
		key, err := frozenLakeMapKey(row)
		if err != nil {
			return nil, fmt.Errorf("second set, row %d: %v", i+1, err)
		}
		if inA[key] {
			shared = append(shared, i)
		}
	}
	return shared, nil
}

// frozenLakeMapKey is the map a task row builds (its MapString). A row that
// does not say max_size is read with the largest, since the map does not
// depend on it.
func frozenLakeMapKey(row Params) (string, error) {
	if _, ok := row["max_size"]; !ok {
		row = maps.Clone(row)
		if row == nil {
			row = Params{}
		}
		row["max_size"] = flMaxMaxSize
	}
	cfg, err := parseFrozenLakeArgs(row)
	if err != nil {
		return "", err
	}
	desc, _, _, err := generateFrozenLakeMap(cfg.size, cfg.p, cfg.seed)
	if err != nil {
		return "", err
	}
	return (&FrozenLake{cfg: cfg, desc: desc}).MapString(), nil
}
