package remote

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The env server (`agenttrainer env-server`): it listens on TCP, checks
// each client's proof of the shared secret, then starts the environment
// server command for that connection (one process per connection, so the
// connections of a pool step on as many cores) and relays frames between
// the two. When the process dies, the client gets an error frame with its
// exit status and last stderr lines instead of a dropped connection.

// ServerOptions configure Serve.
type ServerOptions struct {
	Listen      string   // HOST:PORT; port 0 picks a free one
	Secret      []byte   // clients must prove they hold it (nil: no authentication)
	AllowRemote bool     // listen on a non-loopback address without a secret
	Command     []string // the stdio environment server started per connection
	Dir         string   // its working directory
	Once        bool     // exit after the first connection ends
	// IdleExit, when above 0, ends the server once no connection has been
	// open for that long (a launched server outlives its trainer by no
	// more than that).
	IdleExit time.Duration
	// Announce, when set, is a rendezvous directory: the server writes
	// Announce/<Rank>.addr holding AnnounceHost:port once it listens.
	Announce     string
	AnnounceHost string
	Rank         int // −1: SLURM_PROCID, else SLURM_ARRAY_TASK_ID
	MaxConns     int // connections at once (0: 256)

	MaxFrameBytes    int
	HandshakeTimeout time.Duration // bound on a client's authentication
	Log              io.Writer     // the server's notes and its processes' stderr
	// Ready, when set, is told the address the server listens on.
	Ready func(addr string)
}

// Serve runs the env server until ctx ends (or, with Once or IdleExit,
// until it is done).
func Serve(ctx context.Context, o ServerOptions) error {
	if len(o.Command) == 0 {
		return errors.New("env-server: give the environment server to run per connection after --, e.g. agenttrainer env-server --listen 127.0.0.1:5555 -- python3 remote/gym_server.py --env CartPole-v1")
	}
	if o.MaxFrameBytes <= 0 {
		o.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = DefaultRemoteHandshakeTimeout
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 256
	}
	if o.Log == nil {
		o.Log = os.Stderr
	}
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return fmt.Errorf("env-server: --listen %q is not HOST:PORT (%v)", o.Listen, err)
	}
	if o.Secret == nil && !o.AllowRemote {
		if err := checkRemoteAddress(o.Listen, false, o.HandshakeTimeout); err != nil {
			return fmt.Errorf("env-server: --listen %s is not a loopback address: give it a shared secret with --secret-file (clients then set env.args.secret_file), or pass --allow-remote on a network you trust", o.Listen)
		}
	}
	rank := o.Rank
	if o.Announce != "" && rank < 0 {
		if rank, err = slurmRank(); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("env-server: %v", err)
	}
	defer ln.Close()
	addr := ln.Addr().(*net.TCPAddr)
	auth := "without authentication"
	if o.Secret != nil {
		auth = "clients must prove the shared secret"
	}
	fmt.Fprintf(o.Log, "env-server: listening on %s (%s); each connection runs `%s`\n", addr, auth, strings.Join(o.Command, " "))
	if o.Announce != "" {
		ah := o.AnnounceHost
		if ah == "" {
			ah = announceHost(host)
		}
		a := net.JoinHostPort(ah, strconv.Itoa(addr.Port))
		if err := Announce(o.Announce, rank, a); err != nil {
			return fmt.Errorf("env-server: cannot announce %s in %s: %v", a, o.Announce, err)
		}
		defer os.Remove(announcePath(o.Announce, rank))
		fmt.Fprintf(o.Log, "env-server: announced %s as rank %d in %s\n", a, rank, o.Announce)
	}
	if o.Ready != nil {
		o.Ready(addr.String())
	}
	s := &server{o: o, ln: ln, slots: make(chan struct{}, o.MaxConns)}
	return s.run(ctx)
}

func announcePath(dir string, rank int) string {
	return dir + string(os.PathSeparator) + strconv.Itoa(rank) + AnnounceSuffix
}

// slurmRank is the rank of a Slurm task (srun) or job array task.
func slurmRank() (int, error) {
	for _, k := range []string{"SLURM_PROCID", "SLURM_ARRAY_TASK_ID"} {
		if v := os.Getenv(k); v != "" {
			r, err := strconv.Atoi(v)
			if err != nil || r < 0 {
				return 0, fmt.Errorf("env-server: %s=%q is not a rank", k, v)
			}
			return r, nil
		}
	}
	return 0, errors.New("env-server: --announce needs the server's rank: run it under srun or in a job array (SLURM_PROCID, SLURM_ARRAY_TASK_ID), or give --rank N")
}

// announceHost is the name other nodes reach this one by: the listen host
// when it names one, else Slurm's node name, else the host name.
func announceHost(listenHost string) string {
	if ip := net.ParseIP(listenHost); listenHost != "" && (ip == nil || !ip.IsUnspecified()) {
		return listenHost
	}
	if n := os.Getenv("SLURMD_NODENAME"); n != "" {
		return n
	}
	if h, err := os.Hostname(); err == nil {
		return h
	}
	return "localhost"
}

type server struct {
	o      ServerOptions
	ln     net.Listener
	slots  chan struct{}
	active atomic.Int32
	idle   atomic.Int64 // unix nanoseconds since which no connection is open
	n      atomic.Int64 // connections so far
	wg     sync.WaitGroup
}

func (s *server) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.idle.Store(time.Now().UnixNano())
	go func() {
		<-ctx.Done()
		s.ln.Close()
	}()
	if s.o.IdleExit > 0 {
		go s.watchIdle(ctx, cancel)
	}
	var conns sync.Map // open connections, closed when the server stops
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("env-server: %v", err)
		}
		id := s.n.Add(1)
		select {
		case s.slots <- struct{}{}:
		default:
			fmt.Fprintf(s.o.Log, "env-server: connection %d from %s refused: %d connections are open (--max-conns)\n", id, c.RemoteAddr(), s.o.MaxConns)
			writeErrorFrame(c, 1, fmt.Sprintf("the env server already serves %d connections (its --max-conns)", s.o.MaxConns))
			c.Close()
			continue
		}
		s.active.Add(1)
		conns.Store(c, true)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(ctx, c, id)
			conns.Delete(c)
			c.Close()
			<-s.slots
			if s.active.Add(-1) == 0 {
				s.idle.Store(time.Now().UnixNano())
			}
			if s.o.Once {
				cancel()
			}
		}()
		if s.o.Once {
			break
		}
	}
	<-ctx.Done()
	conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
	s.wg.Wait()
	return nil
}

func (s *server) watchIdle(ctx context.Context, stop func()) {
	t := time.NewTicker(min(s.o.IdleExit/4+time.Millisecond, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if s.active.Load() == 0 && time.Since(time.Unix(0, s.idle.Load())) >= s.o.IdleExit {
				fmt.Fprintf(s.o.Log, "env-server: no connection for %v (--idle-exit): exiting\n", s.o.IdleExit)
				stop()
				return
			}
		}
	}
}

// serve authenticates one client, starts its environment process and
// relays frames until either side ends.
func (s *server) serve(ctx context.Context, c net.Conn, id int64) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(s.o.Log, "env-server: connection %d from %s: %s\n", id, c.RemoteAddr(), fmt.Sprintf(format, args...))
	}
	rd := bufio.NewReaderSize(c, 64<<10)
	c.SetDeadline(time.Now().Add(s.o.HandshakeTimeout))
	first, err := s.authenticate(c, rd, logf)
	if err != nil {
		return
	}
	c.SetDeadline(time.Time{})
	p, err := startRemoteProcess(RemoteOptions{Command: s.o.Command, Dir: s.o.Dir, Stderr: &prefixWriter{prefix: fmt.Sprintf("[connection %d] ", id), w: s.o.Log}})
	if err != nil {
		logf("%v", err)
		writeErrorFrame(c, first.Header.ID, err.Error())
		return
	}
	logf("started `%s` (pid %d)", strings.Join(s.o.Command, " "), p.cmd.Process.Pid)
	r := &relay{c: c, p: p, logf: logf, maxFrame: s.o.MaxFrameBytes}
	r.run(ctx, rd, first)
}

// authenticate reads the client's first messages: the challenge and its
// proof when the server has a secret. It returns the first frame to pass
// on to the environment process (the hello); its Raw is a copy.
func (s *server) authenticate(c net.Conn, rd *bufio.Reader, logf func(string, ...any)) (frame, error) {
	var buf []byte
	read := func() (frame, error) {
		f, b, err := readFrame(rd, buf, s.o.MaxFrameBytes)
		buf = b
		return f, err
	}
	refuse := func(id uint64, why string) error {
		logf("refused: %s", why)
		writeErrorFrame(c, id, why)
		return errors.New(why)
	}
	f, err := read()
	if err != nil {
		logf("closed before its hello: %v", err)
		return frame{}, err
	}
	if s.o.Secret == nil {
		if f.Header.Type == "challenge" {
			return frame{}, refuse(f.Header.ID, "this env server has no secret, so there is nothing to authenticate: leave env.args.secret_file out, or start the server with --secret-file")
		}
		f.Raw = append([]byte(nil), f.Raw...)
		return f, nil
	}
	if f.Header.Type != "challenge" {
		return frame{}, refuse(f.Header.ID, fmt.Sprintf("this env server requires authentication (protocol %d): set env.args.secret_file to a file holding the secret of the server's --secret-file", RemoteProtocolVersion))
	}
	a := NewServerAuth(s.o.Secret)
	nonce, proof, err := a.Challenge(f.Header.Nonce)
	if err != nil {
		return frame{}, refuse(f.Header.ID, "authentication failed: "+err.Error())
	}
	if err := writeFrame(c, map[string]any{"type": "challenge", "id": f.Header.ID, "protocol": RemoteProtocolVersion, "nonce": nonce, "proof": proof}); err != nil {
		return frame{}, err
	}
	if f, err = read(); err != nil {
		logf("refused: the client hung up after the challenge (%v): it holds a different secret, which does not match this server's proof", err)
		return frame{}, err
	}
	if f.Header.Type != "auth" || !a.Verify(f.Header.Proof) {
		return frame{}, refuse(f.Header.ID, "authentication failed: the client's proof does not match this server's secret: give env.args.secret_file the secret of the server's --secret-file")
	}
	if err := writeFrame(c, map[string]any{"type": "auth", "id": f.Header.ID, "ok": true}); err != nil {
		return frame{}, err
	}
	if f, err = read(); err != nil {
		logf("closed before its hello: %v", err)
		return frame{}, err
	}
	f.Raw = append([]byte(nil), f.Raw...)
	return f, nil
}

func writeFrame(w io.Writer, header map[string]any) error {
	b, err := appendFrame(nil, header, nil)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func writeErrorFrame(w io.Writer, id uint64, msg string) {
	writeFrame(w, map[string]any{"type": "error", "id": id, "message": msg})
}

// relay passes frames between a client and its environment process.
type relay struct {
	c        net.Conn
	p        *procTransport
	logf     func(string, ...any)
	maxFrame int

	mu        sync.Mutex // guards what follows and writes to c
	pending   bool       // a request awaits its reply
	pendingID uint64
	closing   bool   // the client said close
	dead      string // why the process is gone
}

func (r *relay) run(ctx context.Context, rd *bufio.Reader, first frame) {
	done := make(chan struct{})
	go func() { // client → process
		defer close(done)
		f := first
		var buf []byte
		for {
			r.mu.Lock()
			if r.dead != "" {
				r.fail(f.Header.ID)
				r.mu.Unlock()
				return
			}
			r.pending, r.pendingID = true, f.Header.ID
			r.closing = r.closing || f.Header.Type == "close"
			r.mu.Unlock()
			if _, err := r.p.Write(f.Raw); err != nil {
				// The process is gone: the other side answers this
				// request with the news.
				r.mu.Lock()
				if r.dead != "" && r.pending {
					r.fail(r.pendingID)
				}
				r.mu.Unlock()
				return
			}
			var err error
			if f, buf, err = readFrame(rd, buf, r.maxFrame); err != nil {
				if !errors.Is(err, errStreamClosed) && !isClosedErr(err) {
					r.logf("stopped relaying: %v", err)
				}
				r.mu.Lock() // the client is gone: end the process's input
				r.closing = true
				r.mu.Unlock()
				r.p.in.Close()
				return
			}
		}
	}()
	var buf []byte
	for { // process → client
		f, b, err := readFrame(r.p, buf, r.maxFrame)
		buf = b
		if err != nil {
			break
		}
		r.mu.Lock()
		r.pending = false
		_, werr := r.c.Write(f.Raw)
		r.mu.Unlock()
		if werr != nil {
			break
		}
	}
	r.mu.Lock()
	closing := r.closing
	if !closing {
		r.dead = fmt.Sprintf("the environment process behind agenttrainer env-server stopped: %s", r.p.diagnose(true))
		r.logf("%s", r.dead)
		if r.pending {
			r.fail(r.pendingID)
		}
		// Else the client's next request gets the news.
	}
	r.mu.Unlock()
	if closing {
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
	} else {
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	r.c.Close()
	r.p.finish(2 * time.Second)
	<-done
}

// fail answers request id with the process's death (mu held).
func (r *relay) fail(id uint64) {
	writeErrorFrame(r.c, id, r.dead)
	r.c.Close()
}
