package runstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
	"github.com/agenttrainer/agenttrainer/internal/inputfile"
	"github.com/agenttrainer/agenttrainer/internal/termtext"
)

// MetaFile, in a run directory, holds what people say about the run: a
// display name, tags and a one-line note. The trainer never writes it; the
// terminal app and `agenttrainer runs` do, whole and atomically. A missing
// file is an empty Meta.
//
//	{"name": "wide net", "tags": ["baseline", "lr-sweep"], "note": "diverged after 200k"}
const MetaFile = "meta.json"

// Meta is the contents of meta.json; every field may be left out.
type Meta struct {
	Name string   `json:"name,omitempty"` // display name; the directory keeps its own
	Tags []string `json:"tags,omitempty"` // several, each a word without spaces or commas
	Note string   `json:"note,omitempty"` // one line
}

// ReadMeta reads dir's meta.json (a missing one is empty).
func ReadMeta(dir string) (Meta, error) {
	var m Meta
	b, err := inputfile.Read(filepath.Join(dir, MetaFile), MaxMetaFile, "meta.json")
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, termtext.Error(err)
	}
	return parseMeta(b, filepath.Join(dir, MetaFile))
}

// parseMeta reads meta.json's bytes (path names it in errors), cleaned for
// a terminal.
func parseMeta(b []byte, path string) (Meta, error) {
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return Meta{}, termtext.Error(fmt.Errorf("%s: %w", path, err))
	}
	return m.cleaned(), nil
}

// cleaned is m as it may be shown in a terminal: anyone who can write the
// file could have put control characters in it (termtext.Clean).
func (m Meta) cleaned() Meta {
	m.Name, m.Note = termtext.Clean(m.Name), termtext.Clean(m.Note)
	if len(m.Tags) > 0 {
		tags := make([]string, len(m.Tags))
		for i, t := range m.Tags {
			tags[i] = termtext.Clean(t)
		}
		m.Tags = tags
	}
	return m
}

// WriteMeta writes m as dir's meta.json, cleaned: a one-line name and note,
// tags trimmed and without duplicates. An empty Meta removes the file.
func WriteMeta(dir string, m Meta) error {
	if !IsRunDir(dir) {
		return fmt.Errorf("%s is not a run directory (no %s or %s)", dir, ConfigFile, MetricsFile)
	}
	m.Name, m.Note = oneLine(m.Name), oneLine(m.Note)
	for _, f := range []struct{ what, v string }{{"name", m.Name}, {"note", m.Note}} {
		if termtext.HasControl(f.v) {
			return fmt.Errorf("the %s %s holds a control character, which a terminal would act on; give plain text", f.what, strconv.Quote(f.v))
		}
	}
	var tags []string
	for _, t := range m.Tags {
		t, err := CleanTag(t)
		if err != nil {
			return err
		}
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	m.Tags = tags
	path := filepath.Join(dir, MetaFile)
	if m.Name == "" && m.Note == "" && len(m.Tags) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o644)
}

// UpdateMeta reads dir's meta.json, lets change edit it, and writes it
// back, holding dir's meta lock throughout: two processes tagging the same
// run at once both keep their tags. A write a kill interrupted before
// leaves its temporary file, which goes here.
func UpdateMeta(dir string, change func(*Meta)) (Meta, error) {
	unlock, err := lockMeta(dir)
	if err != nil {
		return Meta{}, err
	}
	defer unlock()
	atomicfile.RemoveStaleOf(dir, MetaFile)
	m, err := ReadMeta(dir)
	if err != nil {
		return m, err
	}
	change(&m)
	if err := WriteMeta(dir, m); err != nil {
		return m, err
	}
	return ReadMeta(dir)
}

// metaLockWait bounds how long UpdateMeta waits for another process that
// changes the same meta.json.
const metaLockWait = 10 * time.Second

// lockMeta takes an exclusive lock (flock) on the run directory itself,
// which the one-trainer lock (a file inside it) does not touch, so a live
// training never holds a change of its meta.json up.
func lockMeta(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(metaLockWait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("locking %s to change its %s: %w", dir, MetaFile, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another process has been changing %s for %s; try again", filepath.Join(dir, MetaFile), metaLockWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// CleanTag trims a tag and checks it is one word: no spaces or commas.
func CleanTag(t string) (string, error) {
	t = strings.TrimSpace(t)
	if t == "" {
		return "", errors.New("empty tag")
	}
	if strings.ContainsAny(t, " \t\n,") {
		return "", fmt.Errorf("tag %q: a tag is one word, without spaces or commas", t)
	}
	if termtext.HasControl(t) {
		return "", fmt.Errorf("tag %q holds a control character, which a terminal would act on; give plain text", t)
	}
	return t, nil
}

// HasTag reports whether the run carries tag.
func (m Meta) HasTag(tag string) bool { return slices.Contains(m.Tags, tag) }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Delete removes the run directory dir with everything in it. It refuses a
// directory that holds no run, and one whose training is live (its lock is
// held: an error wrapping ErrInUse). A caller that can also reach the run's
// control socket should ask there first.
func Delete(dir string) error {
	if !IsRunDir(dir) {
		return fmt.Errorf("%s is not a run directory (no %s or %s); not deleting it", dir, ConfigFile, MetricsFile)
	}
	if err := CheckFree(dir); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}
