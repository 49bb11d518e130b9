// Command agenttrainer trains reinforcement-learning agents with PPO: a
// terminal app by default, headless with `agenttrainer train`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// version is reported by --version and recorded in checkpoints.
const version = trainer.Version

// Exit codes: a configuration mistake is 2 (nothing written), a failure
// while running is 1.
const (
	exitOK     = 0
	exitFail   = 1
	exitConfig = 2
)

type command struct {
	name, args, summary string
	run                 func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"train", "[--config FILE] [--run-dir DIR] [--resume DIR] [--quiet] [key=value ...]", "train headless, printing progress", runTrain},
		{"data", "frozenlake --n N --size S --seed SEED --out FILE", "write a FrozenLake task file", runData},
		{"attach", "[RUN_DIR]", "watch and steer a training running in the background", runAttach},
		{"ps", "", "list the trainings running in the background", runPs},
		{"serve", "--ssh ADDR [--authorized-keys FILE] [--host-key FILE]", "serve the terminal app over SSH", runServe},
		{"eval", "RUN_DIR [--episodes N] [--deterministic] [--render]", "play episodes with a run's latest checkpoint", runEval},
		{"export", "RUN_DIR --csv [--out FILE]", "export a run's metrics as CSV", runExport},
		{"bench", "[--runs N] [--quick]", "measure training speed on this machine (the CPU-speed table)", runBench},
		{"list", "", "list agents and environments", runList},
		{"config", "[--config FILE] [key=value ...]", "print the resolved config as TOML", runConfig},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return runApp(ctx, stdout, stderr)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return exitOK
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, "agenttrainer", version)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	if strings.HasPrefix(args[0], "-") || strings.Contains(args[0], "=") {
		return runAppArgs(ctx, args, stdout, stderr) // the app's own options
	}
	fmt.Fprintf(stderr, "agenttrainer: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitConfig
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "agenttrainer trains reinforcement-learning agents with PPO.")
	fmt.Fprintln(w, "\nUsage:\n  agenttrainer [--config FILE] [--runs-dir DIR] [key=value ...]   open the terminal app")
	for _, c := range commands() {
		fmt.Fprintf(w, "  agenttrainer %-15s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun `agenttrainer COMMAND --help` for a command's options.")
	fmt.Fprintln(w, "Overrides are key=value in dot notation with TOML values, e.g.")
	fmt.Fprintln(w, "  agenttrainer train env.id=CartPole-v1 ppo.learning_rate=3e-4 agent.hidden=[128,128]")
}

// parseArgs parses flags that may be interleaved with key=value overrides.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var overrides []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			overrides = append(overrides, args[0])
			args = args[1:]
		}
		if len(args) == 0 {
			return overrides, nil
		}
	}
}

func newFlagSet(name, argsHelp, summary string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: agenttrainer %s %s\n\n%s.\n", name, argsHelp, strings.ToUpper(summary[:1])+summary[1:])
		if hasFlags(fs) {
			fmt.Fprintln(stderr, "\nOptions:")
			fs.PrintDefaults()
		}
		if strings.Contains(argsHelp, "key=value") {
			fmt.Fprintln(stderr, "\nkey=value overrides use dot notation and TOML values; `agenttrainer config` shows every key.")
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// flagExit maps a flag parsing outcome to an exit code.
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitConfig
}

func runConfig(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("config", "[--config FILE] [key=value ...]", "print the resolved config as TOML", stderr)
	file := fs.String("config", "", "TOML `file` applied over the defaults")
	overrides, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	cfg, err := config.Resolve(*file, overrides)
	if err != nil {
		printConfigError(stderr, err)
		return exitConfig
	}
	fmt.Fprint(stdout, cfg.TOML())
	return exitOK
}

func printConfigError(w io.Writer, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintln(w, "agenttrainer: "+line)
	}
}
