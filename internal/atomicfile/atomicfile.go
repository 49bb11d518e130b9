// Package atomicfile writes files so that a crash or a kill leaves either
// the old file or the new one, never a torn mix: every file the program
// writes whole (configs, checkpoints, pointers, task files) goes through it.
package atomicfile

import (
	"bufio"
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
// Write returns. perm applies to a file Write creates.
func Write(path string, data []byte, perm os.FileMode) error {
	return WriteFrom(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFrom is Write for content produced by fill, which writes it to w
// (buffered): a file too large to hold in memory twice, such as a model's
// weights, streams into the temporary file. When fill fails, nothing
// replaces path and its error is returned.
func WriteFrom(path string, perm os.FileMode, fill func(w io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), tempPrefix+filepath.Base(path)+tempInfix+"*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err := fill(bw); err != nil {
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
