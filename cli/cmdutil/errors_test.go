package cmdutil

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"testing"

	"github.com/agenttrainer/agenttrainer/trainer/config"
)

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		name           string
		err            error
		code           int
		stdout, stderr string
	}{
		{"nil", nil, 0, "", ""},
		{"help", &HelpError{Usage: "Usage: x\n"}, 0, "Usage: x\n", ""},
		{"wrapped help", fmt.Errorf("x: %w", &HelpError{Usage: "U\n"}), 0, "U\n", ""},
		{"flag error", &UsageError{Err: errors.New("flag provided but not defined: -x"), Usage: "Usage: x\n", FromFlags: true}, 2,
			"", "flag provided but not defined: -x\nUsage: x\n"},
		{"usage error", Usagef("eval takes one run directory"), 2, "", "agenttrainer: eval takes one run directory\n"},
		{"usage error with usage", &UsageError{Err: errors.New("unknown command \"x\"\n"), Usage: "U\n"}, 2, "", "agenttrainer: unknown command \"x\"\n\nU\n"},
		{"config error", &ConfigError{Err: errors.New("a: unknown key\nb: must be positive")}, 2, "", "agenttrainer: a: unknown key\nagenttrainer: b: must be positive\n"},
		{"wrapped config error", fmt.Errorf("x: %w", Configf("bad")), 2, "", "agenttrainer: bad\n"},
		{"a config package error, as it comes", &config.Error{Source: "c.toml", Key: "ppo.gamma", Msg: "must be between 0 and 1, got 2"}, 2, "",
			"agenttrainer: c.toml: ppo.gamma: must be between 0 and 1, got 2\n"},
		{"config package errors, joined and wrapped", fmt.Errorf("resume: %w", errors.Join(&config.Error{Key: "a", Msg: "bad"}, &config.Error{Key: "b", Msg: "worse"})), 2, "",
			"agenttrainer: resume: a: bad\nagenttrainer: b: worse\n"},
		{"a world failure wrapping no config error", fmt.Errorf("env.args: %w", errors.New("connection refused")), 1, "", "agenttrainer: env.args: connection refused\n"},
		{"interrupted", ErrInterrupted, 130, "", ""},
		{"cancelled", context.Canceled, 130, "", ""},
		{"interrupted with a word", fmt.Errorf("bench: %w", ErrInterrupted), 130, "", "agenttrainer: bench: interrupted\n"},
		{"silent", SilentError, 1, "", ""},
		{"failure", errors.New("disk full"), 1, "", "agenttrainer: disk full\n"},
	} {
		var out, errb bytes.Buffer
		if code := ExitCode(tc.err, &out, &errb); code != tc.code || out.String() != tc.stdout || errb.String() != tc.stderr {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.name, code, out.String(), errb.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}

func TestParseArgs(t *testing.T) {
	fs := NewFlags("train", "[--quiet] [key=value ...]", "train headless")
	quiet := fs.Bool("quiet", false, "print less")
	rest, err := fs.ParseArgs([]string{"a=1", "--quiet", "b=2", "-", "c=3"})
	if err != nil || !*quiet || fmt.Sprint(rest) != "[a=1 b=2 - c=3]" {
		t.Fatalf("rest %v, quiet %v, err %v", rest, *quiet, err)
	}
	var help *HelpError
	if _, err := fs.ParseArgs([]string{"a=1", "-h"}); !errors.As(err, &help) || !bytes.Contains([]byte(help.Usage), []byte("Usage: agenttrainer train [--quiet] [key=value ...]\n\nTrain headless.\n\nOptions:\n  -quiet")) {
		t.Errorf("-h: %v %q", err, help)
	}
	var usage *UsageError
	if _, err := fs.ParseArgs([]string{"--nope"}); !errors.As(err, &usage) || !usage.FromFlags || usage.Usage == "" {
		t.Errorf("--nope: %#v", err)
	}
	if _, err := fs.ParseArgs([]string{"--help"}); errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: the flag package's ErrHelp leaked: %v", err)
	}
}
