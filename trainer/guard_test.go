package trainer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// brokenEnv behaves like a one-dimensional walk until step `after`, then
// returns a NaN observation or an enormous reward.
type brokenEnv struct {
	t, after int
	huge     bool
	r        float32
}

func (b *brokenEnv) ObservationSpace() envs.Space { return envs.Space{Kind: envs.Box, Dim: 1} }
func (b *brokenEnv) ActionSpace() envs.Space      { return envs.Space{Kind: envs.Discrete, N: 2} }
func (b *brokenEnv) Reset(_ int64, obs []float32) { obs[0] = 0 }
func (b *brokenEnv) Step(a, obs []float32) (float64, bool, bool) {
	b.t++
	obs[0] = a[0]
	switch {
	case b.t > b.after && b.huge:
		return 1e38, false, b.t%50 == 0
	case b.t > b.after:
		obs[0] = float32(math.NaN())
	}
	return 1, false, b.t%50 == 0
}

func init() {
	envs.Register(envs.Spec{ID: "test/NaNObs-v0", Description: "test env: NaN observations after 3000 steps",
		New: func(envs.Params) (envs.Env, error) { return &brokenEnv{after: 3000}, nil }})
	envs.Register(envs.Spec{ID: "test/HugeReward-v0", Description: "test env: overflowing rewards after 3000 steps",
		New: func(envs.Params) (envs.Env, error) { return &brokenEnv{after: 3000, huge: true}, nil }})
}

func TestNonFiniteStopsTheRunAndKeepsTheLastGoodCheckpoint(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"test/NaNObs-v0", "returned a non-finite observation"},
		{"test/HugeReward-v0", "became"},
	} {
		t.Run(tc.env, func(t *testing.T) {
			dir := t.TempDir()
			tr, err := New(testConfig(t, "env.id="+tc.env, "trainer.save_freq=1", "ppo.total_timesteps=20480"), Options{RunDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := tr.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "last checkpoint") {
				t.Fatalf("run ended with %v, want an error containing %q", err, tc.want)
			}
			if sum.State != StateFailed {
				t.Fatalf("state %s", sum.State)
			}
			latest, _ := os.ReadFile(filepath.Join(dir, runstore.CheckpointsDir, runstore.LatestFile))
			tensors, _, err := runstore.ReadSafetensors(filepath.Join(dir, runstore.CheckpointsDir, strings.TrimSpace(string(latest))))
			if err != nil {
				t.Fatal(err)
			}
			for name, td := range tensors {
				for _, x := range td.Data {
					if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
						t.Fatalf("latest checkpoint holds non-finite %s", name)
					}
				}
			}
		})
	}
}

func hashTree(t *testing.T, dir string) map[string][32]byte {
	out := map[string][32]byte{}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(path)
			out[path] = sha256.Sum256(b)
		}
		return nil
	})
	return out
}

func TestResumeRejectsBadRunDirectories(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good")
	train(t, testConfig(t, "ppo.total_timesteps=2048"), good)
	acro := filepath.Join(t.TempDir(), "acro")
	train(t, testConfig(t, "env.id=Acrobot-v1", "ppo.total_timesteps=2048"), acro)
	copyDir := func(src string) string {
		dst := filepath.Join(t.TempDir(), "copy")
		os.CopyFS(dst, os.DirFS(src))
		return dst
	}
	ckpt := "checkpoints/step-2048.safetensors"
	tests := []struct {
		name  string
		setup func() string
		want  string
	}{
		{"missing", func() string { return filepath.Join(t.TempDir(), "nope") }, "no run directory at"},
		{"empty", func() string { return t.TempDir() }, "is not an agenttrainer run directory (it has no config.toml)"},
		{"foreign", func() string {
			d := t.TempDir()
			os.WriteFile(filepath.Join(d, "config.toml"), []byte("[model]\nlayers = 3\n"), 0o644)
			return d
		}, "no checkpoints directory"},
		{"truncated checkpoint", func() string {
			d := copyDir(good)
			b, _ := os.ReadFile(filepath.Join(d, ckpt))
			os.WriteFile(filepath.Join(d, ckpt), b[:len(b)/2], 0o644)
			return d
		}, "no valid checkpoint: step-2048.safetensors: tensor"},
		{"garbage checkpoint", func() string {
			d := copyDir(good)
			os.WriteFile(filepath.Join(d, ckpt), []byte("not a checkpoint"), 0o644)
			return d
		}, "header of"},
		{"checkpoint from another run", func() string {
			d := copyDir(good)
			b, _ := os.ReadFile(filepath.Join(acro, ckpt))
			os.WriteFile(filepath.Join(d, ckpt), b, 0o644)
			return d
		}, "was trained on Acrobot-v1 with mlp, but this run is CartPole-v1 with mlp"},
		{"changed shape", func() string { return copyDir(good) }, "agent.hidden: cannot change when resuming"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.setup()
			before := hashTree(t, dir)
			var overrides []string
			if tc.name == "changed shape" {
				overrides = []string{"agent.hidden=[32]"}
			}
			_, err := Resume(dir, overrides, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Resume: %v, want an error containing %q", err, tc.want)
			}
			after := hashTree(t, dir)
			if len(before) != len(after) {
				t.Fatalf("files changed: %d before, %d after", len(before), len(after))
			}
			for p, h := range before {
				if after[p] != h {
					t.Fatalf("%s was modified by a failed resume", p)
				}
			}
		})
	}
}

// One trainer per run directory: resuming a run that still trains is
// refused with the process that holds it, and allowed once it stopped.
func TestResumeOfALiveRunIsRefused(t *testing.T) {
	dir := t.TempDir()
	tr, err := New(testConfig(t, "ppo.total_timesteps=100000000", "trainer.save_freq=1"), Options{RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	events, _ := tr.Subscribe(64)
	done := runAsync(tr)
	for e := range events {
		if e.Kind == EventCheckpoint {
			break
		}
	}
	_, err = Resume(dir, nil, Options{})
	if !errors.Is(err, runstore.ErrInUse) || !strings.Contains(err.Error(), fmt.Sprintf("process %d", os.Getpid())) {
		t.Errorf("resuming a live run: %v", err)
	}
	tr.Stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	again, err := Resume(dir, nil, Options{})
	if err != nil {
		t.Fatalf("resuming the stopped run: %v", err)
	}
	again.Close()
}

// Configurations that cannot fit are refused before anything is built or
// written, with the estimate, its biggest part and the limit.
func TestMemoryIsEstimatedFirst(t *testing.T) {
	tests := []struct {
		name      string
		overrides []string
		limit     float64
		want      string // "" means it fits
	}{
		{"default fits a small machine", nil, 64 << 20, ""},
		{"too many environments", []string{"env.num_envs=1000000", "ppo.num_steps=1"}, 1 << 30, "mostly environments"},
		{"rollout too long", []string{"ppo.num_steps=1000000", "env.num_envs=64", "ppo.num_minibatches=1024"}, 1 << 30, "mostly the rollout buffers"},
		{"huge minibatches", []string{"ppo.num_steps=1000000", "env.num_envs=64", "ppo.num_minibatches=1"}, 1 << 30, "mostly the networks' activations"},
		{"networks too wide", []string{"agent.hidden=[65536,65536]"}, 1 << 30, "mostly the networks' weights"},
		{"convolutions too wide", []string{"env.id=MinAtar/Breakout-v1", "agent.name=cnn", "agent.conv=[[4096, 3, 1, 1]]", "env.num_envs=64", "ppo.num_steps=256", "ppo.num_minibatches=1"}, 1 << 30, "mostly the convolutions' activations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			tr, err := New(testConfig(t, tt.overrides...), Options{RunDir: dir, MemoryLimit: tt.limit})
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				tr.Close()
				return
			}
			var cfgErr *config.Error
			if !errors.As(err, &cfgErr) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "more than the 1.0 GiB") {
				t.Fatalf("got %v, want a config error naming %q and the limit", err, tt.want)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Error("a refused configuration left a run directory")
			}
		})
	}
}

func TestThreadsBeyondTheCoresAreRefused(t *testing.T) {
	_, err := New(testConfig(t, fmt.Sprintf("trainer.threads=%d", runtime.NumCPU()+1)), Options{})
	if err == nil || !strings.Contains(err.Error(), "trainer.threads") || !strings.Contains(err.Error(), "cores") {
		t.Fatalf("got %v", err)
	}
}

// A stop reaches the deepest loops: a rollout step and a minibatch notice
// it, so a run with a huge update still stops at once.
func TestStopReachesRolloutAndMinibatches(t *testing.T) {
	tr, p, buf, batch, samples := filledRollout(t, testConfig(t, "ppo.update_epochs=10000"))
	// A minibatch that sees the stop ends the update: with 40,000
	// minibatches to go, this returns after the first.
	events, _ := tr.Subscribe(16)
	tr.stopping.Store(true)
	var m Metrics
	if done, _ := tr.update(batch, samples, &p.opt, 1e-4, &m); done != 0 {
		t.Errorf("update ran %d minibatches after the stop", done)
	}
	if e := <-events; !strings.Contains(e.Message, "cut the update after 0 of 40000 minibatches") {
		t.Errorf("log %q", e.Message)
	}
	step := p.step
	if _, err := tr.rollout(buf, p); !errors.Is(err, errCut) || p.step != step {
		t.Errorf("rollout after the stop: %v, %d steps taken", err, p.step-step)
	}
}

// End to end: a run whose single iteration would take minutes stops
// promptly, records no half iteration and keeps a consistent checkpoint.
func TestStopDuringAHugeIteration(t *testing.T) {
	dir := t.TempDir()
	tr, err := New(testConfig(t, "ppo.update_epochs=10000", "ppo.num_minibatches=1", "agent.hidden=[512,512]"), Options{RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	events, _ := tr.Subscribe(64)
	var logs []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range events {
			if e.Kind == EventLog {
				logs = append(logs, e.Message)
				if strings.HasPrefix(e.Message, "training ") {
					tr.Stop()
				}
			}
		}
	}()
	sum, err := tr.Run(context.Background())
	<-done
	if err != nil || sum.State != StateStopped {
		t.Fatalf("state %s, err %v", sum.State, err)
	}
	recs := readRecords(t, filepath.Join(dir, runstore.MetricsFile))
	if len(recs) != sum.Iterations || sum.Iterations > 1 {
		t.Fatalf("%d iterations, %d records", sum.Iterations, len(recs))
	}
	if !slices.ContainsFunc(logs, func(l string) bool {
		return strings.Contains(l, "cut the update") || strings.Contains(l, "stopped during the rollout") || strings.Contains(l, "stopped before its update")
	}) {
		t.Fatalf("no word of the cut in the log: %q", logs)
	}
}

// A newest checkpoint that fails any check is skipped, with a warning that
// names it and why, for the newest valid one; resume and eval alike.
func TestInvalidCheckpointsFallBack(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good")
	train(t, testConfig(t, "ppo.total_timesteps=2048", "trainer.save_freq=1", "trainer.keep_checkpoints=0"), good)
	const newest, older = "step-2048.safetensors", "step-1536.safetensors"
	// rewrite changes the newest checkpoint's tensors or header.
	rewrite := func(t *testing.T, dir string, change func(map[string]runstore.Tensor, map[string]string)) {
		path := filepath.Join(dir, runstore.CheckpointsDir, newest)
		tensors, meta, err := runstore.ReadSafetensors(path)
		if err != nil {
			t.Fatal(err)
		}
		change(tensors, meta)
		var list []runstore.Tensor
		for _, td := range tensors {
			list = append(list, td)
		}
		data, err := runstore.EncodeSafetensors(list, meta)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setValue := func(name string, v float32) func(map[string]runstore.Tensor, map[string]string) {
		return func(ts map[string]runstore.Tensor, _ map[string]string) { ts[name].Data[0] = v }
	}
	tests := []struct {
		name   string
		change func(map[string]runstore.Tensor, map[string]string)
		reason string
	}{
		{"NaN weight", setValue("actor.0.weight", float32(math.NaN())), "tensor actor.0.weight holds NaN"},
		{"huge weight", setValue("critic.2.bias", 1e30), "beyond any trained value"},
		{"negative second moment", setValue("optimizer.exp_avg_sq.actor.2.weight", -1), "holds the negative -1"},
		{"NaN first moment", setValue("optimizer.exp_avg.critic.0.weight", float32(math.Inf(1))), "holds +Inf"},
		{"transposed shape", func(ts map[string]runstore.Tensor, _ map[string]string) {
			td := ts["actor.0.weight"]
			td.Shape = []int{td.Shape[1], td.Shape[0]}
			ts["actor.0.weight"] = td
		}, "tensor actor.0.weight has shape [4 64], this agent needs [64 4]"},
		{"bad random stream", func(_ map[string]runstore.Tensor, meta map[string]string) {
			meta["state"] = strings.Replace(meta["state"], `"act_rng":"`, `"act_rng":"AAAA`, 1)
		}, "bad action random stream"},
		{"counters disagree", func(_ map[string]runstore.Tensor, meta map[string]string) { meta["step"] = "99" }, "header says step 99"},
		{"no loop state", func(_ map[string]runstore.Tensor, meta map[string]string) { delete(meta, "state") }, "bad training state"},
		// Found by the hostile suite: headers that disagree with themselves.
		{"no config", func(_ map[string]runstore.Tensor, meta map[string]string) { delete(meta, "config") }, "the header holds no config"},
		{"env disagrees", func(_ map[string]runstore.Tensor, meta map[string]string) { meta["env"] = "Acrobot-v1" }, "the header says Acrobot-v1 with mlp, its config CartPole-v1 with mlp"},
		{"adam step disagrees", func(_ map[string]runstore.Tensor, meta map[string]string) { meta["adam_step"] = "-5" }, "header says Adam step -5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			os.CopyFS(dir, os.DirFS(good))
			rewrite(t, dir, tt.change)
			tr, err := Resume(dir, nil, Options{})
			if err != nil {
				t.Fatalf("resume did not fall back: %v", err)
			}
			defer tr.Close()
			if filepath.Base(tr.resume.path) != older {
				t.Errorf("resumed from %s, want %s", tr.resume.path, older)
			}
			if len(tr.notes) != 1 || !strings.Contains(tr.notes[0], newest) || !strings.Contains(tr.notes[0], tt.reason) {
				t.Errorf("notes %q, want one naming %s and %q", tr.notes, newest, tt.reason)
			}
			if tt.name == "bad random stream" || tt.name == "counters disagree" || tt.name == "no loop state" || tt.name == "adam step disagrees" {
				return // evaluation needs no loop state
			}
			res, err := Evaluate(context.Background(), dir, EvalOptions{Episodes: 1})
			if err != nil || filepath.Base(res.Checkpoint) != older || len(res.Skipped) != 1 {
				t.Errorf("eval: %v, from %s, skipped %q", err, res.Checkpoint, res.Skipped)
			}
		})
	}
}

// Lowering ppo.total_timesteps live below what a run has done is refused
// (it would end the run unannounced); resuming a finished run says there is
// nothing to do and how to train on.
func TestTotalStepsCannotFallBehind(t *testing.T) {
	dir := t.TempDir()
	tr, err := New(testConfig(t, "ppo.total_timesteps=100000000"), Options{RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	events, _ := tr.Subscribe(64)
	done := runAsync(tr)
	for e := range events {
		if e.Kind == EventMetrics && e.Metrics.Iter >= 2 {
			break
		}
	}
	if err := tr.Edit("ppo.total_timesteps", "512"); err == nil || !strings.Contains(err.Error(), "is not above the") {
		t.Errorf("edit below the current step: %v", err)
	}
	if err := tr.Edit("ppo.total_timesteps", "1000000000"); err != nil {
		t.Errorf("edit above the current step: %v", err)
	}
	tr.Stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	finished := t.TempDir()
	train(t, testConfig(t, "ppo.total_timesteps=1024"), finished)
	again, err := Resume(finished, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	logs, _ := again.Subscribe(16)
	sum, err := again.Run(context.Background())
	if err != nil || sum.State != StateDone {
		t.Fatalf("resuming a finished run: %s, %v", sum.State, err)
	}
	var said []string
	for e := range logs {
		said = append(said, e.Message)
	}
	if !slices.ContainsFunc(said, func(s string) bool { return strings.HasPrefix(s, "nothing to do: the run has reached step 1024") }) {
		t.Errorf("log %q", said)
	}
	if recs := readRecords(t, filepath.Join(finished, runstore.MetricsFile)); len(recs) != 2 {
		t.Errorf("%d records after resuming a finished run, want the 2 it had", len(recs))
	}
}

// A checkpoint asked for by hand is pinned: the rotation keeps it, and the
// event says so with its step.
func TestAskedCheckpointIsPinned(t *testing.T) {
	dir := t.TempDir()
	tr, err := New(testConfig(t, "ppo.total_timesteps=8192", "trainer.save_freq=1", "trainer.keep_checkpoints=1"), Options{RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	events, _ := tr.Subscribe(1024)
	var pinned []Event
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range events {
			if e.Kind == EventMetrics && e.Metrics.Iter == 3 {
				tr.SaveCheckpoint()
			}
			if e.Kind == EventCheckpoint && e.Pinned {
				pinned = append(pinned, e)
			}
		}
	}()
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-done
	if len(pinned) != 1 || !strings.Contains(pinned[0].Message, "checkpoint saved at step") || !strings.Contains(pinned[0].Message, "pinned") {
		t.Fatalf("pinned events %+v", pinned)
	}
	name := filepath.Base(pinned[0].Checkpoint)
	got, _ := runstore.Checkpoints(filepath.Join(dir, runstore.CheckpointsDir))
	if len(got) != 2 || !slices.Contains(got, name) || got[0] != "step-8192.safetensors" {
		t.Fatalf("checkpoints after the run: %v, want the last and the pinned %s", got, name)
	}
}

// Checkpoints come by time, not by iterations, unless asked: a fast run no
// longer thrashes the disk with several a second.
func TestCheckpointsByTime(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { now = now.Add(time.Second); return now } // each look at the clock: 1 s
	for _, tt := range []struct {
		interval string
		want     int // checkpoints written, the final one included
	}{{"0", 1}, {"5", 4}, {"1000", 1}} {
		dir := t.TempDir()
		tr, err := New(testConfig(t, "ppo.total_timesteps=8192", "trainer.keep_checkpoints=0", "trainer.save_interval_s="+tt.interval), Options{RunDir: dir, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		events, _ := tr.Subscribe(1024)
		if _, err := tr.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		n := 0
		for e := range events {
			if e.Kind == EventCheckpoint {
				n++
			}
		}
		if (tt.want == 1 && n != 1) || (tt.want > 1 && n < 2) {
			t.Errorf("save_interval_s=%s: %d checkpoints for 16 iterations, want %d", tt.interval, n, tt.want)
		}
	}
}

// A checkpoint name taken by a directory (not made by the trainer) costs
// that one checkpoint, with a warning, not the run; the directory is left
// alone. The final checkpoint cannot be skipped: its loss is an error.
func TestOccupiedCheckpointNameIsSkipped(t *testing.T) {
	for _, tc := range []struct {
		name    string
		blocked string // the checkpoint name a directory takes
		final   bool
	}{{"periodic", "step-2048.safetensors", false}, {"final", "step-5120.safetensors", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			blocked := filepath.Join(dir, runstore.CheckpointsDir, tc.blocked)
			if err := os.MkdirAll(blocked, 0o755); err != nil {
				t.Fatal(err)
			}
			tr, err := New(testConfig(t, "trainer.save_freq=1"), Options{RunDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			events, _ := tr.Subscribe(1024)
			_, err = tr.Run(context.Background())
			var warnings []string
			for e := range events {
				if e.Kind == EventLog && strings.HasPrefix(e.Message, "warning:") {
					warnings = append(warnings, e.Message)
				}
			}
			if st, serr := os.Stat(blocked); serr != nil || !st.IsDir() {
				t.Errorf("the directory in the way was touched: %v", serr)
			}
			var occ *runstore.OccupiedError
			if tc.final {
				if !errors.As(err, &occ) || !strings.Contains(err.Error(), "is a directory") {
					t.Fatalf("final checkpoint's name taken: err %v, want an OccupiedError", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("a periodic checkpoint's name taken ended the run: %v", err)
			}
			if len(warnings) != 1 || !strings.Contains(warnings[0], tc.blocked+" not written") || !strings.Contains(warnings[0], "training goes on") {
				t.Errorf("warnings %q, want one naming %s", warnings, tc.blocked)
			}
			names, _ := runstore.Checkpoints(filepath.Join(dir, runstore.CheckpointsDir))
			if len(names) == 0 || names[0] != "step-5120.safetensors" {
				t.Errorf("checkpoints %v, want step-5120.safetensors the latest", names)
			}
		})
	}
}

// A run held before its first step changes state without log text, so no
// viewer's log starts with "resumed" at random; later pauses are announced.
func TestHoldBeforeTheFirstStepIsQuiet(t *testing.T) {
	tr, err := New(testConfig(t, "ppo.total_timesteps=2048"), Options{RunDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	tr.Pause()
	events, _ := tr.Subscribe(256)
	done := make(chan struct{})
	var states []Event
	go func() {
		defer close(done)
		for e := range events {
			if e.Kind == EventState {
				states = append(states, e)
				if e.State == StatePaused {
					tr.Resume()
				}
			}
		}
	}()
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-done
	if len(states) != 2 || states[0].State != StatePaused || states[1].State != StateRunning || states[0].Message != "" || states[1].Message != "" {
		t.Fatalf("states %+v, want a quiet pause and resume", states)
	}
}

// Evaluating a run with task files plays one task an episode (FrozenLake:
// many lakes, not one), and the last step of every episode is drawn.
func TestEvalPlaysTheTasksAndDrawsTheEnd(t *testing.T) {
	dir := t.TempDir()
	var rows []string
	for seed := 1; seed <= 5; seed++ {
		rows = append(rows, fmt.Sprintf(`{"size": 4, "p": 0.8, "seed": %d}`, seed))
	}
	val := filepath.Join(dir, "val.jsonl")
	if err := os.WriteFile(val, []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	train(t, testConfig(t, "env.id=FrozenLake-v1", "ppo.total_timesteps=2048", `data.val_files=["`+val+`"]`, "trainer.test_freq=0"), run)
	lakes := map[string]bool{}
	var ends []string
	last := -1
	var prev string
	var lastFrames []Frame // the frames marked Last, one an episode
	res, err := Evaluate(context.Background(), run, EvalOptions{Episodes: 5, Frame: func(f Frame) error {
		frame := f.Text()
		if f.Episode != last { // the first frame of an episode: its lake
			if last >= 0 {
				ends = append(ends, prev)
			}
			lakes[strings.SplitN(frame, "\n", 5)[3]] = true
			last = f.Episode
			if f.Step != 0 || f.Return != 0 || f.Last {
				t.Errorf("episode %d starts at step %d, return %g, last %v", f.Episode, f.Step, f.Return, f.Last)
			}
		}
		if f.Last {
			lastFrames = append(lastFrames, f)
		}
		prev = frame
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	ends = append(ends, prev)
	if res.Tasks != "its 5 validation tasks" || len(lakes) < 3 {
		t.Errorf("played on %s, %d different lakes", res.Tasks, len(lakes))
	}
	if len(lastFrames) != len(res.Returns) {
		t.Fatalf("%d frames marked last for %d episodes", len(lastFrames), len(res.Returns))
	}
	for i, f := range lastFrames {
		if f.Episode != i || f.Return != res.Returns[i] || float64(f.Step) != res.Lengths[i] {
			t.Errorf("last frame %d: episode %d, return %g after %d steps; the result says %g after %g",
				i, f.Episode, f.Return, f.Step, res.Returns[i], res.Lengths[i])
		}
	}
	for i, end := range ends {
		status := end[strings.LastIndex(end, "\n")+1:]
		if !strings.Contains(status, "reached the goal") && !strings.Contains(status, "fell in a hole") && !strings.HasPrefix(status, "step 100/") {
			t.Errorf("episode %d's last frame is not its end: %q", i, status)
		}
	}
}

// An edit the run accepted is recorded even when a stop follows it at once
// (before another iteration begins).
func TestEditJustBeforeAStopIsKept(t *testing.T) {
	dir := t.TempDir()
	tr, err := New(testConfig(t, "ppo.total_timesteps=100000000"), Options{RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	events, _ := tr.Subscribe(64)
	done := runAsync(tr)
	for e := range events {
		if e.Kind == EventMetrics {
			if err := tr.Edit("ppo.ent_coef", "0.03"); err != nil {
				t.Error(err)
			}
			tr.Stop()
			break
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if edits := readRecords(t, filepath.Join(dir, runstore.EditsFile)); len(edits) != 1 || edits[0]["value"] != "0.03" {
		t.Fatalf("edits %v", edits)
	}
	cfg, err := runstore.ReadConfig(dir)
	if err != nil || cfg.PPO.EntCoef != 0.03 {
		t.Fatalf("config.toml has ent_coef %v (%v)", cfg.PPO.EntCoef, err)
	}
}

// runAsync runs tr in the background; its error arrives on the channel.
func runAsync(tr *Trainer) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := tr.Run(context.Background())
		done <- err
	}()
	return done
}

// TestMemoryEstimateBoundsTheHeap: what a training holds while it updates
// (agent, device scratch, rollout, batch, after a rollout and an update)
// stays under memoryEstimate, and the estimate is not so loose that it
// would refuse what fits: under four times what is held.
func TestMemoryEstimateBoundsTheHeap(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overrides []string
	}{
		{"CartPole", nil},
		{"64 envs × [256,256]", []string{"env.num_envs=64", "agent.hidden=[256,256]"}},
		{"MinAtar Breakout preset", []string{`env.id="MinAtar/Breakout-v1"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Resolve("", append([]string{"trainer.device=cpu", "trainer.threads=2", "trainer.runs_dir=" + t.TempDir()}, tc.overrides...))
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			tr, p, buf, batch, samples := filledRollout(t, cfg)
			var m Metrics
			tr.update(batch, samples, &p.opt, 1e-4, &m)
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(buf)
			runtime.KeepAlive(batch)
			held := float64(after.HeapAlloc) - float64(before.HeapAlloc)
			est, _ := memoryEstimate(&cfg, tr.obsSpace, tr.actSpace)
			t.Logf("held %.1f MB, estimated %.1f MB", held/1e6, est/1e6)
			if held > est || est > 4*held {
				t.Errorf("held %.1f MB against an estimate of %.1f MB", held/1e6, est/1e6)
			}
		})
	}
}
