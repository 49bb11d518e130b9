// Package envserver is `agenttrainer env-server`: environment servers for the trainer's workers on this host, over authenticated TCP.
package envserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/envs/remote"
)

// Options are env-server's flags and the command it runs per connection.
type Options struct {
	Listen       string
	SecretFile   string
	AllowRemote  bool
	Once         bool
	IdleExit     time.Duration
	Announce     string
	AnnounceHost string
	Rank         int
	MaxConns     int
	Dir          string
	Command      []string
}

const args = "--listen HOST:PORT [--secret-file FILE] [--announce DIR] [options] -- COMMAND [ARG ...]"

const summary = "serve environment workers on this host: every connection that proves the shared secret gets its own " +
	"COMMAND process (a stdio environment server such as python3 remote/gym_server.py --env CartPole-v1) and the trainer steps it over TCP; " +
	"trainers connect with env.args.address (or env.args.rendezvous) and env.args.secret_file"

// Parse reads env-server's command line: flags, then -- and the command.
func Parse(argv []string) (Options, error) {
	o := Options{Rank: -1}
	fs := cmdutil.NewFlags("env-server", args, summary)
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:0", "`HOST:PORT` to listen on; port 0 picks a free one (the log and --announce say which)")
	fs.StringVar(&o.SecretFile, "secret-file", "", "`file` holding the shared secret clients must prove (env.args.secret_file); mode 600, at least 16 bytes")
	fs.BoolVar(&o.AllowRemote, "allow-remote", false, "listen on a non-loopback address without a secret (a network you trust)")
	fs.BoolVar(&o.Once, "once", false, "exit after the first connection ends")
	fs.DurationVar(&o.IdleExit, "idle-exit", 0, "exit once no connection has been open for this `long` (0: never)")
	fs.StringVar(&o.Announce, "announce", "", "write `DIR`/<rank>.addr holding HOST:PORT once listening (env.args.rendezvous finds it there)")
	fs.StringVar(&o.AnnounceHost, "announce-host", "", "`host` name to announce (default: the --listen host, else SLURMD_NODENAME, else the host name)")
	fs.IntVar(&o.Rank, "rank", -1, "rank to announce as (default: SLURM_PROCID, else SLURM_ARRAY_TASK_ID)")
	fs.IntVar(&o.MaxConns, "max-conns", 256, "connections served at once")
	fs.StringVar(&o.Dir, "dir", "", "working `directory` of COMMAND")
	flags, command := argv, []string(nil)
	if i := slices.Index(argv, "--"); i >= 0 {
		flags, command = argv[:i], argv[i+1:]
	}
	rest, err := fs.ParseArgs(flags)
	if err != nil {
		return o, err
	}
	if len(rest) > 0 {
		return o, &cmdutil.UsageError{Err: fmt.Errorf("env-server: put the environment server's command after --, e.g. agenttrainer env-server --listen 127.0.0.1:5555 -- %s", rest[0]), Usage: fs.Usage()}
	}
	if len(command) == 0 || command[0] == "" {
		return o, &cmdutil.UsageError{Err: errors.New("env-server needs the environment server to run per connection after --, e.g. -- python3 remote/gym_server.py --env CartPole-v1"), Usage: fs.Usage()}
	}
	if o.MaxConns < 1 || o.IdleExit < 0 {
		return o, cmdutil.Usagef("env-server: --max-conns must be at least 1 and --idle-exit at least 0")
	}
	o.Command = command
	return o, nil
}

// Run serves until interrupted (or, with --once or --idle-exit, done).
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	so := remote.ServerOptions{Listen: o.Listen, AllowRemote: o.AllowRemote, Command: o.Command, Dir: o.Dir, Once: o.Once,
		IdleExit: o.IdleExit, Announce: o.Announce, AnnounceHost: o.AnnounceHost, Rank: o.Rank, MaxConns: o.MaxConns, Log: stderr}
	if o.SecretFile != "" {
		s, err := remote.ReadSecret(o.SecretFile)
		if err != nil {
			return cmdutil.Configf("env-server: --secret-file: %v", err)
		}
		so.Secret = s
	}
	if err := remote.Serve(ctx, so); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return cmdutil.ErrInterrupted
	}
	return nil
}
