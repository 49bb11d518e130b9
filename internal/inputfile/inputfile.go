// Package inputfile is the one reader of files that a user names or that
// anyone with write access to a run directory could have replaced (config
// files, task datasets, checkpoints, meta.json, metrics.jsonl, control.json,
// sweep files, authorized_keys): regular files only, up to a stated size,
// records up to a stated length, so that a FIFO cannot hang the program,
// /dev/zero or a huge file cannot exhaust its memory, and a directory in a
// file's place is named as such.
package inputfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Kind names what a file mode is, for messages: "a directory", "a named
// pipe", "a device", "a socket", "a symbolic link", or "not a regular
// file".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file"
}

// NotRegularError is a file that is there but is not a regular file.
type NotRegularError struct {
	Path, What string
	Mode       fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s; a %s must be a regular file", e.Path, Kind(e.Mode), e.What)
}

// TooBigError is a file or a record over its bound.
type TooBigError struct {
	Path, What string
	Size       int64 // the file's size, or -1 when it grew while it was read
	Limit      int64
}

func (e *TooBigError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("%s grew past the %d bytes a %s may have while it was read", e.Path, e.Limit, e.What)
	}
	return fmt.Sprintf("%s is %d bytes, more than the %d a %s may have", e.Path, e.Size, e.Limit, e.What)
}

// Open opens the regular file at path for reading. It looks before it
// opens (opening a device may do something) and opens without blocking
// (opening a named pipe waits for a writer), then checks what it opened: a
// file swapped for something else in between is refused too. what names
// the kind of file in messages ("config file").
func Open(path, what string) (*os.File, fs.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, &NotRegularError{Path: path, What: what, Mode: st.Mode()}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{Path: path, What: what, Mode: st.Mode()}
	}
	return f, st, nil
}

// Read returns the content of the regular file at path, refusing one that
// is larger than limit bytes.
func Read(path string, limit int64, what string) ([]byte, error) {
	data, _, err := ReadInfo(path, limit, what)
	return data, err
}

// ReadInfo is Read that also returns what the opened file is (its mode,
// for a permission check).
func ReadInfo(path string, limit int64, what string) ([]byte, fs.FileInfo, error) {
	f, st, err := Open(path, what)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if st.Size() > limit {
		return nil, st, &TooBigError{Path: path, What: what, Size: st.Size(), Limit: limit}
	}
	// The file may grow while it is read: read one byte past the limit to
	// notice.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, st, err
	}
	if int64(len(data)) > limit {
		return nil, st, &TooBigError{Path: path, What: what, Size: -1, Limit: limit}
	}
	return data, st, nil
}

// ReadOptional is Read where a missing file is empty (nil, nil).
func ReadOptional(path string, limit int64, what string) ([]byte, error) {
	data, err := Read(path, limit, what)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// LineTooLongError is a line of a line-oriented file longer than its bound.
type LineTooLongError struct {
	Path  string
	Line  int
	Limit int
}

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("%s:%d: a line longer than %d bytes, which no record of this file is", e.Path, e.Line, e.Limit)
}

// Lines calls fn with each line of r (without its newline) and its number
// from 1. complete is false for a last line without a newline (a writer
// that has not finished it, or one that crashed). A line longer than
// maxLine bytes is a *LineTooLongError; fn's error ends the scan and is
// returned. path names the file in errors. The lines share one buffer.
func Lines(r io.Reader, path string, maxLine int, fn func(n int, line []byte, complete bool) error) error {
	return LinesSkippingLong(r, path, maxLine, fn, func(n int) error {
		return &LineTooLongError{Path: path, Line: n, Limit: maxLine}
	})
}

// LinesSkippingLong is Lines that hands the number of a line longer than
// maxLine to long and, when long returns nil, reads past that line (in
// bounded memory) and goes on with the next.
func LinesSkippingLong(r io.Reader, path string, maxLine int, fn func(n int, line []byte, complete bool) error, long func(n int) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var gathered []byte // a line longer than the reader's buffer
	for n := 1; ; n++ {
		chunk, err := br.ReadSlice('\n')
		line := chunk
		tooLong := false
		if errors.Is(err, bufio.ErrBufferFull) {
			gathered = append(gathered[:0], chunk...)
			for errors.Is(err, bufio.ErrBufferFull) {
				chunk, err = br.ReadSlice('\n')
				if !tooLong {
					gathered = append(gathered, chunk...)
				}
				if len(gathered) > maxLine+1 {
					tooLong, gathered = true, gathered[:0]
				}
			}
			line = gathered
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		complete := bytes.HasSuffix(chunk, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\n'})
		if tooLong || len(line) > maxLine {
			if lerr := long(n); lerr != nil {
				return lerr
			}
			if err != nil { // io.EOF
				return nil
			}
			continue
		}
		if len(line) > 0 || complete {
			if ferr := fn(n, line, complete); ferr != nil {
				return ferr
			}
		}
		if err != nil { // io.EOF
			return nil
		}
	}
}
