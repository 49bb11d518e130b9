package main

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

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

func runExport(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("export", "RUN_DIR --csv [--out FILE]", "export a run's metrics for spreadsheets", stderr)
	asCSV := fs.Bool("csv", false, "write metrics.jsonl as CSV (one row per iteration)")
	out := fs.String("out", "", "write to `file` instead of standard output")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(rest) != 1 || !*asCSV {
		fmt.Fprintln(stderr, "agenttrainer: usage: agenttrainer export RUN_DIR --csv [--out FILE]")
		return exitConfig
	}
	src, err := os.Open(filepath.Join(rest[0], runstore.MetricsFile))
	if err != nil {
		fmt.Fprintf(stderr, "agenttrainer: %s is not a run directory with metrics: %v\n", rest[0], err)
		return exitConfig
	}
	defer src.Close()
	w := stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintf(stderr, "agenttrainer: %v\n", err)
			return exitFail
		}
		defer f.Close()
		w = f
	}
	if err := metricsToCSV(src, w); err != nil {
		fmt.Fprintf(stderr, "agenttrainer: %v\n", err)
		return exitFail
	}
	return exitOK
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
