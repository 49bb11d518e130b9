// Package export is `agenttrainer export`: a run's metrics as CSV.
package export

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
	"github.com/agenttrainer/agenttrainer/internal/inputfile"
	"github.com/agenttrainer/agenttrainer/internal/termtext"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// Options are export's flags and run directory.
type Options struct {
	RunDir string
	CSV    bool
	Out    string // "": standard output
}

// Parse reads export's command line.
func Parse(args []string) (Options, error) {
	var o Options
	fs := cmdutil.NewFlags("export", "RUN_DIR [--csv] [--out FILE]", "export a run's metrics as CSV for spreadsheets")
	fs.BoolVar(&o.CSV, "csv", true, "write metrics.jsonl as CSV, one row per iteration (the only format there is)")
	fs.StringVar(&o.Out, "out", "", "write to `file` instead of standard output")
	rest, err := fs.ParseArgs(args)
	if err != nil {
		return o, err
	}
	if len(rest) != 1 {
		return o, cmdutil.Usagef("usage: agenttrainer export RUN_DIR [--out FILE]")
	}
	if !o.CSV {
		return o, cmdutil.Usagef("CSV is the only export format; drop --csv=false")
	}
	o.RunDir = rest[0]
	return o, nil
}

// Run writes the run's metrics as CSV.
func Run(_ context.Context, o Options, stdout, stderr io.Writer) error {
	path := filepath.Join(o.RunDir, runstore.MetricsFile)
	src, st, err := inputfile.Open(path, "metrics file")
	if err != nil {
		return cmdutil.Configf("%s is not a run directory with metrics: %v", termtext.Clean(o.RunDir), termtext.Error(err))
	}
	defer src.Close()
	if st.Size() > runstore.MaxMetricsFile {
		return cmdutil.Configf("%v", termtext.Error(&inputfile.TooBigError{Path: path, What: "metrics file", Size: st.Size(), Limit: runstore.MaxMetricsFile}))
	}
	if o.Out == "" {
		return metricsToCSV(src, path, stdout)
	}
	return atomicfile.Stream(o.Out, 0o644, func(w io.Writer) error { return metricsToCSV(src, path, w) })
}

// metricsColumns are the registry's metrics in its order, then the
// figures that environments, agents and workflows reported in r's records
// (sorted by name); r is left at its start.
func metricsColumns(r io.ReadSeeker, path string) ([]string, error) {
	cols := runstore.MetricNames()
	var reported []string
	err := inputfile.Lines(r, path, runstore.MaxRecordLine, func(_ int, line []byte, _ bool) error {
		if bytes.IndexByte(line, '/') < 0 { // reported names have a namespace
			return nil
		}
		var rec map[string]json.RawMessage
		if json.Unmarshal(line, &rec) != nil {
			return nil // said in the second pass
		}
		for k := range rec {
			if m, ok := runstore.LookupMetric(k); ok && m.Reported() && !slices.Contains(reported, k) {
				reported = append(reported, k)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(reported)
	_, err = r.Seek(0, io.SeekStart)
	return append(cols, reported...), err
}

// metricsToCSV converts metrics records to CSV, numbers as written (null as
// an empty cell), stopping quietly at a torn last line. A line that is not
// a record, or one longer than a record can be, is an error naming its
// number (path names the file).
func metricsToCSV(r io.ReadSeeker, path string, w io.Writer) error {
	cols, err := metricsColumns(r, path)
	if err != nil {
		return cmdutil.Configf("%v", termtext.Error(err))
	}
	cw := csv.NewWriter(w)
	cw.Write(cols)
	row := make([]string, len(cols))
	err = inputfile.Lines(r, path, runstore.MaxRecordLine, func(n int, line []byte, complete bool) error {
		if len(bytes.TrimSpace(line)) == 0 {
			return nil
		}
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(line, &rec); err != nil {
			if !complete {
				return nil // the writer has not finished it
			}
			return fmt.Errorf("%s line %d is not a metrics record: %v", path, n, err)
		}
		for i, c := range cols {
			v := string(rec[c])
			if v == "null" {
				v = ""
			}
			row[i] = termtext.Clean(v) // a cell holds what the file says: no control characters
		}
		return cw.Write(row)
	})
	cw.Flush()
	if err != nil {
		return cmdutil.Configf("%v", termtext.Error(err))
	}
	return cw.Error()
}
