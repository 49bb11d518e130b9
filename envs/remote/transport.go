package remote

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// remoteTransport is the byte stream to a server.
type remoteTransport interface {
	io.ReadWriter
	// arm bounds the I/O from now on by d until the returned stop is called.
	arm(d time.Duration) (stop func())
	// timedOut reports whether the I/O failed because an armed bound ran out
	// by other means than a deadline error.
	timedOut() bool
	// diagnose describes the server's state after a failure: exit status
	// (waiting briefly for it when crashed) and the last lines of stderr.
	diagnose(crashed bool) string
	// finish ends a conversation that ended with bye, waiting up to d for a
	// server process to exit before killing it.
	finish(d time.Duration)
	// Close ends the connection at once, killing a server process.
	Close() error
	String() string
}

// procTransport talks to a server subprocess over its stdin and stdout.
type procTransport struct {
	cmd     *exec.Cmd
	desc    string
	in, out *os.File
	r       *bufio.Reader
	stderr  *tailWriter

	exited  chan struct{}
	waitErr error

	noDeadline bool
	expired    atomic.Bool
	killOnce   sync.Once
}

func startRemoteProcess(o RemoteOptions) (*procTransport, error) {
	desc := "`" + strings.Join(o.Command, " ") + "`"
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	p := &procTransport{desc: desc, in: inW, out: outR, stderr: &tailWriter{copyTo: o.Stderr}, exited: make(chan struct{})}
	cmd := exec.Command(o.Command[0], o.Command[1:]...)
	cmd.Dir = o.Dir
	if len(o.Env) > 0 {
		cmd.Env = os.Environ()
		for _, k := range sortedKeys(o.Env) {
			cmd.Env = append(cmd.Env, k+"="+o.Env[k])
		}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, p.stderr
	cmd.WaitDelay = time.Second // a grandchild holding stderr must not stall Wait
	p.cmd = cmd
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("remote environment %s: cannot start the server: %v (check env.args.command and env.args.dir)", desc, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	p.r = bufio.NewReaderSize(outR, 64<<10)
	return p, nil
}

func (p *procTransport) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p *procTransport) Buffered() int               { return p.r.Buffered() }
func (p *procTransport) Peek(n int) ([]byte, error)  { return p.r.Peek(n) }
func (p *procTransport) Write(b []byte) (int, error) { return p.in.Write(b) }
func (p *procTransport) String() string              { return p.desc }
func (p *procTransport) timedOut() bool              { return p.expired.Load() }

func (p *procTransport) arm(d time.Duration) func() {
	if !p.noDeadline {
		t := time.Now().Add(d)
		if p.in.SetWriteDeadline(t) == nil && p.out.SetReadDeadline(t) == nil {
			return func() {}
		}
		p.noDeadline = true // pipes without deadlines: fall back to a watchdog
	}
	timer := time.AfterFunc(d, func() {
		p.expired.Store(true)
		p.kill()
	})
	return func() { timer.Stop() }
}

func (p *procTransport) kill() {
	p.killOnce.Do(func() {
		if p.cmd.Process != nil {
			p.cmd.Process.Kill()
		}
		p.in.Close()
		p.out.Close()
	})
}

func (p *procTransport) diagnose(crashed bool) string {
	var parts []string
	wait := time.Duration(0)
	if crashed { // its output ended: it is exiting, unless it closed stdout itself
		wait = 5 * time.Second
	}
	select {
	case <-p.exited:
		parts = append(parts, "the server process exited: "+describeExit(p.waitErr))
	case <-time.After(wait):
		if crashed {
			parts = append(parts, "the server process is still running")
		}
	}
	if tail := p.stderr.tail(20); tail != "" {
		parts = append(parts, "last lines of its stderr:\n"+indent(tail))
	} else if crashed {
		parts = append(parts, "it wrote nothing to stderr")
	}
	return strings.Join(parts, "; ")
}

func describeExit(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func (p *procTransport) finish(d time.Duration) {
	p.in.Close() // end of input: a server that is still reading exits
	select {
	case <-p.exited:
	case <-time.After(d):
	}
	p.Close()
}

func (p *procTransport) Close() error {
	p.kill()
	select {
	case <-p.exited:
	case <-time.After(3 * time.Second):
	}
	return nil
}

// tailWriter keeps the last bytes written to it, optionally copying them on.
type tailWriter struct {
	mu     sync.Mutex
	buf    []byte
	copyTo io.Writer
}

const tailBytes = 16 << 10

func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > 2*tailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailBytes:]...)
	}
	t.mu.Unlock()
	if t.copyTo != nil {
		t.copyTo.Write(b)
	}
	return len(b), nil
}

// tail returns the last n lines written.
func (t *tailWriter) tail(n int) string {
	t.mu.Lock()
	s := string(t.buf)
	t.mu.Unlock()
	s = strings.TrimRight(s, "\r\n")
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// tcpTransport talks to a server over TCP.
type tcpTransport struct {
	conn net.Conn
	r    *bufio.Reader
	addr string
}

func dialRemote(o RemoteOptions) (*tcpTransport, error) {
	desc := "at " + o.Address
	if err := checkRemoteAddress(o.Address, o.AllowRemote, o.HandshakeTimeout); err != nil {
		return nil, fmt.Errorf("remote environment %s: %v", desc, err)
	}
	conn, err := net.DialTimeout("tcp", o.Address, o.HandshakeTimeout)
	if err != nil {
		hint := "is the server running and listening there?"
		if errors.Is(err, syscall.ECONNREFUSED) {
			hint = "nothing is listening there; start the server first, e.g. python3 remote/gym_server.py --env CartPole-v1 --listen " + o.Address
		}
		return nil, fmt.Errorf("remote environment %s: cannot connect: %v (%s)", desc, err, hint)
	}
	return &tcpTransport{conn: conn, r: bufio.NewReaderSize(conn, 64<<10), addr: o.Address}, nil
}

// checkRemoteAddress refuses addresses that are not loopback unless allowed
// (env.args.allow_remote): the protocol never encrypts, and authenticates
// only with env.args.secret_file.
func checkRemoteAddress(addr string, allow bool, timeout time.Duration) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("env.args.address %q is not HOST:PORT (%v)", addr, err)
	}
	if allow {
		return nil
	}
	refuse := fmt.Errorf("env.args.address %q is not a loopback address: set env.args.allow_remote = true to connect to another host "+
		"(with env.args.secret_file holding the secret of the server's --secret-file, or on a network you trust: the protocol does not encrypt), or connect to 127.0.0.1 or ::1", addr)
	if host == "" {
		return refuse
	}
	if ip := net.ParseIP(host); ip != nil {
		if !ip.IsLoopback() {
			return refuse
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return fmt.Errorf("cannot resolve %q: %v", host, err)
	}
	for _, ip := range ips {
		if !ip.IP.IsLoopback() {
			return refuse
		}
	}
	if len(ips) == 0 {
		return refuse
	}
	return nil
}

func (c *tcpTransport) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c *tcpTransport) Buffered() int               { return c.r.Buffered() }
func (c *tcpTransport) Peek(n int) ([]byte, error)  { return c.r.Peek(n) }
func (c *tcpTransport) Write(b []byte) (int, error) { return c.conn.Write(b) }
func (c *tcpTransport) String() string              { return "at " + c.addr }
func (c *tcpTransport) timedOut() bool              { return false }
func (c *tcpTransport) diagnose(crashed bool) string {
	if crashed {
		return "the server's own output (its terminal or log) says why"
	}
	return ""
}
func (c *tcpTransport) finish(time.Duration) { c.conn.Close() }
func (c *tcpTransport) Close() error         { return c.conn.Close() }

func (c *tcpTransport) arm(d time.Duration) func() {
	c.conn.SetDeadline(time.Now().Add(d))
	return func() {}
}
