// Package runs is `agenttrainer runs`: list the runs under a runs directory with their names, tags and notes, and set those (meta.json in each run directory).
package runs

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/internal/termtext"
	"github.com/agenttrainer/agenttrainer/runs/sweep"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// Options are the command's action and its arguments.
type Options struct {
	Action  string // "" (list), "tag", "untag", "note", "name"
	RunsDir string
	Tag     string // list: only runs with this tag
	Dir     string // the run directory an action changes
	Args    []string
}

const argsUsage = `[--runs-dir DIR] [--tag TAG]
       agenttrainer runs tag RUN_DIR TAG...
       agenttrainer runs untag RUN_DIR TAG...
       agenttrainer runs note RUN_DIR "one line"   (empty text removes the note)
       agenttrainer runs name RUN_DIR "display name"   (empty: the directory's name)`

// Parse reads the command line.
func Parse(args []string) (Options, error) {
	o := Options{RunsDir: config.Default().Trainer.RunsDir}
	fs := cmdutil.NewFlags("runs", argsUsage, "list runs with their names, tags and notes, or set them")
	fs.StringVar(&o.RunsDir, "runs-dir", o.RunsDir, "directory of runs (trainer.runs_dir)")
	fs.StringVar(&o.Tag, "tag", "", "list only the runs tagged `TAG`")
	rest, err := fs.ParseArgs(args)
	if err != nil {
		return o, err
	}
	if len(rest) == 0 {
		return o, nil
	}
	o.Action = rest[0]
	usage := func(format string, a ...any) error {
		return &cmdutil.UsageError{Err: fmt.Errorf(format, a...), Usage: fs.Usage()}
	}
	switch o.Action {
	case "tag", "untag":
		if len(rest) < 3 {
			return o, usage("runs %s needs a run directory and at least one tag", o.Action)
		}
	case "note", "name":
		if len(rest) < 2 {
			return o, usage("runs %s needs a run directory", o.Action)
		}
	default:
		return o, usage("unknown action %q (tag, untag, note or name)", o.Action)
	}
	o.Dir, o.Args = rest[1], rest[2:]
	if !runstore.IsRunDir(o.Dir) {
		return o, usage("%s is not a run directory (no %s or %s)", o.Dir, runstore.ConfigFile, runstore.MetricsFile)
	}
	return o, nil
}

// Run lists the runs or changes one.
func Run(_ context.Context, o Options, stdout, stderr io.Writer) error {
	if o.Action == "" {
		return list(o, stdout, stderr)
	}
	text := strings.Join(o.Args, " ")
	m, err := runstore.UpdateMeta(o.Dir, func(m *runstore.Meta) {
		switch o.Action {
		case "tag":
			m.Tags = append(m.Tags, o.Args...)
		case "untag":
			var keep []string
			for _, t := range m.Tags {
				if !contains(o.Args, t) {
					keep = append(keep, t)
				}
			}
			m.Tags = keep
		case "note":
			m.Note = text
		case "name":
			m.Name = text
		}
	})
	if err != nil {
		return &cmdutil.UsageError{Err: err}
	}
	fmt.Fprintf(stdout, "%s: name %q, tags [%s], note %q\n", termtext.Clean(o.Dir), m.Name, strings.Join(m.Tags, " "), m.Note)
	return nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func list(o Options, stdout, stderr io.Writer) error {
	runs, err := runstore.ListRuns(o.RunsDir)
	if err != nil {
		return err
	}
	runs = append(runs, sweepTrials(o.RunsDir)...)
	// Every text below comes from files anyone with write access to the
	// runs could have edited: runstore hands it over cleaned
	// (termtext.Clean), and the paths are cleaned here.
	for _, name := range runstore.Unlisted(o.RunsDir) {
		fmt.Fprintf(stderr, "%s: not listed: %s: the directory's name holds control characters, which a terminal would act on; rename it to list it\n",
			cmdutil.Prog, filepath.Join(termtext.Clean(o.RunsDir), name))
	}
	var warnings []string
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTAGS\tNOTE\tENV\tAGENT\tSTEPS\tBEST\tDIR")
	n := 0
	for _, r := range runs {
		if o.Tag != "" && !r.Meta.HasTag(o.Tag) {
			continue
		}
		n++
		best := "-"
		if !math.IsNaN(float64(r.Best)) {
			best = strconv.FormatFloat(float64(r.Best), 'g', 5, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.Label(), dash(strings.Join(r.Meta.Tags, ",")), dash(r.Meta.Note),
			dash(r.EnvID), dash(r.Agent), r.Steps, best, termtext.Clean(r.Dir))
		if r.Err != nil {
			warnings = append(warnings, fmt.Sprintf("%s: %s: %s", cmdutil.Prog, termtext.Clean(r.Dir), termtext.Clean(strings.ReplaceAll(r.Err.Error(), "\n", "; "))))
		}
	}
	tw.Flush()
	for _, w := range warnings {
		fmt.Fprintln(stderr, w)
	}
	if n == 0 {
		what := "no runs under " + o.RunsDir
		if o.Tag != "" {
			what = fmt.Sprintf("no run under %s is tagged %q", o.RunsDir, o.Tag)
		}
		fmt.Fprintln(stdout, what)
	}
	return nil
}

// sweepTrials lists the trials of the sweeps under runsDir, named by their
// sweep (lr-sweep/trial-003), as the app's runs browser lists them.
func sweepTrials(runsDir string) []runstore.RunInfo {
	entries, _ := os.ReadDir(runsDir)
	var out []runstore.RunInfo
	for _, e := range entries {
		dir := filepath.Join(runsDir, e.Name())
		if _, err := os.Stat(filepath.Join(dir, sweep.SpecFile)); !e.IsDir() || err != nil {
			continue
		}
		trials, _ := runstore.ListRuns(dir)
		for _, tr := range trials {
			tr.Name = termtext.Clean(e.Name()) + "/" + tr.Name // a name runstore has not cleaned
			out = append(out, tr)
		}
	}
	return out
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
