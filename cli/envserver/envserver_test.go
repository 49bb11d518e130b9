package envserver

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		args    []string
		command []string
		err     string // "" = parses
	}{
		{[]string{"--listen", "127.0.0.1:5555", "--", "python3", "remote/gym_server.py", "--env", "CartPole-v1"},
			[]string{"python3", "remote/gym_server.py", "--env", "CartPole-v1"}, ""},
		{[]string{"--secret-file", "s", "--announce", "d", "--rank", "3", "--idle-exit", "2m", "--", "./server"}, []string{"./server"}, ""},
		{[]string{"--listen", "127.0.0.1:5555"}, nil, "needs the environment server to run per connection after --"},
		{[]string{"--listen", "127.0.0.1:5555", "python3", "x.py"}, nil, "put the environment server's command after --"},
		{[]string{"--max-conns", "0", "--", "x"}, nil, "--max-conns must be at least 1"},
		{[]string{"--bogus", "--", "x"}, nil, "flag provided but not defined"},
		{[]string{"--", ""}, nil, "needs the environment server"},
	} {
		o, err := Parse(c.args)
		if c.err == "" {
			if err != nil || !slices.Equal(o.Command, c.command) {
				t.Errorf("%q: %+v, %v", c.args, o, err)
			}
			continue
		}
		var ue *cmdutil.UsageError
		if err == nil || !strings.Contains(err.Error(), c.err) || !errors.As(err, &ue) {
			t.Errorf("%q: %v, want a usage error containing %q", c.args, err, c.err)
		}
	}
	if _, err := Parse([]string{"--help"}); !errors.As(err, new(*cmdutil.HelpError)) {
		t.Errorf("--help: %v", err)
	}
}
