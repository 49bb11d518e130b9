// Package inputfile reads the files a user names (config files, task
// datasets, checkpoints): regular files only, up to a stated size, so that
// a FIFO cannot hang the program and /dev/zero cannot exhaust its memory.
package inputfile

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// Read returns the content of the regular file at path, refusing one that
// is larger than limit bytes; what names the kind of file in messages
// ("config file", "task file").
func Read(path string, limit int64, what string) ([]byte, error) {
	// Look before opening: opening a named pipe blocks until a writer comes.
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		kind := "not a regular file"
		switch {
		case st.IsDir():
			kind = "a directory"
		case st.Mode()&os.ModeNamedPipe != 0:
			kind = "a named pipe"
		case st.Mode()&os.ModeDevice != 0:
			kind = "a device"
		case st.Mode()&os.ModeSocket != 0:
			kind = "a socket"
		}
		return nil, fmt.Errorf("%s is %s; a %s must be a regular file", path, kind, what)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d a %s may have", path, st.Size(), limit, what)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a file swapped for a pipe meanwhile does not block either
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The file may grow while it is read: read one byte past the limit to
	// notice.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s grew past the %d bytes a %s may have while it was read", path, limit, what)
	}
	return data, nil
}
