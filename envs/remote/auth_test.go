package remote

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/envs"
)

// logBuf collects a server's log lines.
type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor polls the log until it contains want (the server writes it as
// it refuses; the client may see the refusal first).
func (l *logBuf) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(l.String(), want) {
		if time.Now().After(deadline) {
			t.Errorf("the server's log does not say %q:\n%s", want, l.String())
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func writeSecret(t *testing.T, secret string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startSecretPython starts a Python server on a free loopback port with
// args, returning its address and its log.
func startSecretPython(t testing.TB, script string, args ...string) (string, *logBuf) {
	t.Helper()
	cmd := exec.Command("python3", append([]string{script, "--listen", "127.0.0.1:0"}, args...)...)
	log := &logBuf{}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`listening on (\S+)`)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			log.Write([]byte(sc.Text() + "\n"))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		return a, log
	case <-time.After(time.Minute):
		t.Fatalf("the Python server did not say where it listens within a minute:\n%s", log)
		return "", nil
	}
}

// startEnvServer runs an env server in this process on a free loopback
// port with the given secret (nil: none) and command.
func startEnvServer(t *testing.T, secret []byte, command ...string) (string, *logBuf) {
	t.Helper()
	log := &logBuf{}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ServerOptions{Listen: "127.0.0.1:0", Secret: secret, Command: command, Log: log, Rank: -1,
			HandshakeTimeout: generousTimeout * time.Second, Ready: func(a string) { ready <- a }})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("env server: %v", err)
		}
	})
	select {
	case a := <-ready:
		return a, log
	case err := <-done:
		t.Fatalf("the env server stopped: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the env server did not listen within a minute")
	}
	return "", nil
}

const testSecret = "correct horse battery staple 2024"

// TestAuthentication checks the handshake with both servers that speak
// it, the Python adapter and agenttrainer env-server: the right secret
// trains, a wrong one and a missing one are refused with a message on both
// sides, and a secret for a server that has none is refused too.
func TestAuthentication(t *testing.T) {
	requirePython(t)
	good, wrong := writeSecret(t, testSecret), writeSecret(t, "a different secret of some length")
	cartpole := filepath.Join("..", "..", "remote", "cartpole_server.py")
	py, pyLog := startSecretPython(t, cartpole, "--secret-file", good)
	pyOpen, _ := startSecretPython(t, cartpole)
	es, esLog := startEnvServer(t, []byte(testSecret), "python3", cartpole)
	esOpen, _ := startEnvServer(t, nil, "python3", cartpole)
	args := func(addr, secretFile string) envs.Params {
		p := envs.Params{"address": addr, "timeout_s": generousTimeout, "handshake_timeout_s": generousTimeout}
		if secretFile != "" {
			p["secret_file"] = secretFile
		}
		return p
	}
	for _, c := range []struct {
		name, addr string
		log        *logBuf
	}{{"python", py, pyLog}, {"env-server", es, esLog}} {
		within(t, hangBound, c.name, func() {
			v, err := NewRemoteVector(4, args(c.addr, good))
			if err != nil {
				t.Fatalf("%s: the right secret: %v", c.name, err)
			}
			v.Reset(1)
			for range 50 {
				v.Step([]float32{0, 1, 0, 1})
			}
			if err := v.Err(); err != nil {
				t.Errorf("%s: stepping after authentication: %v", c.name, err)
			}
			v.Close()

			_, err = NewRemoteVector(4, args(c.addr, wrong))
			checkErr(t, err, "authentication failed: the server's proof does not match env.args.secret_file")
			c.log.waitFor(t, "hung up after the challenge")
			_, err = NewRemoteVector(4, args(c.addr, ""))
			checkErr(t, err, "requires authentication", "env.args.secret_file")
			c.log.waitFor(t, "requires authentication")
		})
	}
	within(t, hangBound, "servers without a secret", func() {
		for _, addr := range []string{pyOpen, esOpen} {
			_, err := NewRemoteVector(4, args(addr, good))
			checkErr(t, err, "has no secret")
		}
	})
}

// TestAuthenticationWrongClientProof plays a client that answers the
// challenge with a wrong proof (one that does not hold the secret but
// checks nothing of the server): the server refuses it and says so.
func TestAuthenticationWrongClientProof(t *testing.T) {
	requirePython(t)
	good := writeSecret(t, testSecret)
	cartpole := filepath.Join("..", "..", "remote", "cartpole_server.py")
	py, pyLog := startSecretPython(t, cartpole, "--secret-file", good)
	es, esLog := startEnvServer(t, []byte(testSecret), "python3", cartpole)
	for _, c := range []struct {
		addr string
		log  *logBuf
	}{{py, pyLog}, {es, esLog}} {
		within(t, hangBound, "a wrong client proof", func() {
			conn, err := net.Dial("tcp", c.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			rd := bufio.NewReader(conn)
			nonce, _ := newNonce()
			send := func(h map[string]any) frame {
				b, _ := appendFrame(nil, h, nil)
				conn.Write(b)
				f, _, err := readFrame(rd, nil, 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
			f := send(map[string]any{"type": "challenge", "id": 1, "protocol": 3, "nonce": nonce})
			if f.Header.Type != "challenge" || !proofMatches(f.Header.Proof, proof([]byte(testSecret), serverProofLabel, nonce, f.Header.Nonce)) {
				t.Fatalf("challenge reply %+v", f.Header)
			}
			// A proof over the right nonces with the wrong secret, and one
			// that replays the server's own proof.
			f = send(map[string]any{"type": "auth", "id": 2, "proof": f.Header.Proof})
			if f.Header.Type != "error" || !strings.Contains(f.Header.Message, "the client's proof does not match this server's secret") {
				t.Errorf("a replayed server proof: %+v", f.Header)
			}
			c.log.waitFor(t, "does not match this server's secret")
		})
	}
}

// TestAuthenticationOldServer: a server of protocol version 2 knows no
// challenge; the client says that it is older and what to do.
func TestAuthenticationOldServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		f, _, err := readFrame(c, nil, 1<<20)
		if err != nil {
			return
		}
		// What protocol.py of version 2 answers.
		b, _ := appendFrame(nil, map[string]any{"type": "error", "id": f.Header.ID, "message": "protocol error: 'challenge' before hello"}, nil)
		c.Write(b)
	}()
	_, err = NewRemoteVector(2, envs.Params{"address": ln.Addr().String(), "secret_file": writeSecret(t, testSecret), "handshake_timeout_s": generousTimeout})
	checkErr(t, err, "authentication", "'challenge' before hello", "older than this client", "remote/protocol.py")
}

func TestReadSecret(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		content string
		mode    os.FileMode
		want    string // "" = accepted
	}{
		{testSecret + "\n", 0o600, ""},
		{"short\n", 0o600, "fewer than 16"},
		{testSecret, 0o644, "may be read or written by other users"},
		{testSecret, 0o640, ""},
	} {
		p := filepath.Join(dir, "s")
		os.Remove(p)
		os.WriteFile(p, []byte(c.content), c.mode)
		os.Chmod(p, c.mode)
		s, err := ReadSecret(p)
		if c.want == "" {
			if err != nil || string(s) != strings.TrimSpace(c.content) {
				t.Errorf("%q %o: %q, %v", c.content, c.mode, s, err)
			}
			continue
		}
		checkErr(t, err, c.want)
	}
	_, err := ReadSecret(filepath.Join(dir, "missing"))
	checkErr(t, err, "cannot read the secret file")
}
