package sft_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
	_ "github.com/agenttrainer/agenttrainer/trainer/sft" // its warm start
)

// SFT as the phase before RL in one run: sft.data in a run's config is
// enough (the package's init gives the trainer its warm start). The
// supervised phase teaches 1-digit addition to a from-scratch
// model, writes sft-model in the run directory, and GRPO's first
// validation already solves the tasks (an untrained model solves none).
func TestWarmStartBeforeRL(t *testing.T) {
	cfg, dir := warmStartRun(t)
	run := filepath.Join(dir, "run")
	tr, err := trainer.New(cfg, trainer.Options{RunDir: run, Device: gpu.NewCPU(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkWarmStarted(t, run)
}

// checkWarmStarted checks that a run wrote sft-model and that its first
// validation solved the tasks.
func checkWarmStarted(t *testing.T, run string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(run, "sft-model", "model.safetensors")); err != nil {
		t.Fatalf("no sft-model: %v", err)
	}
	ms, err := runstore.ReadMetrics(run)
	if err != nil || len(ms) == 0 {
		t.Fatalf("metrics: %v", err)
	}
	if v, ok := ms[0].Value("val/pass_at_k"); !ok || v < 0.9 {
		t.Fatalf("validation after the warm start: pass@k %v (%v)", v, ok)
	}
}

// A run stopped in its warm start (here: the phase's process dies after
// its first step), before any checkpoint, resumes inside the phase: the
// phase continues from its state and RL follows.
func TestWarmStartResumes(t *testing.T) {
	cfg, dir := warmStartRun(t)
	run := filepath.Join(dir, "run")
	orig := trainer.WarmStartFor
	defer func() { trainer.WarmStartFor = orig }()
	trainer.WarmStartFor = func(c config.Config) (func(context.Context, trainer.WarmStart) error, error) {
		phase, err := orig(c)
		if err != nil || phase == nil {
			return phase, err
		}
		return func(ctx context.Context, w trainer.WarmStart) error {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			logf := w.Logf
			w.Logf = func(format string, args ...any) {
				if strings.HasPrefix(fmt.Sprintf(format, args...), "step 1/") {
					cancel() // the phase stops after this step
				}
				logf(format, args...)
			}
			if err := phase(ctx, w); err != nil {
				return err
			}
			return errors.New("killed in the warm start")
		}, nil
	}
	tr, err := trainer.New(cfg, trainer.Options{RunDir: run, Device: gpu.NewCPU(1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "killed in the warm start") {
		t.Fatalf("the first run: %v", err)
	}
	tr.Close()
	if _, err := os.Stat(filepath.Join(run, trainer.WarmStartState)); err != nil {
		t.Fatalf("no warm-start state: %v", err)
	}
	trainer.WarmStartFor = orig
	tr2, err := trainer.Resume(run, nil, trainer.Options{Device: gpu.NewCPU(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer tr2.Close()
	events, stop := tr2.Subscribe(1 << 14)
	var logs []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range events {
			if e.Kind == trainer.EventLog {
				logs = append(logs, e.Message)
			}
		}
	}()
	_, err = tr2.Run(context.Background())
	stop()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(logs, "")
	if !strings.Contains(all, "sft: continuing from") || strings.Contains(all, "step 1/") {
		t.Fatalf("the resumed phase did not continue from its state (or trained step 1 again):\n%s", all)
	}
	checkWarmStarted(t, run)
	if _, err := os.Stat(filepath.Join(run, trainer.WarmStartState)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the warm-start state outlived the first checkpoint: %v", err)
	}
}

// warmStartRun is a run's config with a supervised phase on 1-digit
// addition, and the directory of its files.
func warmStartRun(t *testing.T) (config.Config, string) {
	dir := t.TempDir()
	data := filepath.Join(dir, "demos.jsonl")
	tasks := filepath.Join(dir, "tasks.jsonl")
	var d, tk strings.Builder
	for a := range 10 {
		for b := range 10 {
			d.WriteString(`{"messages":[{"role":"user","content":"` + string(rune('0'+a)) + "+" + string(rune('0'+b)) + `="},{"role":"assistant","content":"` + itoa(a+b) + `"}]}` + "\n")
			tk.WriteString(`{"a": ` + itoa(a) + `, "b": ` + itoa(b) + "}\n")
		}
	}
	os.WriteFile(data, []byte(d.String()), 0o644)
	os.WriteFile(tasks, []byte(tk.String()), 0o644)
	cfg := config.Default()
	if err := cfg.ApplyArgs([]string{"env.id=Arithmetic-v0", "agent.name=lm", "trainer.device=cpu", "trainer.threads=1",
		"agent.arch=llama", "agent.hidden_size=64", "agent.intermediate_size=128", "agent.num_attention_heads=4", "agent.num_key_value_heads=4", "agent.num_hidden_layers=1",
		"data.train_files=[\"" + tasks + "\"]", "data.val_files=[\"" + tasks + "\"]", "data.train_batch_size=2", "rollout.n=2",
		"data.max_response_length=6", "data.max_prompt_length=64", "trainer.total_training_steps=1", "trainer.test_freq=1",
		"rollout.val_temperature=0", "trainer.save_interval_s=0",
		"sft.data=" + data, "sft.epochs=150", "sft.batch_tokens=1024", "sft.learning_rate=3e-3", "sft.heldout_fraction=0"}); err != nil {
		t.Fatal(err)
	}
	return cfg, dir
}

func itoa(v int) string {
	if v < 10 {
		return string(rune('0' + v))
	}
	return string(rune('0'+v/10)) + string(rune('0'+v%10))
}

// sft.only is for `agenttrainer sft`; a missing sft.data file is the
// config's error before anything runs.
func TestWarmStartConfigErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		key  string
	}{
		{[]string{"sft.data=" + filepath.Join(t.TempDir(), "missing.jsonl")}, "sft.data"},
		{[]string{"sft.data=x.jsonl", "sft.only=true"}, "sft.only"},
	} {
		cfg := config.Default()
		if err := cfg.ApplyArgs(append([]string{"env.id=Arithmetic-v0", "agent.name=lm", "trainer.device=cpu", "agent.hidden_size=16",
			"agent.intermediate_size=16", "agent.num_attention_heads=2", "agent.num_key_value_heads=2", "agent.num_hidden_layers=1"}, c.args...)); err != nil {
			t.Fatal(err)
		}
		_, err := trainer.New(cfg, trainer.Options{RunDir: filepath.Join(t.TempDir(), "run"), Device: gpu.NewCPU(1)})
		var ce *config.Error
		if !errors.As(err, &ce) || ce.Key != c.key {
			t.Errorf("%v: %v, want a config error on %s", c.args, err, c.key)
		}
	}
}
