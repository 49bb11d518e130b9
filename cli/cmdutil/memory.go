package cmdutil

import "github.com/agenttrainer/agenttrainer/internal/memlimit"

// MemoryLimit is how much memory a command may plan to use before a large
// allocation, as the trainer plans (internal/memlimit).
func MemoryLimit() int64 { return memlimit.Available() }
