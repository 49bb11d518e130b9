package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/charmbracelet/x/term"
)

// runApp opens the terminal app, or explains how to train headless when
// there is no terminal to draw on.
func runApp(ctx context.Context, stdout, stderr io.Writer) int {
	if !term.IsTerminal(os.Stdin.Fd()) || !term.IsTerminal(os.Stdout.Fd()) {
		fmt.Fprintln(stderr, `agenttrainer: the terminal app needs an interactive terminal (stdin and stdout are not one).
To train without it:
  agenttrainer train env.id=CartPole-v1          # headless, prints progress
  agenttrainer list                              # agents and environments
  agenttrainer --help                            # everything else`)
		return exitConfig
	}
	fmt.Fprintln(stderr, "agenttrainer: the terminal app is not built yet; use `agenttrainer train`")
	return exitFail
}
