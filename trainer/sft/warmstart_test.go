package sft_test

import (
	"context"
	"errors"
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
	run := filepath.Join(dir, "run")
	tr, err := trainer.New(cfg, trainer.Options{RunDir: run, Device: gpu.NewCPU(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
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
