// Package builtin registers every agent that ships with agenttrainer in a
// package of its own: import it for its side effect wherever a program must
// know them all. The config schema imports it (trainer/config), so that
// every shipped agent's keys are known wherever a config is read. The
// agents of package agents itself (mlp, cnn, random) register with it.
//
// To ship a new agent: its own package under agents/, and one line here.
package builtin

import (
	_ "github.com/agenttrainer/agenttrainer/agents"         // mlp, cnn, random
	_ "github.com/agenttrainer/agenttrainer/agents/lmagent" // lm
)
