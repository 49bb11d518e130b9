package frozenlake

import (
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
)

// The first rows of the rLLM golden file (envs/text/frozenlake/testdata,
// which replays all of them through this function too).
func TestRLLMMap(t *testing.T) {
	for _, tt := range []struct {
		size int
		p    float64
		seed int64
		want string
	}{
		{3, 0.663767, 577090037, "SHF/GFF/FFF"},
		{5, 0.623465, 1630434966, "FFFFF/FFFFF/FGFFF/HFHFS/FFFHF"},
	} {
		rows, _, _, err := RLLMMap(tt.size, tt.p, tt.seed, RLLMDefaultMaxSteps)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(rows, "/"); got != tt.want {
			t.Errorf("RLLMMap(%d, %g, %d) = %s, rLLM drew %s", tt.size, tt.p, tt.seed, got, tt.want)
		}
		f, err := NewFrozenLake(envs.Params{"size": tt.size, "p": tt.p, "seed": tt.seed, "generator": "rllm"})
		if err != nil {
			t.Fatal(err)
		}
		if f.MapString() != tt.want {
			t.Errorf("generator=rllm played %s, want %s", f.MapString(), tt.want)
		}
	}
	if _, err := NewFrozenLake(envs.Params{"size": 4, "p": 0.8, "seed": 1, "generator": "numpy"}); err == nil || !strings.Contains(err.Error(), `generator must be "pcg" or "rllm"`) {
		t.Errorf("an unknown generator: %v", err)
	}
	for _, bad := range []struct {
		size int
		p    float64
		seed int64
	}{{1, 0.8, 0}, {4, -0.1, 0}, {4, 0.8, -3}} {
		if _, _, _, err := RLLMMap(bad.size, bad.p, bad.seed, 5); err == nil {
			t.Errorf("RLLMMap(%d, %g, %d) was accepted", bad.size, bad.p, bad.seed)
		}
	}
}
