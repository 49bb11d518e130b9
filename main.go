// Command agenttrainer trains reinforcement-learning agents with PPO: a
// terminal app by default, headless with `agenttrainer train`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agenttrainer/agenttrainer/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
