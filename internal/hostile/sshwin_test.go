package hostile

import (
	"io"
	"os"
	"sync/atomic"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// appClient is one SSH session with a pty, driven from Go so that the
// window sizes it claims are exact (OpenSSH's client takes them from its
// terminal).
type appClient struct {
	conn *gossh.Client
	sess *gossh.Session
	in   io.WriteCloser
	got  atomic.Int64 // bytes of output received
}

// dialApp logs in with the case's viewer key and opens the app in a pty of
// w×h; nil (and a failure recorded) when that does not work.
func (s *sshd) dialApp(w, h int) *appClient {
	key, err := os.ReadFile(s.c.path("viewer"))
	if err != nil {
		s.c.fail("viewer key: %v", err)
		return nil
	}
	signer, err := gossh.ParsePrivateKey(key)
	if err != nil {
		s.c.fail("viewer key: %v", err)
		return nil
	}
	conn, err := gossh.Dial("tcp", "127.0.0.1:"+s.port, &gossh.ClientConfig{
		User: "viewer", Auth: []gossh.AuthMethod{gossh.PublicKeys(signer)},
		HostKeyCallback: gossh.InsecureIgnoreHostKey(), Timeout: 20 * time.Second,
	})
	if err != nil {
		s.c.fail("login: %v", err)
		return nil
	}
	sess, err := conn.NewSession()
	if err != nil {
		conn.Close()
		s.c.fail("session: %v", err)
		return nil
	}
	a := &appClient{conn: conn, sess: sess}
	out, _ := sess.StdoutPipe()
	a.in, _ = sess.StdinPipe()
	if err := sess.RequestPty("xterm-256color", h, w, gossh.TerminalModes{}); err != nil {
		s.c.fail("pty %d×%d: %v", w, h, err)
		conn.Close()
		return nil
	}
	if err := sess.Shell(); err != nil {
		s.c.fail("shell: %v", err)
		conn.Close()
		return nil
	}
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := out.Read(buf)
			a.got.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	return a
}

// waitOutput waits until the app has sent at least n bytes more than it
// had, and says whether it did.
func (a *appClient) waitOutput(c *cx, n int64, d time.Duration) bool {
	want := a.got.Load() + n
	return c.waitFor(d, func() bool { return a.got.Load() >= want })
}

// drew waits until the app has sent anything at all.
func (a *appClient) drew(c *cx, d time.Duration) bool {
	return c.waitFor(d, func() bool { return a.got.Load() > 0 })
}

func (a *appClient) close() {
	a.in.Write([]byte("q"))
	a.sess.Close()
	a.conn.Close()
}

// sshWindowCases are the F27/F28 class: window sizes a client claims
// (at login and as window changes) and the authorized_keys file replaced
// while the server runs.
func sshWindowCases() []hcase {
	type wc struct {
		name, expect string
		do           func(c *cx, s *sshd)
	}
	// bigWindow logs in at w×h (then changes to each of changes), checks
	// that the app draws, that it sent a bounded amount, and that a second
	// session opened beside it still works.
	bigWindow := func(w, h int, changes ...[2]int) func(c *cx, s *sshd) {
		return func(c *cx, s *sshd) {
			a := s.dialApp(w, h)
			if a == nil {
				return
			}
			defer a.close()
			c.check(a.drew(c, 30*time.Second), "the app sent nothing")
			for _, ch := range changes {
				a.sess.WindowChange(ch[1], ch[0])
				a.waitOutput(c, 1, 5*time.Second)
			}
			time.Sleep(2 * time.Second) // let it draw what it would draw
			other := s.dialApp(80, 24)
			if other != nil {
				c.check(other.drew(c, 30*time.Second), "a second session got no app")
				other.close()
			}
			// Each size the client asks for is one frame of at most
			// MaxWindowWidth×MaxWindowHeight cells (about 0.5 MB).
			sent := a.got.Load()
			c.check(sent < int64(1+len(changes))<<20, "the app sent %d KiB for %d window sizes", sent>>10, 1+len(changes))
			c.note("%d×%d and %d changes: the app sent %d KiB; a second session worked", w, h, len(changes), sent>>10)
		}
	}
	ws := []wc{
		{"login pty 65535×65535", "the app draws a bounded frame, serve's peak RSS stays bounded, a second session works", bigWindow(65535, 65535)},
		{"login pty 10000×10000", "a bounded frame and memory; a second session works", bigWindow(10000, 10000)},
		{"login pty 65535×1", "a bounded frame and memory", bigWindow(65535, 1)},
		{"login pty 1×65535", "a bounded frame and memory", bigWindow(1, 65535)},
		{"login pty 0×0", "the app draws at 80×24", bigWindow(0, 0)},
		{"window change to 65535×65535", "a bounded frame and memory; a second session works", bigWindow(80, 24, [2]int{65535, 65535})},
		{"window change 4294967295×4294967295", "a bounded frame and memory", bigWindow(80, 24, [2]int{-1, -1})},
		{"50 window changes between huge sizes", "a bounded frame and memory; a second session works", bigWindow(80, 24, func() [][2]int {
			var out [][2]int
			for i := 0; i < 50; i++ {
				out = append(out, [2]int{65535 - i, 30000 + i})
			}
			return out
		}()...)},
		{"three sessions at 65535×65535", "bounded memory for all three", func(c *cx, s *sshd) {
			var cl []*appClient
			for i := 0; i < 3; i++ {
				if a := s.dialApp(65535, 65535); a != nil {
					cl = append(cl, a)
				}
			}
			for _, a := range cl {
				c.check(a.drew(c, 30*time.Second), "a session got no app")
			}
			time.Sleep(2 * time.Second)
			for _, a := range cl {
				a.close()
			}
			c.note("%d sessions at 65535×65535", len(cl))
		}},
	}
	keys := []struct {
		name string
		swap func(c *cx) // replaces authorized_keys
	}{
		{"a FIFO", func(c *cx) { os.Remove(c.path("authorized_keys")); mkfifo(c.path("authorized_keys")) }},
		{"a FIFO a writer holds open", func(c *cx) {
			os.Remove(c.path("authorized_keys"))
			mkfifo(c.path("authorized_keys"))
			go func() { // holds it open, writing nothing, until the case ends
				if f, err := os.OpenFile(c.path("authorized_keys"), os.O_WRONLY, 0); err == nil {
					time.Sleep(40 * time.Second)
					f.Close()
				}
			}()
		}},
		{"a link to /dev/zero", func(c *cx) { os.Remove(c.path("authorized_keys")); os.Symlink("/dev/zero", c.path("authorized_keys")) }},
		{"a directory", func(c *cx) { os.Remove(c.path("authorized_keys")); os.Mkdir(c.path("authorized_keys"), 0o700) }},
		{"a 4 GiB sparse file", func(c *cx) {
			if f, err := os.OpenFile(c.path("authorized_keys"), os.O_WRONLY, 0); err == nil {
				f.Truncate(4 << 30)
				f.Close()
			}
		}},
	}
	for _, k := range keys {
		k := k
		ws = append(ws, wc{"authorized_keys replaced by " + k.name, "each login refused within seconds (exit 255), the server goes on and lets the key in again once the file is back", func(c *cx, s *sshd) {
			pub, _ := readFile(c.path("viewer.pub"))
			k.swap(c)
			for i := 0; i < 3; i++ {
				t0 := time.Now()
				code, out := s.ssh("viewer")
				c.check(code == 255 && time.Since(t0) < 20*time.Second, "login %d with the file replaced: exit %d after %.0fs: %s", i, code, time.Since(t0).Seconds(), lastLines(out, 1))
			}
			os.RemoveAll(c.path("authorized_keys"))
			os.WriteFile(c.path("authorized_keys"), pub, 0o600)
			a := s.dialApp(80, 24)
			if a != nil {
				c.check(a.drew(c, 30*time.Second), "no app once the file was back")
				a.close()
			}
			c.note("3 logins refused while replaced; the key let in again once restored")
		}})
	}
	var cs []hcase
	for _, x := range ws {
		cs = append(cs, serveCase("ssh-window/"+x.name, x.expect, x.do))
	}
	return cs
}
