package hostile

import (
	"net"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"
)

func noSSH() string {
	for _, p := range []string{"ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(p); err != nil {
			return p + " is not installed"
		}
	}
	return ""
}

type sshd struct {
	c    *cx
	p    *proc
	port string
}

func startServe(c *cx) *sshd {
	for _, k := range []string{"viewer", "stranger"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", c.path(k)).CombinedOutput(); err != nil {
			c.fail("ssh-keygen: %v %s", err, out)
			return nil
		}
	}
	pub, _ := readFile(c.path("viewer.pub"))
	c.write("authorized_keys", pub)
	p := c.start(opt{}, "serve", "--ssh", "127.0.0.1:0", "--authorized-keys", c.path("authorized_keys"), "--host-key", c.path("host/key"), "--runs-dir", c.path("runs"))
	re := regexp.MustCompile(`over SSH on 127\.0\.0\.1:(\d+)`)
	s := &sshd{c: c, p: p}
	c.waitFor(30*time.Second, func() bool {
		if m := re.FindStringSubmatch(p.stdout.String()); m != nil {
			s.port = m[1]
			return true
		}
		return p.exited()
	})
	if s.port == "" {
		c.fail("serve did not start: %s", lastLines(p.out.String(), 3))
		p.signal(syscall.SIGKILL)
		return nil
	}
	return s
}

// ssh runs the OpenSSH client with key, non-interactively.
func (s *sshd) ssh(key string, extra ...string) (int, string) {
	args := append([]string{"-F", "/dev/null", "-p", s.port, "-i", s.c.path(key), "-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none",
		"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "ConnectTimeout=20"}, extra...)
	args = append(args, "viewer@127.0.0.1", "true")
	p := s.c.startCmd(opt{limit: 40 * time.Second}, "ssh", args...)
	r := p.wait()
	return r.code, r.out
}

// refusesStranger checks the server still answers: the unknown key is refused.
func (s *sshd) refusesStranger() {
	code, out := s.ssh("stranger")
	s.c.check(code == 255 && strings.Contains(out, "Permission denied"), "unknown key: exit %d: %s", code, lastLines(out, 2))
	s.c.note("unknown key: exit %d: %s", code, lastLines(out, 1))
}

func (s *sshd) stop() {
	s.p.signal(syscall.SIGTERM)
	done := s.c.waitFor(20*time.Second, s.p.exited)
	s.c.check(done, "serve did not stop on SIGTERM")
	if !done {
		s.p.signal(syscall.SIGKILL)
	}
	r := s.p.wait()
	s.c.check(r.code == 0 || r.code == 130, "serve exit %d: %s", r.code, lastLines(r.out, 2))
}

func sshCases() []hcase {
	type sc struct {
		name, expect string
		do           func(c *cx, s *sshd)
	}
	dialN := func(n int, payload []byte) func(c *cx, s *sshd) {
		return func(c *cx, s *sshd) {
			var conns []net.Conn
			for i := 0; i < n; i++ {
				conn, err := net.DialTimeout("tcp", "127.0.0.1:"+s.port, 5*time.Second)
				if err != nil {
					c.note("dial %d: %v", i, err)
					break
				}
				if payload != nil {
					conn.Write(payload)
				}
				conns = append(conns, conn)
			}
			s.refusesStranger()
			for _, conn := range conns {
				conn.Close()
			}
			c.note("%d connections", len(conns))
		}
	}
	ss := []sc{
		{"unknown key refused", "ssh exits 255 with Permission denied", func(c *cx, s *sshd) { s.refusesStranger() }},
		{"password auth refused", "ssh exits 255 with Permission denied", func(c *cx, s *sshd) {
			code, out := s.ssh("stranger", "-o", "PreferredAuthentications=password,keyboard-interactive")
			c.check(code == 255, "exit %d: %s", code, lastLines(out, 1))
			c.note("password login: exit %d: %s", code, lastLines(out, 1))
		}},
		{"garbage on the port", "the connection is dropped; the server still refuses an unknown key", dialN(1, []byte("GET / HTTP/1.1\r\n\r\n\x00\xff\xfe garbage"))},
		{"SSH banner then garbage", "the connection is dropped; the server goes on", dialN(1, append([]byte("SSH-2.0-evil\r\n"), make([]byte, 65536)...))},
		{"1 MiB of random bytes", "the connection is dropped; the server goes on", dialN(1, func() []byte {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = byte(i*7 + i>>8)
			}
			return b
		}())},
		{"100 idle connections", "the server goes on and refuses an unknown key; memory bounded", dialN(100, nil)},
		{"50 banner-only connections", "the server goes on; memory bounded", dialN(50, []byte("SSH-2.0-x\r\n"))},
		{"20 unknown-key logins", "each refused; the server goes on", func(c *cx, s *sshd) {
			refused := 0
			for i := 0; i < 20; i++ {
				if code, _ := s.ssh("stranger"); code != 255 {
					c.fail("login %d: exit %d", i, code)
				} else {
					refused++
				}
			}
			c.note("%d of 20 logins refused (exit 255)", refused)
		}},
	}
	var cs []hcase
	for _, x := range ss {
		cs = append(cs, serveCase("ssh/"+x.name, x.expect, x.do))
	}
	return cs
}

// serveCase is a case against a running `serve --ssh`: started before do,
// stopped (SIGTERM) after it, its memory bounded.
func serveCase(name, expect string, do func(c *cx, s *sshd)) hcase {
	return hcase{
		name:   name,
		expect: expect + "; serve stops on SIGTERM",
		skip:   noSSH,
		bound:  120 * time.Second,
		rssKiB: 512 << 10,
		run: func(c *cx) {
			s := startServe(c)
			if s == nil {
				return
			}
			do(c, s)
			s.stop()
		},
	}
}
