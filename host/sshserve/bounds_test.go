package sshserve

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestBoundWindow(t *testing.T) {
	for _, c := range []struct{ w, h, ww, wh int }{
		{80, 24, 80, 24},
		{0, 0, 80, 24},
		{0, 50, 80, 24},
		{-1, -1, 80, 24},
		{65535, 65535, MaxWindowWidth, MaxWindowHeight},
		{4294967295, 4294967295, MaxWindowWidth, MaxWindowHeight},
		{1, 65535, 1, MaxWindowHeight},
		{MaxWindowWidth, MaxWindowHeight, MaxWindowWidth, MaxWindowHeight},
	} {
		if w, h := boundWindow(c.w, c.h); w != c.ww || h != c.wh {
			t.Errorf("boundWindow(%d, %d) = %d×%d, want %d×%d", c.w, c.h, w, h, c.ww, c.wh)
		}
	}
}

// An authorized_keys file replaced by a named pipe (even one a writer
// holds open), a device or a directory is refused at once: it is read at
// every login, and a read that waits would hold up every login.
func TestAuthorizedKeysNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	held := make(chan struct{})
	go func() { // a writer that holds the pipe open and writes nothing
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			<-held
			f.Close()
		}
	}()
	defer close(held)
	zero := filepath.Join(dir, "zero")
	os.Symlink("/dev/zero", zero)
	for path, want := range map[string]string{fifo: "named pipe", zero: "device", dir: "directory"} {
		done := make(chan error, 1)
		go func() { _, _, err := ReadAuthorizedKeys(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want %q", path, err, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: ReadAuthorizedKeys blocked", path)
		}
	}
}
