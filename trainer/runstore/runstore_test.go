package runstore

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/trainer/config"
)

func TestCreateNamesAndRefuses(t *testing.T) {
	root := t.TempDir()
	cfg := config.Default()
	cfg.Trainer.RunsDir, cfg.Trainer.Name = root, "wide"
	now := time.Date(2026, 11, 24, 1, 2, 3, 0, time.Local)
	first, err := Create(cfg, "", now)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Create(cfg, "", now) // the same second
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "20261124-010203-CartPole-v1-mlp-wide"); first != want || second != want+".2" {
		t.Fatalf("created %s and %s, want %s and %s.2", first, second, want, want)
	}
	if _, err := os.Stat(filepath.Join(first, CheckpointsDir)); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(first, MetricsFile), "{}\n")
	if _, err := Create(cfg, first, now); err == nil || !strings.Contains(err.Error(), "already holds a run") {
		t.Fatalf("creating over a run: %v", err)
	}
	exact := filepath.Join(root, "exactly", "here")
	if got, err := Create(cfg, exact, now); err != nil || got != exact {
		t.Fatalf("exact dir: %s, %v", got, err)
	}
}

func TestCheckpointsLatestFirstThenNewest(t *testing.T) {
	tests := []struct {
		name   string
		files  []string
		latest string
		want   []string
	}{
		{"newest first", []string{"step-512.safetensors", "step-10240.safetensors", "step-2048.safetensors"}, "",
			[]string{"step-10240.safetensors", "step-2048.safetensors", "step-512.safetensors"}},
		{"latest pointer wins", []string{"step-512.safetensors", "step-1024.safetensors"}, "step-512.safetensors",
			[]string{"step-512.safetensors", "step-1024.safetensors"}},
		{"pointer to a missing file is ignored", []string{"step-512.safetensors"}, "step-9.safetensors",
			[]string{"step-512.safetensors"}},
		{"other files are not checkpoints", []string{"step-x.safetensors", "notes.txt", ".step-5.safetensors.tmp1", "step-5.safetensors"}, "",
			[]string{"step-5.safetensors"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.files {
				writeFile(t, filepath.Join(dir, f), "")
			}
			if tt.latest != "" {
				writeFile(t, filepath.Join(dir, LatestFile), tt.latest+"\n")
			}
			got, err := Checkpoints(dir)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestWriteCheckpointPointsAndPrunes(t *testing.T) {
	dir := t.TempDir()
	for _, step := range []int64{512, 1024, 1536} {
		path, err := WriteCheckpoint(dir, step, []byte("x"))
		if err != nil || path != filepath.Join(dir, CheckpointName(step)) {
			t.Fatalf("step %d: %s, %v", step, path, err)
		}
	}
	PruneCheckpoints(dir, 2)
	got, _ := Checkpoints(dir)
	if want := []string{"step-1536.safetensors", "step-1024.safetensors"}; !slices.Equal(got, want) {
		t.Fatalf("after pruning: %v, want %v", got, want)
	}
}

// Reopen drops what a killed run wrote after its checkpoint: later records,
// a torn last line and the temporaries of interrupted writes.
func TestReopenForResume(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, MetricsFile), `{"iter":1}`+"\n"+`{"iter":2}`+"\n"+`{"iter":3}`+"\n"+`{"it`)
	writeFile(t, filepath.Join(dir, EditsFile), `{"iter":2,"key":"ppo.ent_coef"}`+"\n"+`{"iter":3,"key":"ppo.ent_coef"}`+"\n")
	writeFile(t, filepath.Join(dir, CheckpointsDir, ".step-9.safetensors.tmp42"), "half")
	if err := Reopen(dir, 2); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		MetricsFile: `{"iter":1}` + "\n" + `{"iter":2}` + "\n",
		EditsFile:   `{"iter":2,"key":"ppo.ent_coef"}` + "\n",
	} {
		if got, _ := os.ReadFile(filepath.Join(dir, file)); string(got) != want {
			t.Errorf("%s after reopening: %q, want %q", file, got, want)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, CheckpointsDir)); len(entries) != 0 {
		t.Errorf("temporaries left: %v", entries)
	}
}

func TestPinnedCheckpointsOutliveTheRotation(t *testing.T) {
	dir := t.TempDir()
	for _, step := range []int64{512, 1024, 1536, 2048} {
		if _, err := WriteCheckpoint(dir, step, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if step == 1024 {
			if err := Pin(dir, step); err != nil {
				t.Fatal(err)
			}
		}
		PruneCheckpoints(dir, 1)
	}
	got, _ := Checkpoints(dir)
	if want := []string{"step-2048.safetensors", "step-1024.safetensors"}; !slices.Equal(got, want) {
		t.Fatalf("after rotation: %v, want %v", got, want)
	}
	if !Pinned(dir, "step-1024.safetensors") || Pinned(dir, "step-2048.safetensors") {
		t.Error("pins wrong")
	}
}

// fullDisk is a file on a disk that fills up after room more bytes: the
// write that crosses it is cut short, as write(2) does.
type fullDisk struct {
	*os.File
	room int
}

func (d *fullDisk) Write(b []byte) (int, error) {
	if len(b) <= d.room {
		d.room -= len(b)
		return d.File.Write(b)
	}
	n, _ := d.File.Write(b[:d.room])
	d.room = 0
	return n, syscall.ENOSPC
}

// A record whose write fails part way is cut off again: the file holds
// whole records only, and later ones start on a line of their own.
func TestJSONLKeepsWholeRecordsOnAFullDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), MetricsFile)
	w, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(map[string]int{"iter": 1}); err != nil {
		t.Fatal(err)
	}
	w.f = &fullDisk{File: w.f.(*os.File), room: 5}
	if err := w.Write(map[string]int{"iter": 2}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk: %v", err)
	}
	w.f.(*fullDisk).room = 1 << 20 // room again
	if err := w.Write(map[string]int{"iter": 3}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if b, _ := os.ReadFile(path); string(b) != "{\"iter\":1}\n{\"iter\":3}\n" {
		t.Fatalf("metrics.jsonl after a failed write:\n%s", b)
	}
}

// A directory under a checkpoint's name is not overwritten, nor pruned.
func TestWriteCheckpointLeavesADirectoryInItsWay(t *testing.T) {
	dir := t.TempDir()
	blocked := filepath.Join(dir, CheckpointName(200))
	os.Mkdir(blocked, 0o755)
	if _, err := WriteCheckpoint(dir, 100, []byte("a")); err != nil {
		t.Fatal(err)
	}
	_, err := WriteCheckpoint(dir, 200, []byte("b"))
	var occ *OccupiedError
	if !errors.As(err, &occ) || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("writing over a directory: %v", err)
	}
	if latest, _ := os.ReadFile(filepath.Join(dir, LatestFile)); strings.TrimSpace(string(latest)) != CheckpointName(100) {
		t.Errorf("latest names %q after the refused write", latest)
	}
	if _, err := WriteCheckpoint(dir, 300, []byte("c")); err != nil {
		t.Fatal(err)
	}
	PruneCheckpoints(dir, 1)
	if st, err := os.Stat(blocked); err != nil || !st.IsDir() {
		t.Errorf("the directory was pruned: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, CheckpointName(100))); err == nil {
		t.Errorf("step 100 was kept beyond keep=1")
	}
}
