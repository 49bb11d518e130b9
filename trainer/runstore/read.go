package runstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/agenttrainer/agenttrainer/internal/inputfile"
	"github.com/agenttrainer/agenttrainer/internal/termtext"
)

// Bounds on the files of a run directory as they are read back. Anyone who
// can write a run directory can put anything in these files' places (a
// named pipe, /dev/zero, a directory, a terabyte), so every read goes
// through internal/inputfile: regular files only, at most this big, lines
// at most MaxRecordLine.
const (
	MaxMetaFile    = 64 << 10  // meta.json: a name, tags and a one-line note
	MaxMetricsFile = 512 << 20 // metrics.jsonl: about a million iterations
	MaxEditsFile   = 64 << 20  // edits.jsonl
	MaxRecordLine  = 1 << 20   // one JSON record (the trainer's are under 1 KiB)
	maxPointerFile = 4 << 10   // checkpoints/latest, the lock file
	maxRunConfig   = 1 << 20   // config.toml, as config.LoadFile takes it
)

// BadRecordsError says that some complete lines of a JSON-lines file were
// not records; the reader kept the others.
type BadRecordsError struct {
	Path  string
	Count int    // lines that were not records
	Line  int    // the first of them
	Err   string // why that one was not
}

func (e *BadRecordsError) Error() string {
	more := ""
	if e.Count > 1 {
		more = fmt.Sprintf(" (and %d more such lines)", e.Count-1)
	}
	return fmt.Sprintf("%s:%d: not a record: %s%s; the other records were read", e.Path, e.Line, e.Err, more)
}

// IsPartial reports whether err only says that some records of a file
// could not be read (a *BadRecordsError): what was read is still good.
func IsPartial(err error) bool {
	var b *BadRecordsError
	return errors.As(err, &b)
}

// ScanJSONL reads a JSON-lines file that anyone could have edited, as the
// run directory's own are read: see scanRecords. fn gets each line and
// returns an error for one that is not a record.
func ScanJSONL(path string, limit int64, what string, fn func(line []byte) error) error {
	return scanRecords(path, limit, what, fn)
}

// scanRecords reads the JSON lines of path (a missing file holds none)
// through inputfile, calling fn with each complete line and the last one
// when it is complete or parses. Lines that fn refuses are counted into a
// *BadRecordsError after the scan; a file that is not a regular file, is
// over limit, or has a line over MaxRecordLine is an error of its own.
// Errors are cleaned for a terminal.
func scanRecords(path string, limit int64, what string, fn func(line []byte) error) error {
	f, st, err := inputfile.Open(path, what)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return termtext.Error(err)
	}
	defer f.Close()
	if st.Size() > limit {
		return termtext.Error(&inputfile.TooBigError{Path: path, What: what, Size: st.Size(), Limit: limit})
	}
	return scanLines(f, path, fn)
}

// scanLines is scanRecords on a reader.
func scanLines(f io.Reader, path string, fn func(line []byte) error) error {
	var bad *BadRecordsError
	badLine := func(n int, why string) {
		if bad == nil {
			bad = &BadRecordsError{Path: path, Line: n, Err: why}
		}
		bad.Count++
	}
	err := inputfile.LinesSkippingLong(f, path, MaxRecordLine, func(n int, line []byte, complete bool) error {
		if len(bytes.TrimSpace(line)) == 0 {
			return nil
		}
		if ferr := fn(line); ferr != nil && complete {
			badLine(n, ferr.Error())
		} // an unfinished last line that does not parse: the writer is still at it
		return nil
	}, func(n int) error {
		badLine(n, fmt.Sprintf("a line longer than %d bytes, which no record is", MaxRecordLine))
		return nil
	})
	if err != nil {
		return termtext.Error(err)
	}
	if bad != nil {
		return termtext.Error(bad)
	}
	return nil
}

// readJSONL decodes every record of a JSON-lines file; see scanRecords.
func readJSONL[T any](path string, limit int64, what string) ([]T, error) {
	var out []T
	err := scanRecords(path, limit, what, decodeInto(&out))
	return out, err
}

// decodeInto appends each line, decoded, to out.
func decodeInto[T any](out *[]T) func(line []byte) error {
	return func(line []byte) error {
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			return err
		}
		*out = append(*out, v)
		return nil
	}
}
