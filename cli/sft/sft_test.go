package sft

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/agents/lm"
	"github.com/agenttrainer/agenttrainer/agents/lm/tokenizer"
	"github.com/agenttrainer/agenttrainer/gpu"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	o, err := Parse(args)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	err = Run(context.Background(), o, &out, &out)
	return out.String(), err
}

const line = `{"messages":[{"role":"user","content":"12+34="},{"role":"assistant","content":"46"}]}`

// A short run writes a model directory that loads, with its tokenizer, and
// plays the held-out tasks; the JSON outcome says so.
func TestSFTWritesALoadableModel(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.jsonl")
	tasks := filepath.Join(dir, "t.jsonl")
	os.WriteFile(data, []byte(strings.Repeat(line+"\n", 20)), 0o644)
	os.WriteFile(tasks, []byte(`{"a": 12, "b": 34}`+"\n"), 0o644)
	out := filepath.Join(dir, "model")
	js := filepath.Join(dir, "o.json")
	log, err := run(t, "--json", js, "env.id=Arithmetic-v0", "sft.data="+data, "sft.out="+out, "sft.epochs=40", "agent.name=lm", "agent.hidden_size=32",
		"agent.intermediate_size=64", "agent.num_hidden_layers=1", "agent.num_attention_heads=2", "agent.num_key_value_heads=2", "sft.learning_rate=1e-2",
		"sft.eval_tasks="+tasks, "sft.eval_max_response=8", "trainer.threads=1")
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	dev := gpu.NewCPU(1)
	defer dev.Close()
	m, err := lm.Load(dev, out, lm.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokenizer.Load(out); err != nil || m.Config.VocabSize < 90 {
		t.Fatalf("tokenizer %v, vocabulary %d", err, m.Config.VocabSize)
	}
	var rec struct {
		Steps int
		Eval  struct {
			Episodes int
			Success  float64
		}
	}
	b, _ := os.ReadFile(js)
	if err := json.Unmarshal(b, &rec); err != nil || rec.Steps != 40 || rec.Eval.Episodes != 1 || rec.Eval.Success != 1 {
		t.Fatalf("outcome %s (%v)\n%s", b, err, log)
	}
}

// A malformed transcript stops the run naming its line, or is skipped and
// counted with sft.skip_bad.
func TestSFTHostileData(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.jsonl")
	os.WriteFile(data, []byte(line+"\n"+`{"messages":[{"role":"user","content":"x"}]}`+"\n"+line+"\n"), 0o644)
	small := []string{"sft.data=" + data, "agent.name=lm", "agent.hidden_size=16", "agent.intermediate_size=16", "agent.num_hidden_layers=1", "agent.num_attention_heads=2", "agent.num_key_value_heads=2", "trainer.threads=1", "sft.heldout_fraction=0"}
	if _, err := run(t, small...); err == nil || !strings.Contains(err.Error(), "line 2: no assistant turn") {
		t.Fatalf("got %v", err)
	}
	log, err := run(t, append(small, "sft.skip_bad=true")...)
	if err != nil || !strings.Contains(log, "skipped "+data+":2: no assistant turn") || !strings.Contains(log, "2 training and 0 held-out examples, 1 skipped") {
		t.Fatalf("%v\n%s", err, log)
	}
	if _, err := run(t, "agent.name=lm", "sft.data="+filepath.Join(dir, "missing.jsonl")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("a missing file: %v", err)
	}
}
