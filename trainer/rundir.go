package trainer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// Files of a run directory.
const (
	ConfigFile     = "config.toml"
	MetricsFile    = "metrics.jsonl"
	EditsFile      = "edits.jsonl"
	CheckpointsDir = "checkpoints"
	LatestFile     = "latest" // inside CheckpointsDir: the name of the newest good checkpoint
)

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// CreateRunDir makes a fresh run directory for cfg under trainer.runs_dir,
// named as Run would name it, for callers that must know it before the run
// starts (a detached training's parent, say). Pass it as Options.RunDir.
func CreateRunDir(cfg config.Config, now time.Time) (string, error) {
	return createRunDir("", cfg.Trainer.RunsDir, newRunDirName(now, cfg.Env.ID, cfg.Agent.Name, cfg.Trainer.Name))
}

// newRunDirName is runs/<YYYYMMDD-HHMMSS>-<env>-<agent>[-<name>].
func newRunDirName(now time.Time, env, agent, name string) string {
	s := now.Format("20060102-150405") + "-" + unsafeChars.ReplaceAllString(env, "_") + "-" + unsafeChars.ReplaceAllString(agent, "_")
	if name != "" {
		s += "-" + name
	}
	return s
}

// createRunDir makes the run directory: exactly dir when given (which must
// not already hold a run), else a fresh directory under runsDir.
func createRunDir(dir, runsDir, base string) (string, error) {
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, MetricsFile)); err == nil {
			return "", fmt.Errorf("%s already holds a run (it has %s); choose another directory", dir, MetricsFile)
		}
		if err := os.MkdirAll(filepath.Join(dir, CheckpointsDir), 0o755); err != nil {
			return "", err
		}
		return dir, nil
	}
	if err := os.MkdirAll(runsDir, 0o755); err != nil {
		return "", err
	}
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s.%d", base, i) // two runs started in the same second
		}
		path := filepath.Join(runsDir, name)
		err := os.Mkdir(path, 0o755)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		return path, os.Mkdir(filepath.Join(path, CheckpointsDir), 0o755)
	}
}

// writeFileAtomic writes data to a temporary file beside path, syncs it and
// renames it into place, so a crash leaves either the old file or the new.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil { // make the rename durable
		d.Sync()
		d.Close()
	}
	return nil
}

// removeStaleTemps deletes the temporary files writeFileAtomic leaves when
// the process dies between creating and renaming one.
func removeStaleTemps(dir string) {
	matches, _ := filepath.Glob(filepath.Join(dir, ".*.tmp*"))
	for _, m := range matches {
		os.Remove(m)
	}
}

// jsonlWriter appends one JSON object per line, each with a single write so
// a crash never leaves half a record behind a complete one.
type jsonlWriter struct{ f *os.File }

func openJSONL(path string) (*jsonlWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &jsonlWriter{f: f}, nil
}

func (w *jsonlWriter) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.f.Write(append(b, '\n'))
	return err
}

func (w *jsonlWriter) sync() error { return w.f.Sync() }

func (w *jsonlWriter) close() error {
	if w == nil {
		return nil
	}
	return w.f.Close()
}

// checkpointStep reads N from a checkpoint file name step-N.safetensors.
func checkpointStep(name string) (int64, bool) {
	s, ok := strings.CutPrefix(name, "step-")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, ".safetensors")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// pruneCheckpoints deletes all but the keep newest checkpoints (keep 0
// keeps everything). Called after the newest was written and pointed to.
func pruneCheckpoints(dir string, keep int) {
	if keep <= 0 {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var steps []int64
	for _, e := range entries {
		if n, ok := checkpointStep(e.Name()); ok {
			steps = append(steps, n)
		}
	}
	slices.Sort(steps)
	for _, n := range steps[:max(0, len(steps)-keep)] {
		os.Remove(filepath.Join(dir, fmt.Sprintf("step-%d.safetensors", n)))
	}
}
