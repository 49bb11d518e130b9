// Package cmdutil is what the commands share: typed errors for the exit codes, the one function that maps them, and flag parsing.
package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// Prog names the program in messages.
const Prog = "agenttrainer"

// Exit codes. README documents them for train: 0 done, 2 configuration
// error (nothing written), 1 failure, 130 interrupted (what was done is kept).
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitConfig      = 2
	ExitInterrupted = 130
)

// HelpError is a request for a command's help (-h, --help): its usage goes
// to standard output and the exit code is 0.
type HelpError struct{ Usage string }

func (e *HelpError) Error() string { return "help requested" }

// UsageError is a mistake in the command line: exit 2, the message on
// standard error, then the command's usage where there is one.
type UsageError struct {
	Err error
	// Usage is printed after the message; empty: the message says enough.
	Usage string
	// FromFlags: Err is the flag package's own wording, printed as it is
	// (as the flag package prints it); otherwise it is prefixed with Prog.
	FromFlags bool
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef is a UsageError with a message and no usage.
func Usagef(format string, a ...any) error {
	return &UsageError{Err: fmt.Errorf(format, a...)}
}

// ConfigError is a mistake in a command's input that the packages below do
// not report as a *config.Error themselves (a run directory that is not
// one, a file to write): exit 2, every line of the message on standard
// error, and nothing written. A *config.Error (trainer/config: a key, a
// value, a config file, a spec, a run's checkpoints) needs no wrapping:
// ExitCode recognises it.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Configf is a ConfigError with a message.
func Configf(format string, a ...any) error {
	return &ConfigError{Err: fmt.Errorf(format, a...)}
}

// ErrInterrupted is a command stopped by a signal: exit 130, what was done
// is kept. Wrapped (fmt.Errorf("bench: %w", ErrInterrupted)) its message is
// printed; bare it is not. context.Canceled counts as interrupted too.
var ErrInterrupted = errors.New("interrupted")

// SilentError is a failure the command has already reported: exit 1,
// nothing more printed.
var SilentError = errors.New("SilentError")

// ExitCode is the one place where a command's outcome becomes an exit code:
// it prints what the error calls for (help to stdout, everything else to
// stderr) and returns 0 (done, or help), 2 (a usage or configuration
// mistake, *config.Error included, wrapped or not), 130 (interrupted) or 1
// (any other failure: the world's — a remote environment, a disk, a
// process).
func ExitCode(err error, stdout, stderr io.Writer) int {
	var help *HelpError
	var usage *UsageError
	var cfg *ConfigError
	var key *config.Error
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &help):
		io.WriteString(stdout, help.Usage)
		return ExitOK
	case errors.As(err, &usage):
		if usage.FromFlags {
			fmt.Fprintln(stderr, usage.Err)
		} else {
			fmt.Fprintf(stderr, "%s: %v\n", Prog, usage.Err)
		}
		io.WriteString(stderr, usage.Usage)
		return ExitConfig
	case errors.As(err, &cfg):
		printLines(stderr, cfg.Err)
		return ExitConfig
	case errors.As(err, &key):
		printLines(stderr, err)
		return ExitConfig
	case errors.Is(err, ErrInterrupted) || errors.Is(err, context.Canceled):
		if err != ErrInterrupted && err != context.Canceled {
			fmt.Fprintf(stderr, "%s: %v\n", Prog, err)
		}
		return ExitInterrupted
	case errors.Is(err, SilentError):
		return ExitFailure
	}
	fmt.Fprintf(stderr, "%s: %v\n", Prog, err)
	return ExitFailure
}

// printLines writes every line of err's message after the program's name.
func printLines(w io.Writer, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(w, "%s: %s\n", Prog, line)
	}
}
