package lmagent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/agents"
)

// agent.rope_theta sets a from-scratch model's rotary base, in the model
// and in the config.json it is saved with; 0 keeps the architecture's.
func TestRopeTheta(t *testing.T) {
	for _, tt := range []struct {
		arch  string
		theta float64
		want  float64
		err   string
	}{
		{"llama", 0, 10000, ""},
		{"qwen3", 0, 1000000, ""},
		{"llama", 100, 100, ""},
		{"qwen2", 2500, 2500, ""},
		{"llama", 0.5, 0, "above 1"},
	} {
		c := agents.Config{"arch": tt.arch, "hidden_size": int64(32), "num_hidden_layers": int64(1), "num_attention_heads": int64(2),
			"num_key_value_heads": int64(1), "intermediate_size": int64(64), "vocab": "char", "rope_theta": tt.theta}
		cfg, err := ArchConfig(c)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "agent.rope_theta") {
				t.Fatalf("%s rope_theta %v: %v, want an error naming agent.rope_theta and %q", tt.arch, tt.theta, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := cfg.JSON()
		if err != nil {
			t.Fatal(err)
		}
		var file struct {
			Theta float64 `json:"rope_theta"`
		}
		if err := json.Unmarshal(b, &file); err != nil {
			t.Fatal(err)
		}
		if cfg.Rope.Theta != tt.want || file.Theta != tt.want {
			t.Fatalf("%s rope_theta %v: the model's base %v, config.json's %v; want %v", tt.arch, tt.theta, cfg.Rope.Theta, file.Theta, tt.want)
		}
	}
}
