// Package info is `agenttrainer list` and `agenttrainer config`: what the program offers and a resolved config, printed without training.
package info

import (
	"context"
	"fmt"
	"io"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/agents/lm/textagent"
	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/envs"
	_ "github.com/agenttrainer/agenttrainer/envs/builtin" // list them all
	"github.com/agenttrainer/agenttrainer/envs/text"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// ListOptions are list's options: none.
type ListOptions struct{}

// ParseList reads list's command line.
func ParseList(args []string) (ListOptions, error) {
	_, err := cmdutil.NewFlags("list", "", "list agents and environments").ParseArgs(args)
	return ListOptions{}, err
}

// RunList prints the agents and environments with one-line descriptions.
func RunList(_ context.Context, _ ListOptions, stdout, stderr io.Writer) error {
	fmt.Fprintln(stdout, "Agents (agent.name):")
	for _, name := range agents.Names() {
		s, _ := agents.Lookup(name)
		fmt.Fprintf(stdout, "  %-10s %s\n", name, s.Description)
	}
	fmt.Fprintln(stdout, "\nEnvironments (env.id):")
	for _, id := range envs.IDs() {
		s, _ := envs.Lookup(id)
		kind := "?"
		if e, err := s.New(nil); err == nil {
			kind = e.ActionSpace().Kind.String()
		}
		fmt.Fprintf(stdout, "  %-26s %-10s %s\n", id, kind, s.Description)
	}
	fmt.Fprintln(stdout, "\nText environments (env.id, for language-model agents; the text agent that plays each):")
	for _, id := range text.IDs() {
		s, _ := text.Lookup(id)
		fmt.Fprintf(stdout, "  %-26s %-11s %s\n", id, s.Agent, s.Description)
	}
	fmt.Fprintln(stdout, "\nText agents:")
	for _, name := range textagent.Names() {
		s, _ := textagent.Lookup(name)
		fmt.Fprintf(stdout, "  %-12s %s\n", name, s.Description)
	}
	fmt.Fprintln(stdout, "\nReward functions (a QA dataset's reward):")
	for _, name := range text.RewardNames() {
		fmt.Fprintf(stdout, "  %-16s %s\n", name, text.RewardDescription(name))
	}
	return nil
}

// ConfigOptions are config's flags and overrides.
type ConfigOptions struct {
	ConfigFile string
	Overrides  []string
}

// ParseConfig reads config's command line.
func ParseConfig(args []string) (ConfigOptions, error) {
	var o ConfigOptions
	fs := cmdutil.NewFlags("config", "[--config FILE] [key=value ...]", "print the resolved config as TOML")
	fs.StringVar(&o.ConfigFile, "config", "", "TOML `file` applied over the defaults")
	var err error
	o.Overrides, err = fs.ParseArgs(args)
	return o, err
}

// RunConfig prints the resolved config as TOML.
func RunConfig(_ context.Context, o ConfigOptions, stdout, stderr io.Writer) error {
	cfg, err := config.Resolve(o.ConfigFile, o.Overrides)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, cfg.TOML())
	return nil
}
