// Package serve is `agenttrainer serve`: the terminal app over SSH, set up from the command line.
package serve

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/host/spawn"
	"github.com/agenttrainer/agenttrainer/host/sshserve"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// Options are serve's flags and overrides.
type Options struct {
	Addr       string // HOST:PORT
	AuthKeys   string
	HostKey    string
	RunsDir    string // applied as trainer.runs_dir when SetRunsDir
	SetRunsDir bool   // --runs-dir was given
	Idle       time.Duration
	MaxTimeout time.Duration
	ConfigFile string
	Overrides  []string
}

// Parse reads serve's command line.
func Parse(args []string) (Options, error) {
	var o Options
	home, _ := os.UserHomeDir()
	confDir, _ := os.UserConfigDir()
	defKeys, defHost := "", ""
	if home != "" {
		defKeys = filepath.Join(home, ".ssh", "authorized_keys")
	}
	if confDir != "" {
		defHost = filepath.Join(confDir, "agenttrainer", "ssh_host_ed25519")
	}
	fs := cmdutil.NewFlags("serve", "--ssh ADDR [--authorized-keys FILE] [--host-key FILE] [--runs-dir DIR] [--idle-timeout D] [--max-timeout D] [--config FILE] [key=value ...]",
		"serve the terminal app over SSH to the public keys in an authorized_keys file")
	fs.StringVar(&o.Addr, "ssh", "127.0.0.1:2222", "`address` to listen on, HOST:PORT; only a loopback address unless you name another")
	fs.StringVar(&o.AuthKeys, "authorized-keys", defKeys, "`file` of the public keys let in, in OpenSSH's authorized_keys format, read again at every login;\n"+
		"keys with options (from=, command=, …) are skipped. Whoever holds one of them gets the app with this user's rights")
	fs.StringVar(&o.HostKey, "host-key", defHost, "`file` of the server's private key; an ed25519 key is made there (mode 0600) on first start and kept")
	fs.StringVar(&o.RunsDir, "runs-dir", config.Default().Trainer.RunsDir, "`directory` of runs that every session sees (trainer.runs_dir)")
	fs.DurationVar(&o.Idle, "idle-timeout", 30*time.Minute, "close a session after this long without a key press (0: never); its trainings go on")
	fs.DurationVar(&o.MaxTimeout, "max-timeout", 0, "close a connection this long after it opened, whatever it does (0: never)")
	fs.StringVar(&o.ConfigFile, "config", "", "TOML `file` applied over the defaults, for the runs the sessions start")
	var err error
	if o.Overrides, err = fs.ParseArgs(args); err != nil {
		return o, err
	}
	fs.Visit(func(f *flag.Flag) { o.SetRunsDir = o.SetRunsDir || f.Name == "runs-dir" })
	if _, _, err := net.SplitHostPort(o.Addr); err != nil {
		return o, cmdutil.Configf("--ssh %q: want HOST:PORT, e.g. 127.0.0.1:2222 (%v)", o.Addr, err)
	}
	if o.Idle < 0 || o.MaxTimeout < 0 {
		return o, cmdutil.Configf("--idle-timeout and --max-timeout must not be negative")
	}
	if o.AuthKeys == "" {
		return o, cmdutil.Configf("no home directory to find ~/.ssh/authorized_keys in; pass --authorized-keys FILE")
	}
	if o.HostKey == "" {
		return o, cmdutil.Configf("no config directory to keep the host key in; pass --host-key FILE")
	}
	return o, nil
}

// Run serves until ctx ends, then closes the sessions (their trainings go
// on) and returns nil.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	overrides := o.Overrides
	if o.SetRunsDir {
		overrides = append(overrides, "trainer.runs_dir="+o.RunsDir)
	}
	cfg, err := config.Resolve(o.ConfigFile, overrides)
	if err != nil {
		return err
	}
	keys, warnings, err := sshserve.ReadAuthorizedKeys(o.AuthKeys)
	for _, w := range warnings {
		fmt.Fprintf(stderr, "%s: warning: %s\n", cmdutil.Prog, w)
	}
	if err != nil {
		return &cmdutil.ConfigError{Err: err}
	}
	created, hostFP, err := sshserve.EnsureHostKey(o.HostKey)
	if err != nil {
		return cmdutil.Configf("host key: %v", err)
	}
	sc := sshserve.Config{
		AuthKeys: o.AuthKeys, HostKey: o.HostKey, Idle: o.Idle, MaxTimeout: o.MaxTimeout, Config: cfg,
		Host: spawn.Host{ConfigFile: o.ConfigFile, Overrides: overrides},
	}
	s, err := sshserve.New(sc, log.New(stderr, "", log.LstdFlags))
	if err != nil {
		return &cmdutil.ConfigError{Err: err}
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %v", o.Addr, err)
	}
	where := ln.Addr().(*net.TCPAddr)
	if sshserve.OffLoopback(where) {
		fmt.Fprintf(stderr, "%s: warning: listening on %s, which other machines can reach: whoever holds one of the %d key(s) in %s gets the app with this user's rights\n",
			cmdutil.Prog, where, len(keys), o.AuthKeys)
	}
	if created {
		fmt.Fprintf(stdout, "made a new host key %s\n", o.HostKey)
	}
	fmt.Fprintf(stdout, "serving the terminal app over SSH on %s\n  host key %s %s\n  %d key(s) let in from %s\n  runs in %s\n  connect: ssh -p %d %s\n",
		where, hostFP, o.HostKey, len(keys), o.AuthKeys, cfg.Trainer.RunsDir, where.Port, sshserve.ConnectHost(where))
	if err := s.Serve(ctx, ln); err != nil {
		return cmdutil.SilentError // the server logged why it stopped
	}
	return nil
}
