package runstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/agenttrainer/agenttrainer/internal/inputfile"
)

// LockFile, in a run directory, is held (flock) by the one process that
// trains there. The kernel drops the lock when that process dies, however
// it dies, so a lock left by a killed training is never mistaken for a
// live one.
const LockFile = "lock"

// Lock is a held run-directory lock.
type Lock struct{ f *os.File }

// ErrInUse says that another process trains in the run directory.
var ErrInUse = errors.New("run directory in use")

// Acquire takes dir's lock for this process, or says which process holds
// it (an error wrapping ErrInUse).
func Acquire(dir string) (*Lock, error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return lock(dir, f)
}

func lock(dir string, f *os.File) (*Lock, error) {
	path := f.Name()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, inUse(dir)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	// The holder's PID, for the message another process shows.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Release gives the lock up; a nil Lock holds nothing.
func (l *Lock) Release() {
	if l == nil {
		return
	}
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}

// CheckFree returns an error wrapping ErrInUse when a live process holds
// dir's lock. It writes nothing (a directory without a lock file is free).
// A lock that cannot be looked at is not taken for free: the error says
// why.
func CheckFree(dir string) error {
	// O_NONBLOCK: a pipe put where the lock file belongs must not hang
	// the probe (a regular file ignores the flag).
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot tell whether a training holds %s: %w", dir, err)
	}
	defer f.Close() // closing the only descriptor drops the probe's lock
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case errors.Is(err, syscall.EWOULDBLOCK):
		return inUse(dir)
	case err != nil:
		return fmt.Errorf("cannot tell whether a training holds %s: locking %s: %w", dir, LockFile, err)
	}
	return nil
}

func inUse(dir string) error {
	holder := "another process"
	if b, err := inputfile.Read(filepath.Join(dir, LockFile), maxPointerFile, "lock file"); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			holder = fmt.Sprintf("process %d", pid)
		}
	}
	return fmt.Errorf("%w: %s is training in %s; stop it first (or watch it with `agenttrainer attach %s`)", ErrInUse, holder, dir, dir)
}
