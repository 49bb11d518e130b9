// Package export is `agenttrainer export`: a run's metrics as CSV.
package export

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/trainer"
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

// metricsColumns are the metric names in the order of the record type.
func metricsColumns() []string {
	var cols []string
	t := reflect.TypeOf(trainer.Metrics{})
	for i := 0; i < t.NumField(); i++ {
		cols = append(cols, strings.Split(t.Field(i).Tag.Get("json"), ",")[0])
	}
	return cols
}

// metricsToCSV converts metrics records to CSV, numbers as written (null as
// an empty cell), stopping quietly at a torn last line.
func metricsToCSV(r io.Reader, w io.Writer) error {
	cols := metricsColumns()
	cw := csv.NewWriter(w)
	cw.Write(cols)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
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
