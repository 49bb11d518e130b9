// Package export is `agenttrainer export`: a run's metrics as CSV.
package export

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
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
	fs.BoolVar(&o.CSV, "csv", true, "write metrics.jsonl as CSV, one row per iteration (the only format, so the default)")
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
	src, err := os.Open(filepath.Join(o.RunDir, runstore.MetricsFile))
	if err != nil {
		return cmdutil.Configf("%s is not a run directory with metrics: %v", o.RunDir, err)
	}
	defer src.Close()
	w := stdout
	if o.Out != "" {
		f, err := os.Create(o.Out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	return metricsToCSV(src, w)
}

// metricsColumns are the registry's metrics in its order, then the
// figures that environments, agents and workflows reported in r's records
// (sorted by name); r is left at its start.
func metricsColumns(r io.ReadSeeker) ([]string, error) {
	cols := runstore.MetricNames()
	var reported []string
	sc := newScanner(r)
	for sc.Scan() {
		if bytes.IndexByte(sc.Bytes(), '/') < 0 { // reported names have a namespace
			continue
		}
		var rec map[string]json.RawMessage
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue // said in the second pass
		}
		for k := range rec {
			if m, ok := runstore.LookupMetric(k); ok && m.Reported() && !slices.Contains(reported, k) {
				reported = append(reported, k)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	slices.Sort(reported)
	_, err := r.Seek(0, io.SeekStart)
	return append(cols, reported...), err
}

func newScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	return sc
}

// metricsToCSV converts metrics records to CSV, numbers as written (null as
// an empty cell), stopping quietly at a torn last line.
func metricsToCSV(r io.ReadSeeker, w io.Writer) error {
	cols, err := metricsColumns(r)
	if err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	cw.Write(cols)
	sc := newScanner(r)
	row := make([]string, len(cols))
	for line := 1; sc.Scan(); line++ {
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return fmt.Errorf("metrics.jsonl line %d is not JSON: %v", line, err)
		}
		for i, c := range cols {
			v := string(rec[c])
			if v == "null" {
				v = ""
			}
			row[i] = v
		}
		cw.Write(row)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	return sc.Err()
}
