// Command agenttrainer trains reinforcement-learning agents with PPO: a
// terminal app by default, headless with `agenttrainer train`.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "agenttrainer: under construction")
	os.Exit(1)
}
