package builtin

import (
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
)

// Text environments have a registry of their own; an id in both would make
// env.id ambiguous.
func TestTextIDsAreNotEnvIDs(t *testing.T) {
	ids := text.IDs()
	if len(ids) < 4 {
		t.Fatalf("only %d text environments registered: %v", len(ids), ids)
	}
	for _, id := range ids {
		if _, ok := envs.Lookup(id); ok {
			t.Errorf("%s is both a text environment and an environment", id)
		}
	}
}
