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
	"time"

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
	TotalSteps int64 // ppo.total_timesteps the run was configured for
	Iters      int   // metrics records written
	Steps      int64 // environment steps reached
	Best       Float // best ep_return_mean (NaN before any episode finished)
	Last       Float // the last ep_return_mean
	Edits      int   // live edits applied
	Err        error // what could not be read; the rest of the fields are still filled where possible
}

// ListRuns returns the runs under runsDir, newest first. A missing runsDir
// holds no runs. Directories that hold neither config.toml nor metrics.jsonl
// are not runs and are skipped.
func ListRuns(runsDir string) ([]RunInfo, error) { return List(runsDir, nil) }

// List is ListRuns for a caller that keeps summaries from an earlier
// listing: cached, when not nil, is asked for each run directory first and
// may return its summary (ok) instead of having it read again.
func List(runsDir string, cached func(dir string) (info RunInfo, ok bool)) ([]RunInfo, error) {
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
		if !IsRunDir(dir) {
			continue
		}
		if cached != nil {
			if r, ok := cached(dir); ok {
				runs = append(runs, r)
				continue
			}
		}
		runs = append(runs, ReadRunInfo(dir))
	}
	sort.SliceStable(runs, func(i, j int) bool {
		if !runs[i].Started.Equal(runs[j].Started) {
			return runs[i].Started.After(runs[j].Started)
		}
		return runs[i].Name > runs[j].Name
	})
	return runs, nil
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

// ReadRunInfo summarises one run directory.
func ReadRunInfo(dir string) RunInfo {
	r := RunInfo{Dir: dir, Name: filepath.Base(dir), Best: Float(math.NaN()), Last: Float(math.NaN())}
	r.Started = startedFromName(r.Name)
	if r.Started.IsZero() {
		if st, err := os.Stat(dir); err == nil {
			r.Started = st.ModTime()
		}
	}
	var errs []error
	cfg, err := ReadConfig(dir)
	if err != nil {
		errs = append(errs, err)
	}
	r.EnvID, r.Agent, r.TotalSteps = cfg.Env.ID, cfg.Agent.Name, cfg.PPO.TotalTimesteps
	ms, err := ReadMetrics(dir)
	if err != nil {
		errs = append(errs, err)
	}
	r.Iters = len(ms)
	for _, m := range ms {
		r.Steps = max(r.Steps, m.Step)
		v := float64(m.EpReturnMean)
		if math.IsNaN(v) {
			continue
		}
		r.Last = m.EpReturnMean
		if math.IsNaN(float64(r.Best)) || v > float64(r.Best) {
			r.Best = m.EpReturnMean
		}
	}
	edits, err := ReadEdits(dir)
	if err != nil {
		errs = append(errs, err)
	}
	r.Edits = len(edits)
	r.Err = errors.Join(errs...)
	return r
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
	c := config.Default()
	return c, c.LoadFile(filepath.Join(dir, ConfigFile))
}

// ReadMetrics reads a run's metrics.jsonl. A missing file holds no records;
// an unfinished last line (a writer that crashed, or one still writing) is
// skipped.
func ReadMetrics(dir string) ([]Metrics, error) {
	return readJSONL[Metrics](filepath.Join(dir, MetricsFile))
}

// ReadEdits reads a run's edits.jsonl, with the same tolerance as
// ReadMetrics.
func ReadEdits(dir string) ([]Edit, error) {
	return readJSONL[Edit](filepath.Join(dir, EditsFile))
}

func readJSONL[T any](path string) ([]T, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []T
	for n := 1; len(data) > 0; n++ {
		line, rest, complete := bytes.Cut(data, []byte{'\n'})
		data = rest
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			if !complete { // the writer has not finished this line
				break
			}
			return out, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, v)
	}
	return out, nil
}
