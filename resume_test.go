package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func metricsWithoutTiming(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("corrupt metrics line %q: %v", sc.Text(), err)
		}
		delete(m, "time_s")
		delete(m, "sps")
		delete(m, "rollout_s")
		delete(m, "update_s")
		b, _ := json.Marshal(m)
		out = append(out, string(b))
	}
	return out
}

// checkSafetensors parses a checkpoint's header and byte ranges on its own
// (independently of the trainer's reader): the ranges must tile the data
// exactly and fit the shapes.
func checkSafetensors(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 8 {
		t.Fatalf("%s: %d bytes", path, len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if 8+n > uint64(len(b)) {
		t.Fatalf("%s: header length %d beyond the file", path, n)
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &header); err != nil {
		t.Fatalf("%s: header: %v", path, err)
	}
	var total uint64
	for name, raw := range header {
		if name == "__metadata__" {
			continue
		}
		var e struct {
			Dtype   string    `json:"dtype"`
			Shape   []uint64  `json:"shape"`
			Offsets [2]uint64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatalf("%s: %s: %v", path, name, err)
		}
		size := uint64(4)
		for _, d := range e.Shape {
			size *= d
		}
		if e.Dtype != "F32" || e.Offsets[1]-e.Offsets[0] != size || e.Offsets[1] > uint64(len(b))-8-n {
			t.Fatalf("%s: %s: dtype %s shape %v offsets %v", path, name, e.Dtype, e.Shape, e.Offsets)
		}
		total += size
	}
	if total != uint64(len(b))-8-n {
		t.Fatalf("%s: tensors cover %d of %d data bytes", path, total, uint64(len(b))-8-n)
	}
}

func TestKillAndResumeMatchesUninterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs several training processes")
	}
	args := []string{"ppo.total_timesteps=122880", "trainer.seed=5", "trainer.save_freq=3", "trainer.keep_checkpoints=2", "trainer.device=cpu"}
	ref := filepath.Join(t.TempDir(), "ref")
	if code, _, stderr := runCLI(append([]string{"train", "--quiet", "--run-dir", ref}, args...)...); code != 0 {
		t.Fatalf("uninterrupted run: exit %d: %s", code, stderr)
	}
	dir := filepath.Join(t.TempDir(), "killed")
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	kills := 0
	for attempt := 0; attempt < 20; attempt++ {
		cmdArgs := []string{"train", "--quiet", "--resume", dir}
		if attempt == 0 {
			cmdArgs = append([]string{"train", "--quiet", "--run-dir", dir}, args...)
		}
		cmd := exec.Command(os.Args[0], cmdArgs...)
		cmd.Env = append(os.Environ(), "AGENTTRAINER_RUN_MAIN=1")
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		if kills < 4 {
			// Wait for a checkpoint to exist, then kill at a random moment.
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if _, err := os.Stat(filepath.Join(dir, "checkpoints", "latest")); err == nil {
					break
				}
			}
			select {
			case err := <-exited: // finished before the kill: fine if it succeeded
				if err != nil {
					t.Fatalf("resume failed: %v\n%s", err, out.String())
				}
				attempt = 1 << 30
				continue
			case <-time.After(time.Duration(r.IntN(300)) * time.Millisecond):
			}
			cmd.Process.Kill()
			<-exited
			kills++
			entries, _ := os.ReadDir(filepath.Join(dir, "checkpoints"))
			for _, e := range entries {
				// A kill between creating and renaming a temporary file
				// leaves it behind; the next resume sweeps it away.
				if strings.HasSuffix(e.Name(), ".safetensors") {
					checkSafetensors(t, filepath.Join(dir, "checkpoints", e.Name()))
				} else if e.Name() != "latest" && !strings.HasPrefix(e.Name(), ".") {
					t.Errorf("unexpected file after SIGKILL: %s", e.Name())
				}
			}
			continue
		}
		if err := <-exited; err != nil {
			t.Fatalf("final resume failed: %v\n%s", err, out.String())
		}
		break
	}
	for _, d := range []string{dir, filepath.Join(dir, "checkpoints")} {
		if stale, _ := filepath.Glob(filepath.Join(d, ".*.tmp*")); len(stale) > 0 {
			t.Errorf("temporary files left after the final resume: %v", stale)
		}
	}
	if kills < 2 {
		t.Fatalf("only %d kills landed; the run is too short for this test", kills)
	}
	want, got := metricsWithoutTiming(t, ref), metricsWithoutTiming(t, dir)
	if len(got) != len(want) {
		t.Fatalf("after %d kills: %d records, uninterrupted run has %d", kills, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("after %d kills, record %d differs:\n got %s\nwant %s", kills, i, got[i], want[i])
		}
	}
	t.Logf("%d SIGKILLs, %d identical records", kills, len(got))
}
