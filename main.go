// Command agenttrainer trains reinforcement-learning agents with PPO: a
// terminal app by default, headless with `agenttrainer train`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agenttrainer/agenttrainer/cli"
	"github.com/agenttrainer/agenttrainer/cli/app"
)

func main() {
	// SIGINT, SIGTERM and SIGHUP (a closed terminal, a dropped SSH login)
	// end the context: a training keeps a checkpoint and lets go of its
	// socket before it exits. The app, whose terminal a SIGHUP took away,
	// leaves its trainings running instead of stopping them.
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		for s := range sigs { // later ones change nothing: the first cause stays
			if s == syscall.SIGHUP {
				cancel(app.ErrHangup)
			} else {
				cancel(context.Canceled)
			}
		}
	}()
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	signal.Stop(sigs)
	os.Exit(code)
}
