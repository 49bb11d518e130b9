// Package runstore is the run directory: its layout and names, the files a
// training writes there (config, metrics and edits as JSON lines,
// safetensors checkpoints, TensorBoard events) and the readers that list and
// load runs back. The trainer writes through it; the terminal app, the
// command line and tooling read through it.
package runstore

import (
	"bytes"
	"cmp"
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

	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
	"github.com/agenttrainer/agenttrainer/internal/inputfile"
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

// Create makes the run directory for cfg: exactly dir when given (which must
// not already hold a run), else a fresh directory under trainer.runs_dir
// named <YYYYMMDD-HHMMSS>-<env>-<agent>[-<name>] from now.
func Create(cfg config.Config, dir string, now time.Time) (string, error) {
	return create(dir, cfg.Trainer.RunsDir, newName(now, cfg.Env.ID, cfg.Agent.Name, cfg.Trainer.Name))
}

// newName is <YYYYMMDD-HHMMSS>-<env>-<agent>[-<name>].
func newName(now time.Time, env, agent, name string) string {
	s := now.Format("20060102-150405") + "-" + unsafeChars.ReplaceAllString(env, "_") + "-" + unsafeChars.ReplaceAllString(agent, "_")
	if name != "" {
		s += "-" + name
	}
	return s
}

func create(dir, runsDir, base string) (string, error) {
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

// JSONL appends one JSON object per line, each with a single write so a
// crash never leaves half a record behind a complete one.
type JSONL struct {
	f    appendFile
	size int64 // the bytes of whole records: where the next one begins
}

// appendFile is what JSONL needs of its file (*os.File; tests fake a full
// disk).
type appendFile interface {
	Write([]byte) (int, error)
	Truncate(int64) error
	Sync() error
	Close() error
}

// OpenJSONL opens path for appending, creating it if need be.
func OpenJSONL(path string) (*JSONL, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &JSONL{f: f, size: st.Size()}, nil
}

// Write appends v as one line. A write that fails part way (a full disk)
// is cut off again, so the file keeps whole records only.
func (w *JSONL) Write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	n, err := w.f.Write(append(b, '\n'))
	if err != nil {
		if n > 0 {
			w.f.Truncate(w.size) // shrinking needs no space
		}
		return err
	}
	w.size += int64(n)
	return nil
}

// Sync flushes the records written so far to the disk.
func (w *JSONL) Sync() error { return w.f.Sync() }

// Close closes the file; a nil JSONL is closed already.
func (w *JSONL) Close() error {
	if w == nil {
		return nil
	}
	return w.f.Close()
}

// CheckpointName is the file name of the checkpoint at env step.
func CheckpointName(step int64) string { return fmt.Sprintf("step-%d.safetensors", step) }

// CheckpointStep reads N from a checkpoint file name step-N.safetensors.
func CheckpointStep(name string) (int64, bool) {
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

// pinSuffix marks a checkpoint asked for by hand: step-N.safetensors.pinned
// beside it keeps it through the rotation.
const pinSuffix = ".pinned"

// Pin keeps the checkpoint at step through every rotation.
func Pin(dir string, step int64) error {
	return atomicfile.Write(filepath.Join(dir, CheckpointName(step)+pinSuffix), nil, 0o644)
}

// Pinned reports whether the checkpoint file name is pinned in dir.
func Pinned(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name+pinSuffix))
	return err == nil
}

// CountPinned counts the pinned checkpoints in dir.
func CountPinned(dir string) int {
	entries, _ := os.ReadDir(dir)
	n := 0
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), pinSuffix); ok {
			if _, ok := CheckpointStep(name); ok {
				n++
			}
		}
	}
	return n
}

// PruneCheckpoints deletes all but the keep newest unpinned checkpoint files in
// dir (keep 0 keeps everything); pinned ones stay. Called after the newest
// was written and pointed to.
func PruneCheckpoints(dir string, keep int) {
	if keep <= 0 {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var steps []int64
	for _, e := range entries {
		// Only files: a directory or a link under a checkpoint's name is
		// not the trainer's to remove.
		if n, ok := CheckpointStep(e.Name()); ok && e.Type().IsRegular() && !Pinned(dir, e.Name()) {
			steps = append(steps, n)
		}
	}
	slices.Sort(steps)
	for _, n := range steps[:max(0, len(steps)-keep)] {
		os.Remove(filepath.Join(dir, CheckpointName(n)))
	}
}

// Checkpoints lists the checkpoint files of a run's checkpoints directory,
// the one `latest` names first, then the others newest first.
func Checkpoints(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if _, ok := CheckpointStep(e.Name()); ok {
			names = append(names, e.Name())
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		sa, _ := CheckpointStep(a)
		sb, _ := CheckpointStep(b)
		return cmp.Compare(sb, sa)
	})
	if latest, err := inputfile.Read(filepath.Join(dir, LatestFile), maxPointerFile, "checkpoint pointer"); err == nil {
		name := strings.TrimSpace(string(latest))
		if i := slices.Index(names, name); i > 0 {
			names = append([]string{name}, slices.Delete(names, i, i+1)...)
		}
	}
	return names, nil
}

// OccupiedError is a checkpoint that was not written because its name is
// taken by something that is not a file (a directory, a socket): the
// program did not make it and leaves it alone. Nothing else is wrong, so a
// training may go on and write its next checkpoint.
type OccupiedError struct {
	Path string // the checkpoint's path
	What string // what is there instead, e.g. "a directory"
}

func (e *OccupiedError) Error() string {
	return fmt.Sprintf("checkpoint %s not written: %s is %s, not a checkpoint file, and is left as it is", filepath.Base(e.Path), e.Path, e.What)
}

// occupied says what, other than a file or a symbolic link (a rename
// replaces either), holds path; "" when nothing does.
func occupied(path string) string {
	st, err := os.Lstat(path)
	if err != nil {
		return ""
	}
	if m := st.Mode(); m.IsRegular() || m&os.ModeSymlink != 0 {
		return ""
	}
	return inputfile.Kind(st.Mode())
}

// WriteCheckpoint writes a checkpoint's bytes as dir/step-<step>.safetensors
// and then points dir/latest at it, each atomically, and returns its path.
// A name taken by a directory or another non-file is an *OccupiedError.
func WriteCheckpoint(dir string, step int64, data []byte) (string, error) {
	name := CheckpointName(step)
	path := filepath.Join(dir, name)
	if what := occupied(path); what != "" {
		return "", &OccupiedError{Path: path, What: what}
	}
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		if what := occupied(path); what != "" { // made while this one was written
			return "", &OccupiedError{Path: path, What: what}
		}
		return "", fmt.Errorf("writing checkpoint: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, LatestFile), []byte(name+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("writing checkpoint pointer: %w", err)
	}
	return path, nil
}

// WriteConfig writes the resolved config as the run's config.toml.
func WriteConfig(dir string, cfg config.Config) error {
	return atomicfile.Write(filepath.Join(dir, ConfigFile), []byte(cfg.TOML()), 0o644)
}

// Reopen prepares a run directory for a resumed training that continues
// from the checkpoint of iteration iter: the temporary files of writes a
// kill interrupted are swept away, and the metrics, edits and transcripts records
// written after the checkpoint are dropped, since the resumed run redoes
// them.
func Reopen(dir string, iter int) error {
	atomicfile.RemoveStale(dir)
	atomicfile.RemoveStale(filepath.Join(dir, CheckpointsDir))
	for _, f := range []struct {
		name  string
		limit int64
	}{{MetricsFile, MaxMetricsFile}, {EditsFile, MaxEditsFile}, {TranscriptsFile, MaxTranscriptsFile}} {
		if err := truncateRecords(filepath.Join(dir, f.name), iter, f.limit); err != nil {
			return fmt.Errorf("repairing %s: %w", f.name, err)
		}
	}
	return nil
}

// truncateRecords keeps the records of a JSON-lines file whose iteration
// is at most iter, dropping later ones and a torn last line, so that a
// resumed run neither repeats nor skips a record.
func truncateRecords(path string, iter int, limit int64) error {
	var kept bytes.Buffer
	changed := false
	err := scanRecords(path, limit, "records file", func(line []byte) error {
		var rec struct {
			Iter *int `json:"iter"`
		}
		if json.Unmarshal(line, &rec) != nil || rec.Iter == nil || *rec.Iter > iter {
			changed = true
			return nil
		}
		kept.Write(line)
		kept.WriteByte('\n')
		return nil
	})
	if err != nil && !IsPartial(err) { // lines that are not records are dropped with the rest
		return err
	}
	st, serr := os.Stat(path)
	if errors.Is(serr, os.ErrNotExist) || (!changed && serr == nil && st.Size() == int64(kept.Len())) {
		return nil
	}
	return atomicfile.Write(path, kept.Bytes(), 0o644)
}
