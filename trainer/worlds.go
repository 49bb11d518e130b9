package trainer

// The worlds register themselves in the envs registry when their packages
// load; the trainer imports them so that a config naming "CartPole-v1",
// "FrozenLake-v1" or "remote" works for every user of the trainer (the
// command line, the TUI and library callers of NewAgentTrainer) without
// importing them itself.
import (
	_ "github.com/agenttrainer/agenttrainer/envs/classic"
	_ "github.com/agenttrainer/agenttrainer/envs/frozenlake"
	_ "github.com/agenttrainer/agenttrainer/envs/remote"
)
