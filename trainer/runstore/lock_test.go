package runstore

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestLockIsExclusiveAndReleased(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to open files, so a second open in this process
	// conflicts just as another process would.
	_, err = Acquire(dir)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), fmt.Sprintf("process %d", os.Getpid())) {
		t.Fatalf("second acquire: %v", err)
	}
	if err := CheckFree(dir); !errors.Is(err, ErrInUse) {
		t.Fatalf("CheckFree while held: %v", err)
	}
	l.Release()
	if err := CheckFree(dir); err != nil {
		t.Fatalf("CheckFree after release: %v", err)
	}
	l2, err := Acquire(dir)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	l2.Release()
}

// heldLock is the lock the helper process holds.
var heldLock *Lock

// TestMain lets the test binary serve as the other process that holds a
// run directory's lock.
func TestMain(m *testing.M) {
	if dir := os.Getenv("RUNSTORE_HOLD_LOCK"); dir != "" {
		var err error
		if heldLock, err = Acquire(dir); err != nil { // kept reachable: a collected file closes and unlocks
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("locked")
		// Until killed, or until the test's end of the pipe closes. Not
		// `select {}`: with every goroutine blocked the runtime ends the
		// process ("all goroutines are asleep"), dropping the lock before
		// the test looks at it whenever the machine is busy enough.
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A lock whose holder was killed is free: the kernel dropped it with the
// process, although the file still names it.
func TestLockOfAKilledProcessIsFree(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RUNSTORE_HOLD_LOCK="+dir)
	hold, _ := cmd.StdinPipe() // the holder keeps the lock while this stays open
	defer hold.Close()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "locked\n" {
		cmd.Process.Kill()
		t.Fatalf("holder did not take the lock: %q %v", line, err)
	}
	err = CheckFree(dir)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), fmt.Sprintf("process %d", cmd.Process.Pid)) {
		t.Fatalf("held by process %d: %v", cmd.Process.Pid, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if err := CheckFree(dir); err != nil {
		t.Fatalf("after the holder was killed: %v", err)
	}
}

// A pipe where the lock file belongs does not hang the probe (opening a
// FIFO for reading waits for a writer unless told not to); nobody holds a
// lock on it, so it is free.
func TestCheckFreeDoesNotHangOnAPipe(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, LockFile), 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	if err := CheckFree(dir); err != nil {
		t.Fatalf("CheckFree with a pipe for a lock file: %v", err)
	}
}
