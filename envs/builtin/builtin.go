// Package builtin registers every environment that ships with agenttrainer
// (classic control, FrozenLake, MinAtar, remote, and the text worlds of
// envs/text in their own registry): import it for its side effect
// wherever a program must know them all — the trainer, `agenttrainer list`.
package builtin

import (
	_ "github.com/agenttrainer/agenttrainer/envs/classic"
	_ "github.com/agenttrainer/agenttrainer/envs/frozenlake"
	_ "github.com/agenttrainer/agenttrainer/envs/minatar"
	_ "github.com/agenttrainer/agenttrainer/envs/remote"
	_ "github.com/agenttrainer/agenttrainer/envs/text/arith"
	_ "github.com/agenttrainer/agenttrainer/envs/text/countdown"
	_ "github.com/agenttrainer/agenttrainer/envs/text/frozenlake"
	_ "github.com/agenttrainer/agenttrainer/envs/text/qa"
)
