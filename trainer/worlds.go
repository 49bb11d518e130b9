package trainer

// The worlds register themselves in the envs registry when their packages
// load; the trainer imports them all so that a config naming "CartPole-v1",
// "FrozenLake-v1" or "remote" works for every user of the trainer (the
// command line, the app and library callers of NewAgentTrainer).
import _ "github.com/agenttrainer/agenttrainer/envs/builtin"
