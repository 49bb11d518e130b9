package control

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// A run directory copied while it trains carries the original's
// control.json: dialling the copy must not reach (and steer) the original.
func TestCopiedRunDirIsNotLive(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	startRun(t, dir)
	cp := filepath.Join(t.TempDir(), "copy")
	os.MkdirAll(cp, 0o755)
	b, err := os.ReadFile(filepath.Join(dir, InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(cp, InfoFile), b, 0o644)
	if _, err := Dial(cp); err == nil || !strings.Contains(err.Error(), "copied") {
		t.Fatalf("dial the copy: %v", err)
	}
	c, err := Dial(dir) // the original still answers
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// A listener that is not a training (it never answers, or answers without
// end) costs a client a bounded wait and bounded memory.
func TestHostileListener(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(net.Conn)
		want   string
	}{
		{"silent", func(c net.Conn) { time.Sleep(20 * time.Second) }, "timeout"},
		{"endless line", func(c net.Conn) {
			buf := make([]byte, 64<<10)
			for i := range buf {
				buf[i] = 'x'
			}
			for {
				if _, err := c.Write(buf); err != nil {
					return
				}
			}
		}, "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sock := filepath.Join(dir, "s.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					go func() { tc.answer(c); c.Close() }()
				}
			}()
			ep, _ := json.Marshal(Endpoint{Version: Version, Socket: sock, PID: os.Getpid()})
			atomicfile.Write(filepath.Join(dir, InfoFile), ep, 0o644)
			t0 := time.Now()
			_, err = Dial(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("dial: %v, want %q", err, tc.want)
			}
			if d := time.Since(t0); d > 15*time.Second {
				t.Fatalf("dial took %v", d)
			}
		})
	}
}

// save pins a checkpoint each time; past MaxPinned the request is refused
// with a message, and the run goes on.
func TestPinsAreBounded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	startRun(t, dir)
	ck := filepath.Join(dir, runstore.CheckpointsDir)
	os.MkdirAll(ck, 0o755)
	for i := 1; i < MaxPinned; i++ {
		os.WriteFile(filepath.Join(ck, runstore.CheckpointName(int64(i))+".pinned"), nil, 0o644)
	}
	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.call(request{Op: "save"})
	if err == nil || !strings.Contains(r.Error, "pinned already") {
		t.Fatalf("save past the bound: %v", err)
	}
	os.Remove(filepath.Join(ck, runstore.CheckpointName(1)+".pinned"))
	if _, err := c.call(request{Op: "save"}); err != nil {
		t.Fatalf("save under the bound: %v", err)
	}
}
