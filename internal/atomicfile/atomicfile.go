// Package atomicfile writes files so that a crash or a kill leaves either
// the old file or the new one, never a torn mix: every file the program
// writes whole (configs, checkpoints, pointers, task files) goes through it.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// A write's temporary file is named .<target>.tmp<random> beside its target;
// RemoveStale recognises it.
const tempPrefix, tempInfix = ".", ".tmp"

// Write writes data to a temporary file beside path, syncs it, renames it
// into place and syncs the directory, so the new content is durable once
// Write returns. perm applies to a file Write creates. A directory at path
// is an error that says so (a rename cannot replace it).
func Write(path string, data []byte, perm os.FileMode) error {
	return Stream(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Stream is Write for content made as it is written: write gets the
// temporary file (buffered), and its error leaves path as it was.
func Stream(path string, perm os.FileMode, write func(io.Writer) error) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory; name a file to write", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), tempPrefix+filepath.Base(path)+tempInfix+"*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	bw := bufio.NewWriterSize(tmp, 256<<10)
	if err := write(bw); err != nil {
		tmp.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
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

// RemoveStale deletes the temporary files that writes into dir left behind
// when the process died between creating and renaming one.
func RemoveStale(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if name := e.Name(); strings.HasPrefix(name, tempPrefix) && strings.Contains(name, tempInfix) && !e.IsDir() {
			os.Remove(filepath.Join(dir, name))
		}
	}
}

// RemoveStaleOf deletes the temporary files that writes of dir/name left
// behind; unlike RemoveStale it leaves other files' writes alone, so it is
// safe while other files of dir are being written.
func RemoveStaleOf(dir, name string) {
	entries, _ := os.ReadDir(dir)
	prefix := tempPrefix + name + tempInfix
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) && !e.IsDir() {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
