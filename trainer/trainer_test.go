package trainer

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

func testConfig(t testing.TB, overrides ...string) config.Config {
	t.Helper()
	cfg := config.Default()
	if err := cfg.ApplyArgs(append([]string{"ppo.total_timesteps=5120", "trainer.device=cpu"}, overrides...)); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// filledRollout builds a trainer of cfg and fills one rollout, ready for
// update: what tests and benchmarks of the update phase start from.
func filledRollout(t testing.TB, cfg config.Config) (tr *Trainer, p *progress, buf *rollout, b *batch, samples []int32) {
	t.Helper()
	tr, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	if p, err = tr.begin(); err != nil {
		t.Fatal(err)
	}
	buf = newRollout(cfg.PPO.NumSteps, cfg.Env.NumEnvs, tr.obsSpace.Size(), tr.actSpace.Size())
	b = newBatch(tr.dev, buf)
	if samples, err = tr.rollout(buf, p); err != nil {
		t.Fatal(err)
	}
	return tr, p, buf, b, samples
}

func train(t testing.TB, cfg config.Config, dir string) (Summary, []map[string]any) {
	t.Helper()
	tr, err := New(cfg, Options{RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sum, readRecords(t, filepath.Join(dir, runstore.MetricsFile))
}

func readRecords(t testing.TB, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: bad line %q: %v", path, sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// stripTiming removes the fields that legitimately differ between runs.
func stripTiming(recs []map[string]any) string {
	var b strings.Builder
	for _, r := range recs {
		delete(r, "time_s")
		delete(r, "sps")
		delete(r, "rollout_s")
		delete(r, "update_s")
		line, _ := json.Marshal(r)
		b.Write(append(line, '\n'))
	}
	return b.String()
}

func TestSameSeedSameMetrics(t *testing.T) {
	cfg := testConfig(t, "trainer.seed=7")
	_, a := train(t, cfg, t.TempDir())
	_, b := train(t, cfg, t.TempDir())
	if len(a) != 10 {
		t.Fatalf("%d records for 5120 steps of 512, want 10", len(a))
	}
	if sa, sb := stripTiming(a), stripTiming(b); sa != sb {
		t.Fatalf("same seed, different metrics:\n%s\n---\n%s", sa, sb)
	}
	_, c := train(t, testConfig(t, "trainer.seed=8"), t.TempDir())
	if stripTiming(c) == stripTiming(a) {
		t.Fatal("different seeds gave identical metrics")
	}
}

func TestRunDirectoryContract(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	cfg := testConfig(t, "trainer.save_freq=4", "trainer.keep_checkpoints=2")
	sum, recs := train(t, cfg, dir)
	if sum.State != StateDone || sum.Iterations != 10 || sum.RunDir != dir {
		t.Fatalf("summary %+v", sum)
	}
	for _, field := range []string{"iter", "step", "time_s", "sps", "episodes", "ep_return_mean", "ep_return_min",
		"ep_return_max", "ep_length_mean", "policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac",
		"explained_variance", "lr"} {
		if _, ok := recs[len(recs)-1][field]; !ok {
			t.Errorf("metrics record lacks %q", field)
		}
	}
	if got := recs[9]["step"].(float64); got != 5120 {
		t.Errorf("last step %v, want 5120", got)
	}
	// Linear annealing: iteration i uses lr·(1 − (i−1)/10).
	if got := recs[9]["lr"].(float64); math.Abs(got-2.5e-5) > 1e-12 {
		t.Errorf("last lr %v, want 2.5e-5", got)
	}
	// The resolved config reads back as the same config.
	back, err := config.Resolve(filepath.Join(dir, runstore.ConfigFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	if back.TOML() != cfg.TOML() {
		t.Fatalf("config.toml does not hold the resolved config:\n%s", back.TOML())
	}
	// Checkpoints at iterations 4, 8 and the end; the two newest kept.
	entries, _ := os.ReadDir(filepath.Join(dir, runstore.CheckpointsDir))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "latest step-4096.safetensors step-5120.safetensors" {
		t.Fatalf("checkpoints dir holds %v", names)
	}
	latest, _ := os.ReadFile(filepath.Join(dir, runstore.CheckpointsDir, runstore.LatestFile))
	if strings.TrimSpace(string(latest)) != "step-5120.safetensors" {
		t.Fatalf("latest points at %q", latest)
	}
	tensors, meta, err := runstore.ReadSafetensors(filepath.Join(dir, runstore.CheckpointsDir, "step-5120.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string][]int{"actor.0.weight": {64, 4}, "actor.0.bias": {64}, "actor.4.weight": {2, 64},
		"critic.4.weight": {1, 64}, "optimizer.exp_avg.actor.0.weight": {64, 4}}
	for name, want := range shapes {
		if got := tensors[name].Shape; len(got) != len(want) || got[0] != want[0] || (len(got) > 1 && got[1] != want[1]) {
			t.Errorf("%s has shape %v, want %v", name, got, want)
		}
	}
	if meta["step"] != "5120" || meta["env"] != "CartPole-v1" || !strings.Contains(meta["config"], "[ppo]") {
		t.Errorf("checkpoint metadata %v", meta)
	}
}

func TestRunDirRefusesExistingRun(t *testing.T) {
	dir := t.TempDir()
	train(t, testConfig(t, "ppo.total_timesteps=512"), dir)
	tr, _ := New(testConfig(t), Options{RunDir: dir})
	if _, err := tr.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "already holds a run") {
		t.Fatalf("second run in the same directory: %v", err)
	}
	if recs := readRecords(t, filepath.Join(dir, runstore.MetricsFile)); len(recs) != 1 {
		t.Fatalf("the first run's metrics were touched: %d records", len(recs))
	}
}

func TestGAEWithTruncationBootstrap(t *testing.T) {
	// One env, three steps: the episode is truncated after step 1 (its
	// reward already carries γ·V(final obs) = 0.5·4 = 2), then continues.
	buf := &rollout{
		rewards:    []float32{1, 1 + 2, 1},
		values:     []float32{0.5, 0.25, 1},
		dones:      []float32{0, 1, 0},
		nextValue:  []float32{2},
		advantages: make([]float32, 3), returns: make([]float32, 3),
	}
	const gamma, lambda = 0.5, 0.5
	computeGAE(buf, 3, 1, gamma, lambda)
	d2 := 1 + gamma*2 - 1.0    // step 2 bootstraps from nextValue
	d1 := 3 - 0.25             // step 1 ended an episode: no next value
	d0 := 1 + gamma*0.25 - 0.5 // step 0 looks at step 1's value
	a2, a1 := d2, d1           // nothing flows back across the episode end
	a0 := d0 + gamma*lambda*a1
	for i, want := range []float64{a0, a1, a2} {
		if math.Abs(float64(buf.advantages[i])-want) > 1e-6 {
			t.Errorf("advantage[%d] = %v, want %v", i, buf.advantages[i], want)
		}
		if got := float64(buf.returns[i]); math.Abs(got-(want+float64(buf.values[i]))) > 1e-6 {
			t.Errorf("return[%d] = %v, want %v", i, got, want+float64(buf.values[i]))
		}
	}
}

func TestStopKeepsWhatWasDone(t *testing.T) {
	dir := t.TempDir()
	tr, err := New(testConfig(t, "ppo.total_timesteps=10000000"), Options{RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	events, _ := tr.Subscribe(64)
	go func() {
		n := 0
		for e := range events {
			if e.Kind == EventMetrics {
				if n++; n == 3 {
					tr.Stop()
				}
			}
		}
	}()
	sum, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, filepath.Join(dir, runstore.MetricsFile))
	if sum.State != StateStopped || len(recs) != sum.Iterations || sum.Iterations < 3 {
		t.Fatalf("state %s, %d iterations, %d records", sum.State, sum.Iterations, len(recs))
	}
	if _, err := os.Stat(sum.Checkpoint); err != nil {
		t.Fatalf("no final checkpoint after stop: %v", err)
	}
}

// TestStopBeforeRun: a Stop that comes before Run has begun (a viewer
// closing at once, a test's cleanup) stops the run when it begins, instead
// of being lost and leaving a 10M-step run going.
func TestStopBeforeRun(t *testing.T) {
	tr, err := New(testConfig(t, "ppo.total_timesteps=10000000"), Options{RunDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	tr.Stop()
	sum, err := tr.Run(context.Background())
	if err != nil || sum.State != StateStopped || sum.Iterations > 1 {
		t.Fatalf("Run after Stop: state %s after %d iterations (%v), want stopped at once", sum.State, sum.Iterations, err)
	}
}

func TestLiveEdits(t *testing.T) {
	dir := t.TempDir()
	tr, err := New(testConfig(t, "ppo.total_timesteps=10000000"), Options{RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ key, val, want string }{
		{"env.num_envs", "8", "applies only when a run starts"},
		{"ppo.ent_coef", "-1", "must be 0 or more"},
		{"ppo.ent_cof", "0.1", "did you mean ppo.ent_coef?"},
		{"ppo.num_minibatches", "3", "does not divide the batch"},
	} {
		if err := tr.Edit(bad.key, bad.val); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Edit(%s=%s) = %v, want an error containing %q", bad.key, bad.val, err, bad.want)
		}
	}
	events, _ := tr.Subscribe(256)
	var sawEdit bool
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		n := 0
		for e := range events {
			switch e.Kind {
			case EventMetrics:
				if n++; n == 2 {
					if err := tr.Edit("ppo.ent_coef", "0.05"); err != nil {
						t.Error(err)
					}
				}
			case EventEdit:
				sawEdit = true
				tr.Stop()
			}
		}
	}()
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-watched
	recs := readRecords(t, filepath.Join(dir, runstore.EditsFile))
	if !sawEdit || len(recs) != 1 || recs[0]["key"] != "ppo.ent_coef" || recs[0]["value"] != "0.05" || recs[0]["old"] != "0.01" {
		t.Fatalf("edits.jsonl = %v (event seen: %v)", recs, sawEdit)
	}
	if recs[0]["step"].(float64) < 1024 {
		t.Fatalf("edit recorded at step %v, before it was made", recs[0]["step"])
	}
	if tr.Config().PPO.EntCoef != 0.05 {
		t.Fatal("edit not visible in Config()")
	}
	cfg, err := config.Resolve(filepath.Join(dir, runstore.ConfigFile), nil)
	if err != nil || cfg.PPO.EntCoef != 0.05 {
		t.Fatalf("config.toml after the edit: ent_coef %v, %v", cfg.PPO.EntCoef, err)
	}
}

func TestSlowViewerDoesNotBlockTraining(t *testing.T) {
	tr, err := New(testConfig(t, "ppo.total_timesteps=20480"), Options{RunDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	events, _ := tr.Subscribe(1) // never read until the end
	done := make(chan Summary)
	go func() {
		sum, _ := tr.Run(context.Background())
		done <- sum
	}()
	select {
	case sum := <-done:
		if sum.Iterations != 40 {
			t.Fatalf("%d iterations", sum.Iterations)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("training blocked on a viewer that does not read")
	}
	var last Event
	for e := range events {
		last = e
	}
	if last.Kind != EventDone || last.State != StateDone {
		t.Fatalf("the slow viewer's last event is %+v, want the end of the run", last)
	}
}

func TestNewRejectsUnknownNames(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"env.id=CartPole-v0", `unknown environment "CartPole-v0"; did you mean CartPole-v1?`},
		{"agent.name=mpl", `unknown agent "mpl"; did you mean mlp?`},
	} {
		_, err := New(testConfig(t, tc.arg), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !config.IsConfigError(err) {
			t.Errorf("%s: %v", tc.arg, err)
		}
	}
}

// TestCartPoleLearns trains the default config (CleanRL's hyperparameters)
// and checks the published level; about 10 s on two cores.
func TestCartPoleLearns(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 500k steps")
	}
	cfg := config.Default()
	cfg.Trainer.Device = "cpu"
	_, recs := train(t, cfg, t.TempDir())
	first := -1.0
	for _, r := range recs {
		if v, ok := r["ep_return_mean"].(float64); ok && v >= 475 && first < 0 {
			first = r["step"].(float64)
		}
	}
	final := recs[len(recs)-1]["ep_return_mean"].(float64)
	t.Logf("ep_return_mean first ≥ 475 at step %.0f; final %.1f", first, final)
	if first < 0 || final < 475 {
		t.Fatalf("CartPole did not learn: first ≥ 475 at %v, final %v", first, final)
	}
}

func TestCUDAWithoutTheTag(t *testing.T) {
	if gpu.HasCUDA {
		t.Skip("this binary has CUDA; gpu's own tests cover device selection")
	}
	_, err := New(testConfig(t, "trainer.device=cuda"), Options{})
	if err == nil || !strings.Contains(err.Error(), "built without CUDA support") || !config.IsConfigError(err) {
		t.Fatalf("trainer.device=cuda in a build without CUDA: %v", err)
	}
}

// TensorBoard events come only when asked for, one file per process, and
// hold a record per iteration (their encoding is runstore's test).
func TestTensorBoardOnlyWhenAsked(t *testing.T) {
	for _, on := range []bool{false, true} {
		dir := t.TempDir()
		_, recs := train(t, testConfig(t, fmt.Sprintf("trainer.tensorboard=%v", on)), dir)
		files, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*"))
		if want := map[bool]int{false: 0, true: 1}[on]; len(files) != want {
			t.Fatalf("tensorboard=%v: event files %v, want %d", on, files, want)
		}
		if on {
			st, err := os.Stat(files[0])
			if err != nil || st.Size() < int64(len(recs))*100 {
				t.Fatalf("event file of %v bytes for %d records (%v)", st.Size(), len(recs), err)
			}
		}
	}
}

// Tiny iterations do not write a row each: trainer.log_every_steps spaces
// the rows by steps, the last iteration always has one, and a large
// iteration is never skipped.
func TestMetricsRowsAreSpacedBySteps(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overrides []string
		rows      int
		every     int64 // steps between rows (the last excepted)
	}{
		{"1 env × 8 steps, a row per 512 steps", []string{"env.num_envs=1", "ppo.num_steps=8", "ppo.num_minibatches=1", "ppo.total_timesteps=4200"}, 9, 512},
		{"every iteration when asked", []string{"env.num_envs=1", "ppo.num_steps=8", "ppo.num_minibatches=1", "ppo.total_timesteps=400", "trainer.log_every_steps=0"}, 50, 8},
		{"iterations larger than the spacing", []string{"ppo.total_timesteps=5120", "trainer.log_every_steps=100"}, 10, 512},
		{"an uneven spacing", []string{"env.num_envs=1", "ppo.num_steps=8", "ppo.num_minibatches=1", "ppo.total_timesteps=200", "trainer.log_every_steps=60"}, 4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, rows := train(t, testConfig(t, append(tc.overrides, "trainer.threads=1")...), filepath.Join(t.TempDir(), "run"))
			if len(rows) != tc.rows {
				t.Fatalf("%d rows, want %d", len(rows), tc.rows)
			}
			last := rows[len(rows)-1]
			if int(last["iter"].(float64)) != sum.Iterations || int64(last["step"].(float64)) != sum.Last.Step {
				t.Errorf("the last row is iteration %v step %v; the run ended at %d, step %d", last["iter"], last["step"], sum.Iterations, sum.Last.Step)
			}
			for i, r := range rows[:len(rows)-1] {
				if step := int64(r["step"].(float64)); tc.every > 0 && step != int64(i+1)*tc.every {
					t.Errorf("row %d at step %d, want %d", i, step, int64(i+1)*tc.every)
				}
			}
		})
	}
}
