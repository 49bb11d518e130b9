package cmdutil

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Flags is a command's flag set with the usage text its --help prints.
type Flags struct {
	*flag.FlagSet
	name, args, summary string
}

// NewFlags makes the flag set of `agenttrainer NAME ARGS`; summary is the
// command's one-line description. Parsing prints nothing: its errors carry
// the usage.
func NewFlags(name, args, summary string) *Flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &Flags{FlagSet: fs, name: name, args: args, summary: summary}
}

// Usage is the command's help text.
func (f *Flags) Usage() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Usage: %s %s %s\n\n%s.\n", Prog, f.name, f.args, strings.ToUpper(f.summary[:1])+f.summary[1:])
	n := 0
	f.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(&b, "\nOptions:")
		f.SetOutput(&b)
		f.PrintDefaults()
		f.SetOutput(io.Discard)
	}
	if strings.Contains(f.args, "key=value") {
		fmt.Fprintln(&b, "\nkey=value overrides use dot notation and TOML values; `agenttrainer config` shows every key.")
	}
	return b.String()
}

// ParseArgs parses flags that may be interleaved with other arguments
// (key=value overrides, a run directory) and returns those arguments.
// -h and --help give a *HelpError, a bad flag a *UsageError.
func (f *Flags) ParseArgs(args []string) ([]string, error) {
	var rest []string
	for {
		if err := f.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, &HelpError{Usage: f.Usage()}
			}
			return nil, &UsageError{Err: err, Usage: f.Usage(), FromFlags: true}
		}
		args = f.Args()
		for len(args) > 0 && (args[0] == "-" || !strings.HasPrefix(args[0], "-")) {
			rest = append(rest, args[0])
			args = args[1:]
		}
		if len(args) == 0 {
			return rest, nil
		}
	}
}
