// Package tasks reads, checks and writes task datasets: JSON Lines or CSV files whose rows are environment arguments.
package tasks

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/internal/inputfile"
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

// MaxTaskFile bounds a task file (a million FrozenLake rows take 60 MiB).
const MaxTaskFile = 1 << 30

// LoadTasks reads a task file, JSON Lines or CSV by its extension. It checks
// the file's syntax only; ValidateTasks checks the rows against an
// environment.
func LoadTasks(path string) ([]envs.Params, error) {
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
	data, err := inputfile.Read(path, MaxTaskFile, "task file")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("task file %s does not exist", path)
	}
	if err != nil {
		return nil, fmt.Errorf("task file: %v", err)
	}
	if len(bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))) == 0 {
		return nil, fmt.Errorf("task file %s is empty", path)
	}
	rows, err := ParseTasks(data, ext)
	if err != nil {
		return nil, fmt.Errorf("task file %s: %w", path, err)
	}
	return rows, nil
}

// ParseTasks parses the content of a task file whose extension is ext
// (.csv, or JSON Lines for .jsonl, .ndjson and .json, where a .json file may
// also hold one JSON array of rows).
func ParseTasks(data []byte, ext string) ([]envs.Params, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte-order mark
	trimmed := bytes.TrimSpace(data)
	switch {
	case len(trimmed) == 0:
		return nil, errors.New("the file is empty")
	case ext == ".csv":
		return parseCSVTasks(data)
	case ext == ".json" && trimmed[0] == '[':
		return parseJSONArrayTasks(trimmed)
	}
	return parseJSONLTasks(data)
}

func parseJSONLTasks(data []byte) ([]envs.Params, error) {
	var rows []envs.Params
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

func parseJSONArrayTasks(data []byte) ([]envs.Params, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("not a JSON array of tasks: %v", err)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("the JSON array holds no tasks")
	}
	rows := make([]envs.Params, len(raw))
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
func jsonTask(b []byte) (envs.Params, error) {
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
	row := make(envs.Params, len(obj))
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

func parseCSVTasks(data []byte) ([]envs.Params, error) {
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
	var rows []envs.Params
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
		row := make(envs.Params, len(rec))
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
func ValidateTasks(envID string, rows []envs.Params) error {
	spec, ok := envs.Lookup(envID)
	if !ok {
		return fmt.Errorf("unknown environment %q (registered: %s)", envID, strings.Join(envs.IDs(), ", "))
	}
	if len(rows) == 0 {
		return fmt.Errorf("no tasks")
	}
	var msgs []string
	bad := 0
	var first envs.Env
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
func taskProblem(spec envs.Spec, row envs.Params) string {
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

// CheckFormat checks a task file format name for WriteTasks: "jsonl" or
// "csv".
func CheckFormat(format string) error {
	if format != "jsonl" && format != "csv" {
		return fmt.Errorf("unknown task file format %q; use \"jsonl\" or \"csv\"", format)
	}
	return nil
}

// WriteTasks writes rows to w as "jsonl" (keys in the order of columns) or
// "csv" (a header of columns); a column a row lacks is left out (JSON) or
// empty (CSV).
func WriteTasks(w io.Writer, format string, columns []string, rows []envs.Params) error {
	tw, err := NewWriter(w, format, columns)
	if err != nil {
		return err
	}
	for _, row := range rows {
		if err := tw.Write(row); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// Writer writes task rows one at a time, as WriteTasks does, so that a
// large set is never held whole.
type Writer struct {
	w       io.Writer
	csv     *csv.Writer
	columns []string
	rec     []string
	b       bytes.Buffer
}

// NewWriter starts a task file of format ("jsonl" or "csv") on w.
func NewWriter(w io.Writer, format string, columns []string) (*Writer, error) {
	if err := CheckFormat(format); err != nil {
		return nil, err
	}
	tw := &Writer{w: w, columns: columns}
	if format == "csv" {
		tw.csv, tw.rec = csv.NewWriter(w), make([]string, len(columns))
		if err := tw.csv.Write(columns); err != nil {
			return nil, err
		}
	}
	return tw, nil
}

// Write writes one row.
func (tw *Writer) Write(row envs.Params) error {
	if tw.csv != nil {
		for i, c := range tw.columns {
			tw.rec[i] = ""
			if v, ok := row[c]; ok {
				tw.rec[i] = csvCell(v)
			}
		}
		return tw.csv.Write(tw.rec)
	}
	b := &tw.b
	b.Reset()
	b.WriteByte('{')
	sep := ""
	for _, c := range tw.columns {
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
	_, err := tw.w.Write(b.Bytes())
	return err
}

// Flush writes what is buffered (CSV).
func (tw *Writer) Flush() error {
	if tw.csv != nil {
		tw.csv.Flush()
		return tw.csv.Error()
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
