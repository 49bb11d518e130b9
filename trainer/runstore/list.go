package runstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/agenttrainer/agenttrainer/internal/inputfile"
	"github.com/agenttrainer/agenttrainer/internal/termtext"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// This file reads run directories back: the runs browser, the command line
// and tooling use it. Readers must cope with a run that is still being
// written (or whose writer crashed): the last line of a JSONL file may be
// cut short, and a run may not have any metrics yet.

// RunInfo summarises one run directory for a listing.
type RunInfo struct {
	Dir        string    // path of the run directory
	Name       string    // its base name
	Started    time.Time // from the name's timestamp, else the directory's modification time
	EnvID      string    // from config.toml
	Agent      string
	TotalSteps int64   // ppo.total_timesteps the run was configured for (trainer.total_training_steps for a language model)
	Iters      int     // metrics records written
	Steps      int64   // environment steps reached
	Best       Float   // best ep_return_mean (NaN before any episode finished)
	Last       Float   // the last ep_return_mean
	Edits      int     // live edits applied
	WallS      float64 // wall seconds the training ran (time_s of the last record)
	Meta       Meta    // display name, tags and note (meta.json)
	Err        error   // what could not be read; the rest of the fields are still filled where possible
}

// Label is the run's display name: the one given in meta.json, else the
// directory's.
func (r RunInfo) Label() string {
	if r.Meta.Name != "" {
		return r.Meta.Name
	}
	return r.Name
}

// ListRuns returns the runs under runsDir, newest first. A missing runsDir
// holds no runs. Directories that hold neither config.toml nor metrics.jsonl
// are not runs and are skipped.
func ListRuns(runsDir string) ([]RunInfo, error) { return List(runsDir, nil) }

// List is ListRuns for a caller that keeps summaries from an earlier
// listing: cached, when not nil, is asked for each run directory first and
// may return its summary (ok) instead of having it read again.
func List(runsDir string, cached func(dir string) (info RunInfo, ok bool)) ([]RunInfo, error) {
	runs, err := Scan(runsDir)
	for i, r := range runs {
		if cached != nil {
			if c, ok := cached(r.Dir); ok {
				runs[i] = c
				continue
			}
		}
		runs[i] = ReadRunInfo(r.Dir)
	}
	return runs, err
}

// Scan lists the run directories under runsDir, newest first, without
// reading them: each RunInfo holds only Dir, Name, Started and Meta (small
// files), so a browser can show hundreds of runs at once and read their
// summaries (ReadRunInfo, a SummaryCache) afterwards.
func Scan(runsDir string) ([]RunInfo, error) {
	entries, err := os.ReadDir(runsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var runs []RunInfo
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(runsDir, e.Name())
		if termtext.HasControl(e.Name()) || !IsRunDir(dir) {
			continue // a name a terminal would act on is never shown (Unlisted names it safely)
		}
		r := RunInfo{Dir: dir, Name: e.Name(), Best: Float(math.NaN()), Last: Float(math.NaN())}
		r.Started = startedOf(dir, r.Name)
		r.Meta, r.Err = ReadMeta(dir)
		runs = append(runs, r)
	}
	sort.SliceStable(runs, func(i, j int) bool {
		if !runs[i].Started.Equal(runs[j].Started) {
			return runs[i].Started.After(runs[j].Started)
		}
		return runs[i].Name > runs[j].Name
	})
	return runs, nil
}

// Unlisted names, cleaned for a terminal (termtext.Clean), the run
// directories under runsDir that listings leave out because their names
// hold control characters: a terminal would act on them, and a run
// directory's path is printed in many places. Renaming one lists it again.
func Unlisted(runsDir string) []string {
	entries, _ := os.ReadDir(runsDir)
	var out []string
	for _, e := range entries {
		if e.IsDir() && termtext.HasControl(e.Name()) && IsRunDir(filepath.Join(runsDir, e.Name())) {
			out = append(out, termtext.Clean(e.Name()))
		}
	}
	return out
}

func startedOf(dir, name string) time.Time {
	t := startedFromName(name)
	if t.IsZero() {
		if st, err := os.Stat(dir); err == nil {
			t = st.ModTime()
		}
	}
	return t
}

// IsRunDir reports whether dir holds a run: a config.toml or a
// metrics.jsonl.
func IsRunDir(dir string) bool {
	for _, f := range []string{ConfigFile, MetricsFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// ReadRunInfo summarises one run directory. metrics.jsonl is scanned for
// the few fields a summary needs rather than decoded record by record (a
// long run holds tens of thousands of records).
func ReadRunInfo(dir string) RunInfo {
	r := RunInfo{Dir: dir, Name: filepath.Base(dir), Best: Float(math.NaN()), Last: Float(math.NaN())}
	r.Started = startedOf(dir, r.Name)
	r.Name = termtext.Clean(r.Name)
	var errs []error
	cfg, parsed, err := readConfig(dir)
	if err != nil {
		errs = append(errs, err)
	}
	if parsed { // else cfg holds only the defaults: better no env than a wrong one
		r.EnvID, r.Agent, r.TotalSteps = termtext.Clean(cfg.Env.ID), termtext.Clean(cfg.Agent.Name), cfg.PPO.TotalTimesteps
		if cfg.LM() { // a language-model run's steps are its iterations
			r.TotalSteps = int64(cfg.Trainer.TotalTrainingSteps)
		}
	}
	s, err := summarizeMetrics(filepath.Join(dir, MetricsFile))
	if err != nil {
		errs = append(errs, err)
	}
	r.Iters, r.Steps, r.Best, r.Last, r.WallS = s.iters, s.steps, s.best, s.last, s.wall
	edits, err := ReadEdits(dir)
	if err != nil {
		errs = append(errs, err)
	}
	r.Edits = len(edits)
	r.Meta, err = ReadMeta(dir)
	if err != nil {
		errs = append(errs, err)
	}
	r.Err = termtext.Error(errors.Join(errs...))
	return r
}

// metricsSummary is what a listing needs of metrics.jsonl.
type metricsSummary struct {
	iters      int
	steps      int64
	best, last Float
	wall       float64
}

// summarizeMetrics reads path as ReadMetrics does (a missing file is
// empty, an unfinished last line is skipped, lines that are not records
// are skipped and counted in a *BadRecordsError) but takes only step,
// time_s and ep_return_mean from each record: straight from the bytes the
// trainer writes, decoding a record as JSON only when it is written some
// other way. The file is streamed, never held whole.
func summarizeMetrics(path string) (metricsSummary, error) {
	s := metricsSummary{best: Float(math.NaN()), last: Float(math.NaN())}
	err := scanRecords(path, MaxMetricsFile, "metrics file", s.add)
	return s, err
}

// add takes one record into the summary.
func (s *metricsSummary) add(line []byte) error {
	line = bytes.TrimSpace(line)
	step, t, ret, ok := scanRecord(line)
	if !ok {
		var m struct {
			Step         int64 `json:"step"`
			TimeS        Float `json:"time_s"`
			EpReturnMean Float `json:"ep_return_mean"`
		}
		m.TimeS, m.EpReturnMean = Float(math.NaN()), Float(math.NaN())
		if err := json.Unmarshal(line, &m); err != nil {
			return err
		}
		step, t, ret = m.Step, float64(m.TimeS), float64(m.EpReturnMean)
	}
	s.iters++
	s.steps = max(s.steps, step)
	if !math.IsNaN(t) {
		s.wall = t
	}
	if math.IsNaN(ret) {
		return nil
	}
	s.last = Float(ret)
	if math.IsNaN(float64(s.best)) || ret > float64(s.best) {
		s.best = Float(ret)
	}
	return nil
}

// scanRecord reads step, time_s and ep_return_mean out of one record as
// json.Marshal writes it (no spaces); ok is false for anything else.
func scanRecord(line []byte) (step int64, t, ret float64, ok bool) {
	if len(line) < 2 || line[0] != '{' || line[len(line)-1] != '}' {
		return 0, 0, 0, false
	}
	field := func(key string) ([]byte, bool) {
		i := bytes.Index(line, []byte(key))
		if i < 0 {
			return nil, false
		}
		v := line[i+len(key):]
		end := bytes.IndexAny(v, ",}")
		if end <= 0 {
			return nil, false
		}
		return v[:end], true
	}
	num := func(key string) (float64, bool) {
		v, ok := field(key)
		if !ok {
			return 0, false
		}
		if string(v) == "null" {
			return math.NaN(), true
		}
		f, err := strconv.ParseFloat(string(v), 64)
		return f, err == nil
	}
	v, ok := field(`"step":`)
	if !ok {
		return 0, 0, 0, false
	}
	step, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, 0, 0, false
	}
	if t, ok = num(`"time_s":`); !ok {
		return 0, 0, 0, false
	}
	if ret, ok = num(`"ep_return_mean":`); !ok {
		return 0, 0, 0, false
	}
	return step, t, ret, true
}

// startedFromName reads the <YYYYMMDD-HHMMSS> prefix of a run directory's
// name (local time, as the trainer writes it); zero if there is none.
func startedFromName(name string) time.Time {
	const layout = "20060102-150405"
	if len(name) < len(layout) {
		return time.Time{}
	}
	t, err := time.ParseInLocation(layout, name[:len(layout)], time.Local)
	if err != nil {
		return time.Time{}
	}
	return t
}

// ReadConfig reads a run's config.toml over the defaults. Keys the schema no
// longer knows are reported in the error, and the rest are still applied.
func ReadConfig(dir string) (config.Config, error) {
	c, _, err := readConfig(dir)
	return c, err
}

// readConfig is ReadConfig that also says whether the file could be read
// as TOML at all: when it could not, c holds only the defaults, which say
// nothing about the run.
func readConfig(dir string) (c config.Config, parsed bool, err error) {
	c = config.Default()
	path := filepath.Join(dir, ConfigFile)
	data, err := inputfile.Read(path, maxRunConfig, "config file")
	if err != nil {
		return c, false, termtext.Error(&config.Error{Source: path, Msg: fmt.Sprintf("cannot read config file: %v", unwrapPath(err))})
	}
	err = c.LoadTOML(string(data), path)
	if err != nil {
		var m map[string]any
		parsed = toml.Unmarshal(data, &m) == nil
	}
	return c, err == nil || parsed, termtext.Error(err)
}

// unwrapPath drops the path from an *fs.PathError (the message names the
// file already).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ReadMetrics reads a run's metrics.jsonl. A missing file holds no
// records; an unfinished last line (a writer that crashed, or one still
// writing) is skipped; lines that are not records are skipped too, and
// counted in a *BadRecordsError that comes with the other records
// (IsPartial).
func ReadMetrics(dir string) ([]Metrics, error) {
	return readJSONL[Metrics](filepath.Join(dir, MetricsFile), MaxMetricsFile, "metrics file")
}

// ReadEdits reads a run's edits.jsonl, with the same tolerance as
// ReadMetrics; the edits' text is cleaned for a terminal.
func ReadEdits(dir string) ([]Edit, error) {
	edits, err := readJSONL[Edit](filepath.Join(dir, EditsFile), MaxEditsFile, "edits file")
	for i := range edits {
		e := &edits[i]
		e.Key, e.Value, e.Old = termtext.Clean(e.Key), termtext.Clean(e.Value), termtext.Clean(e.Old)
	}
	return edits, err
}
