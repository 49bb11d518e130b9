package sshserve_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	gossh "golang.org/x/crypto/ssh"

	"github.com/agenttrainer/agenttrainer/cli"
	"github.com/agenttrainer/agenttrainer/host/spawn"
	"github.com/agenttrainer/agenttrainer/host/sshserve"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/control"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// patience bounds each wait for the app to show something: long, since a
// wait ends as soon as the text appears and a loaded machine (CI's two
// cores with a training beside the server) can take many seconds to attach.
const patience = 90 * time.Second

// TestMain lets a test start this binary as agenttrainer (a training in
// the background, as `agenttrainer train --detach` does).
func TestMain(m *testing.M) {
	if os.Getenv("AGENTTRAINER_RUN_MAIN") == "1" {
		os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// cut shortens s to n runes.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// syncBuffer is a bytes.Buffer that several goroutines may use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool, show func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s; saw:\n%s", d, what, show())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// testKey makes an ed25519 key pair: the private key in OpenSSH's format
// (mode 0600, as ssh wants it) and the public key's authorized_keys line.
func testKey(t *testing.T, dir, name string) (path, authorized string, pub gossh.PublicKey) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := gossh.MarshalPrivateKey(priv, name)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pub = signer.PublicKey()
	return path, strings.TrimSpace(string(gossh.MarshalAuthorizedKey(pub))) + " " + name + "@test", pub
}

// server is an SSH server running in this process.
type server struct {
	t          *testing.T
	dir        string // keys, host key, known_hosts
	port       int
	good, bad  string // private keys: listed, not listed
	goodLine   string
	badLine    string
	authKeys   string
	hostKey    string
	runsDir    string
	stderr     *syncBuffer // the server's log
	stop       context.CancelFunc
	exit       chan error
	knownHosts string
}

// startServer serves on 127.0.0.1:0 with keys the test makes, as
// `agenttrainer serve` does; opts change the server's config.
func startServer(t *testing.T, opts ...func(*sshserve.Config)) *server {
	t.Helper()
	s := &server{t: t, dir: t.TempDir(), stderr: &syncBuffer{}, exit: make(chan error, 1)}
	s.good, s.goodLine, _ = testKey(t, s.dir, "good")
	s.bad, s.badLine, _ = testKey(t, s.dir, "bad")
	s.authKeys = filepath.Join(s.dir, "authorized_keys")
	if err := os.WriteFile(s.authKeys, []byte("# test keys\n"+s.goodLine+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.hostKey = filepath.Join(s.dir, "host", "ssh_host_ed25519")
	s.runsDir = filepath.Join(s.dir, "runs")
	if _, _, err := sshserve.EnsureHostKey(s.hostKey); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Resolve("", []string{"trainer.runs_dir=" + s.runsDir})
	if err != nil {
		t.Fatal(err)
	}
	sc := sshserve.Config{
		AuthKeys: s.authKeys, HostKey: s.hostKey, Idle: 30 * time.Minute, Config: cfg,
		Host: spawn.Host{Overrides: []string{"trainer.runs_dir=" + s.runsDir}},
	}
	for _, o := range opts {
		o(&sc)
	}
	srv, err := sshserve.New(sc, log.New(s.stderr, "", log.LstdFlags))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.port = ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go func() { s.exit <- srv.Serve(ctx, ln) }()
	// The client checks the server's key against the one EnsureHostKey made.
	pubLine, err := os.ReadFile(s.hostKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	s.knownHosts = filepath.Join(s.dir, "known_hosts")
	os.WriteFile(s.knownHosts, []byte(fmt.Sprintf("[127.0.0.1]:%d %s", s.port, pubLine)), 0o600)
	t.Cleanup(func() { s.shutdown() })
	return s
}

// shutdown stops the server as SIGTERM does and returns what Serve returned.
func (s *server) shutdown() error {
	s.stop()
	select {
	case err := <-s.exit:
		s.exit <- err
		return err
	case <-time.After(15 * time.Second):
		s.t.Errorf("serve did not stop within 15 s of its context ending:\n%s", s.stderr)
		return errors.New("did not stop")
	}
}

// needSSH skips the test without the OpenSSH client.
func needSSH(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no ssh client: install openssh-client (apt-get install openssh-client) to test serving over SSH")
	}
}

// ssh builds an OpenSSH client command for the server, bounded by ctx.
func (s *server) ssh(ctx context.Context, key string, args ...string) *exec.Cmd {
	base := []string{"-F", "/dev/null", "-p", strconv.Itoa(s.port),
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none",
		"-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=" + s.knownHosts,
		"-o", "ConnectTimeout=5", "-o", "ServerAliveInterval=5"}
	if key != "" {
		base = append(base, "-i", key)
	}
	// Options, then the destination, then the command after "--".
	var command []string
	for i, a := range args {
		if a == "--" {
			args, command = args[:i], args[i+1:]
			break
		}
	}
	all := append(append(append(base, args...), "tester@127.0.0.1"), command...)
	cmd := exec.CommandContext(ctx, "ssh", all...)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "SSH_AUTH_SOCK=")
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// exitCode runs cmd and returns its exit code and output.
func exitCode(t *testing.T, cmd *exec.Cmd) (int, string) {
	t.Helper()
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	}
	t.Fatalf("%v: %v\n%s", cmd.Args, err, out.String())
	return 0, ""
}

func TestServeRefusesUnknownKeysAndPasswords(t *testing.T) {
	needSSH(t)
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("wrong key", func(t *testing.T) {
		code, out := exitCode(t, s.ssh(ctx, s.bad, "-T"))
		if code != 255 || !strings.Contains(out, "Permission denied (publickey)") {
			t.Errorf("exit %d:\n%s", code, out)
		}
		if !strings.Contains(s.stderr.String(), "refused tester@127.0.0.1") {
			t.Errorf("the refusal is not logged:\n%s", s.stderr)
		}
	})
	t.Run("no key: password and keyboard-interactive are not offered", func(t *testing.T) {
		cmd := s.ssh(ctx, "", "-v", "-T", "-o", "PubkeyAuthentication=no",
			"-o", "PreferredAuthentications=password,keyboard-interactive", "-o", "NumberOfPasswordPrompts=1")
		code, out := exitCode(t, cmd)
		if code != 255 || !strings.Contains(out, "Authentications that can continue: publickey\r\n") && !strings.Contains(out, "Authentications that can continue: publickey\n") {
			t.Errorf("exit %d:\n%s", code, out)
		}
		if !strings.Contains(out, "Permission denied (publickey)") {
			t.Errorf("not refused:\n%s", out)
		}
	})
	t.Run("Go client with password and keyboard-interactive", func(t *testing.T) {
		asked := false
		cfg := &gossh.ClientConfig{
			User: "tester",
			Auth: []gossh.AuthMethod{
				gossh.Password("hunter2"),
				gossh.KeyboardInteractive(func(string, string, []string, []bool) ([]string, error) {
					asked = true
					return []string{"hunter2"}, nil
				}),
			},
			HostKeyCallback: gossh.InsecureIgnoreHostKey(),
			Timeout:         5 * time.Second,
		}
		c, err := gossh.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.port), cfg)
		if err == nil {
			c.Close()
			t.Fatal("logged in with a password")
		}
		if asked || !strings.Contains(err.Error(), "unable to authenticate") {
			t.Errorf("asked %v, err %v", asked, err)
		}
	})
	t.Run("the authorized_keys file is read at every login", func(t *testing.T) {
		if err := os.WriteFile(s.authKeys, []byte(s.goodLine+"\n"+s.badLine+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out := exitCode(t, s.ssh(ctx, s.bad, "-T"))
		if code != 1 || !strings.Contains(out, "needs a terminal") {
			t.Errorf("a key added to the file is not let in: exit %d:\n%s", code, out)
		}
		if err := os.WriteFile(s.authKeys, []byte(s.badLine+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, out := exitCode(t, s.ssh(ctx, s.good, "-T")); code != 255 {
			t.Errorf("a key removed from the file is still let in: exit %d:\n%s", code, out)
		}
	})
}

func TestServeRefusesSessionsWithoutATerminal(t *testing.T) {
	needSSH(t)
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*patience)
	defer cancel()
	code, out := exitCode(t, s.ssh(ctx, s.good, "-T"))
	if code != 1 || !strings.Contains(out, "needs a terminal, and this session has none") || !strings.Contains(out, fmt.Sprintf("ssh -t -p %d 127.0.0.1", s.port)) {
		t.Errorf("no terminal: exit %d:\n%s", code, out)
	}
	code, out = exitCode(t, s.ssh(ctx, s.good, "-T", "--", "rm", "-rf", "/"))
	if code != 1 || !strings.Contains(out, "runs no commands") {
		t.Errorf("a command: exit %d:\n%s", code, out)
	}
	log := s.stderr.String()
	if !strings.Contains(log, "tester@127.0.0.1") || !strings.Contains(log, "(good@test), no terminal") || !strings.Contains(log, "SHA256:") {
		t.Errorf("the connection is not logged with its key:\n%s", log)
	}
}

// viewer is an OpenSSH client with a terminal (ssh -tt) whose screen
// output is captured and whose keys the test types.
type viewer struct {
	cmd  *exec.Cmd
	in   interface{ Write([]byte) (int, error) }
	out  *syncBuffer
	done chan error
}

func (s *server) view(ctx context.Context, t *testing.T) *viewer {
	t.Helper()
	return s.viewTerm(ctx, t, "xterm-256color")
}

// viewTerm is view with the client's TERM.
func (s *server) viewTerm(ctx context.Context, t *testing.T, term string) *viewer {
	t.Helper()
	v := &viewer{cmd: s.ssh(ctx, s.good, "-tt"), out: &syncBuffer{}, done: make(chan error, 1)}
	v.cmd.Env = append(v.cmd.Env, "TERM="+term)
	v.cmd.Stdout, v.cmd.Stderr = v.out, v.out
	in, err := v.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	v.in = in
	if err := v.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { v.done <- v.cmd.Wait() }()
	t.Cleanup(func() {
		in.Close()
		v.cmd.Process.Kill()
		<-v.done
		v.done <- nil
	})
	return v
}

// advancing reports whether the viewer's step counter has shown two
// values, the later larger (it reads 0 until the run's history is read back).
func (v *viewer) advancing() bool {
	var seen []float64
	for _, x := range v.steps() {
		if x > 0 {
			seen = append(seen, x)
		}
	}
	return len(seen) >= 2 && seen[len(seen)-1] > seen[0]
}

// text is what the viewer's screen received, without escape sequences.
func (v *viewer) text() string { return ansi.Strip(v.out.String()) }

func (v *viewer) waitText(t *testing.T, d time.Duration, s string) {
	t.Helper()
	waitFor(t, d, fmt.Sprintf("%q on the screen", s), func() bool { return strings.Contains(v.text(), s) }, v.text)
}

func (v *viewer) keys(t *testing.T, k string) {
	t.Helper()
	if _, err := v.in.Write([]byte(k)); err != nil {
		t.Fatal(err)
	}
}

var stepRe = regexp.MustCompile(`step\s+([0-9.]+)([kM]?) of`)

// steps are the values of the dashboard's step counter the viewer saw.
func (v *viewer) steps() []float64 {
	var out []float64
	for _, m := range stepRe.FindAllStringSubmatch(v.text(), -1) {
		f, _ := strconv.ParseFloat(m[1], 64)
		out = append(out, f*map[string]float64{"": 1, "k": 1e3, "M": 1e6}[m[2]])
	}
	return out
}

// detachedTraining starts a long CartPole training in a process of its own,
// as `agenttrainer train --detach` does, and stops it when the test ends.
func detachedTraining(t *testing.T, runsDir string) string {
	t.Helper()
	t.Setenv("AGENTTRAINER_RUN_MAIN", "1") // the child is this test binary, run as the program
	cfg := config.Default()
	cfg.PPO.TotalTimesteps = 200_000_000
	cfg.Trainer.RunsDir = runsDir
	cfg.Trainer.Device = "cpu"
	dir, err := runstore.Create(cfg, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pid, err := spawn.Start(dir, &cfg, false, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, err := control.Dial(dir); err == nil {
			c.Stop()
			c.Close()
		}
		deadline := time.Now().Add(20 * time.Second)
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			if _, err := control.ReadEndpoint(dir); err != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		syscall.Kill(pid, syscall.SIGKILL) // in case it did not stop
	})
	return dir
}

// TestServeTwoViewersOneRun: two SSH clients with terminals see the app,
// find the run training in the background in the runs browser, attach to
// it, and both watch its step counter advance; they leave it training.
func TestServeTwoViewersOneRun(t *testing.T) {
	needSSH(t)
	if testing.Short() {
		t.Skip("runs a training process")
	}
	s := startServer(t)
	run := detachedTraining(t, s.runsDir)
	ctx, cancel := context.WithTimeout(context.Background(), 3*patience)
	defer cancel()
	viewers := []*viewer{s.view(ctx, t), s.view(ctx, t)}
	for _, v := range viewers {
		v.waitText(t, patience, "Pick an environment")
		v.keys(t, "4")
		v.waitText(t, patience, "1 training now")
		v.keys(t, "a")
	}
	for i, v := range viewers {
		v.waitText(t, patience, filepath.Base(run)) // the dashboard's "run DIR" line, cut to the width
		v.waitText(t, patience, "CartPole-v1 · mlp")
		waitFor(t, patience, fmt.Sprintf("viewer %d's step counter to advance", i+1), v.advancing, v.text)
	}
	// Both leave the training going on: D detaches.
	for _, v := range viewers {
		v.keys(t, "D")
	}
	for i, v := range viewers {
		select {
		case err := <-v.done:
			v.done <- err
			if err != nil {
				t.Errorf("viewer %d: %v\n%s", i+1, err, v.text())
			}
		case <-time.After(patience):
			t.Fatalf("viewer %d did not end after D:\n%s", i+1, v.text())
		}
		if !strings.Contains(v.text(), "detached; the training goes on in "+run) {
			t.Errorf("viewer %d was not told the training goes on:\n%s", i+1, v.text())
		}
	}
	c, err := control.Dial(run)
	if err != nil {
		t.Fatalf("the training did not outlive its viewers: %v", err)
	}
	c.Close()
	if log := s.stderr.String(); strings.Count(log, "in with ssh-ed25519 key SHA256:") != 2 || !strings.Contains(log, "terminal xterm-256color") {
		t.Errorf("the two sessions are not logged:\n%s", log)
	}
}

// A session that logs in finds the trainings that run in the background
// (started by an earlier session, or a local terminal): the first screen
// says so and 3 shows one, training.
func TestServeSessionFindsBackgroundRuns(t *testing.T) {
	needSSH(t)
	if testing.Short() {
		t.Skip("runs a training process")
	}
	s := startServer(t)
	run := detachedTraining(t, s.runsDir)
	ctx, cancel := context.WithTimeout(context.Background(), 3*patience)
	defer cancel()
	v := s.view(ctx, t)
	v.waitText(t, patience, "1 run training in the background · 3 shows it")
	v.keys(t, "3")
	v.waitText(t, patience, filepath.Base(run))
	waitFor(t, patience, "the step counter to advance", v.advancing, v.text)
	v.keys(t, "D")
	select {
	case err := <-v.done:
		v.done <- err // for the cleanup
		if err != nil {
			t.Errorf("%v\n%s", err, v.text())
		}
	case <-time.After(patience):
		t.Fatalf("the session did not end after D:\n%s", v.text())
	}
}

// TestServeSessionColours: each session draws with its own terminal's
// colour profile: colours for an xterm, none for a dumb terminal.
func TestServeSessionColours(t *testing.T) {
	needSSH(t)
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	colour, dumb := s.viewTerm(ctx, t, "xterm-256color"), s.viewTerm(ctx, t, "dumb")
	colour.waitText(t, patience, "Pick an environment")
	dumb.waitText(t, patience, "Pick an environment")
	sgr := regexp.MustCompile(`\x1b\[[0-9;]*[34]8;[25];`) // a foreground or background colour
	if !sgr.MatchString(colour.out.String()) {
		t.Errorf("the xterm session got no colours:\n%q", cut(colour.out.String(), 2000))
	}
	if m := sgr.FindString(dumb.out.String()); m != "" {
		t.Errorf("the dumb terminal got colours (%q)", m)
	}
	if !strings.Contains(s.stderr.String(), "terminal dumb") {
		t.Errorf("the sessions' terminals are not logged:\n%s", s.stderr)
	}
}

// TestServeIdleTimeoutAndShutdown: a session without key presses is closed
// with a word; ending the server's context closes the others the same way
// and stops it.
func TestServeIdleTimeoutAndShutdown(t *testing.T) {
	needSSH(t)
	s := startServer(t, func(c *sshserve.Config) { c.Idle = 3 * time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	idle := s.view(ctx, t)
	idle.waitText(t, patience, "Pick an environment")
	select {
	case err := <-idle.done:
		idle.done <- err
	case <-time.After(patience):
		t.Fatalf("the idle session was not closed:\n%s", idle.text())
	}
	if !strings.Contains(idle.text(), "closed after 3s without a key press") {
		t.Errorf("the idle session was not told why:\n%s", idle.text())
	}

	busy := s.view(ctx, t)
	busy.waitText(t, patience, "Pick an environment")
	busy.keys(t, "j")
	start := time.Now()
	if err := s.shutdown(); err != nil {
		t.Errorf("serve returned %v", err)
	}
	if d := time.Since(start); d > sshserve.ShutdownGrace+2*time.Second {
		t.Errorf("shutting down took %s", d)
	}
	select {
	case err := <-busy.done:
		busy.done <- err
	case <-time.After(10 * time.Second):
		t.Fatalf("the session outlived the server:\n%s", busy.text())
	}
	if !strings.Contains(busy.text(), "the server is shutting down") {
		t.Errorf("the session was not told the server is going:\n%s", busy.text())
	}
}

// TestServeTimeouts: a connection that never logs in is dropped after the
// login grace; a session is cut at --max-timeout, whatever it does.
func TestServeTimeouts(t *testing.T) {
	needSSH(t)
	s := startServer(t, func(c *sshserve.Config) { c.LoginGrace, c.MaxTimeout = time.Second, 3*time.Second })
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.port), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	buf := make([]byte, 256)
	for { // the server's version line, then nothing until it hangs up
		if _, err := c.Read(buf); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("a connection that never logged in was kept for 10 s")
			}
			break
		}
	}
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Errorf("dropped after %s, before the login grace", d)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*patience)
	defer cancel()
	v := s.view(ctx, t)
	v.waitText(t, patience, "Pick an environment")
	go func() { // a busy session: keys all the time
		for ctx.Err() == nil {
			if _, err := v.in.Write([]byte("j")); err != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	select {
	case err := <-v.done:
		v.done <- err
	case <-time.After(15 * time.Second):
		t.Fatal("the session outlived --max-timeout 3s")
	}
}

func TestServeWarnsOffLoopback(t *testing.T) {
	for _, tt := range []struct {
		ip   string
		warn bool
	}{{"127.0.0.1", false}, {"::1", false}, {"0.0.0.0", true}, {"::", true}, {"192.168.1.5", true}} {
		if got := sshserve.OffLoopback(&net.TCPAddr{IP: net.ParseIP(tt.ip)}); got != tt.warn {
			t.Errorf("%s: warn %v, want %v", tt.ip, got, tt.warn)
		}
	}
}
