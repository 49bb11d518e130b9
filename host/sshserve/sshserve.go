// Package sshserve serves the terminal app over SSH, one app per session, to the keys of an authorized_keys file.
package sshserve

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/ssh"
	"github.com/charmbracelet/wish"
	bm "github.com/charmbracelet/wish/bubbletea"
	"github.com/muesli/termenv"
	gossh "golang.org/x/crypto/ssh"

	"github.com/agenttrainer/agenttrainer/internal/inputfile"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/tui"
)

// DefaultLoginGrace bounds how long a connection may take to authenticate
// and open its session (OpenSSH's LoginGraceTime), so that connections that
// never log in do not pile up.
const DefaultLoginGrace = 2 * time.Minute

// ShutdownGrace is how long a graceful shutdown waits for the sessions to
// close before it cuts them off.
const ShutdownGrace = 5 * time.Second

// queryWait bounds the wait for a terminal's answer to the background
// colour query that picks a session's light or dark theme.
const queryWait = 1200 * time.Millisecond

// sessionFailed is the exit status of a session refused or broken.
const sessionFailed = 1

// Config is what the server serves, and to whom.
type Config struct {
	AuthKeys   string        // authorized_keys file, read again at every login
	HostKey    string        // the server's private key file; EnsureHostKey makes it
	Idle       time.Duration // close a session after this long without a key press (0: never)
	MaxTimeout time.Duration // close a connection this long after it opened (0: never)
	LoginGrace time.Duration // 0: DefaultLoginGrace

	Config config.Config // what every session's app starts from
	// Host starts, attaches to and lists the runs, as for the local app;
	// every session attaches to the trainings it lists at start, so runs
	// started in an earlier session (or a local terminal) are there when
	// one logs in again.
	Host tui.Host
}

func (c Config) loginGrace() time.Duration {
	if c.LoginGrace > 0 {
		return c.LoginGrace
	}
	return DefaultLoginGrace
}

// OffLoopback says whether other machines may reach a listener on a: any
// address but loopback (0.0.0.0 and :: reach every interface).
func OffLoopback(a *net.TCPAddr) bool { return !a.IP.IsLoopback() }

// ConnectHost is the host to put in the connect hint.
func ConnectHost(a *net.TCPAddr) string {
	if a.IP.IsUnspecified() {
		return "HOST"
	}
	if a.IP.To4() == nil {
		return "[" + a.IP.String() + "]"
	}
	return a.IP.String()
}

// ReadAuthorizedKeys reads an authorized_keys file: the keys it lets in,
// and warnings about lines it skips. A missing file, one that others may
// write, or one without a usable key is an error.
func ReadAuthorizedKeys(path string) ([]gossh.PublicKey, []string, error) {
	// One bounded read of a regular file: a named pipe put in its place
	// must not hold up every login (it is read again at each one).
	b, st, err := inputfile.ReadInfo(path, maxAuthorizedKeys, "authorized_keys file")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%s does not exist: serve lets in only the public keys listed there; add yours (e.g. cat ~/.ssh/id_ed25519.pub >> %s) or pass --authorized-keys FILE", path, path)
	}
	if err != nil {
		return nil, nil, err
	}
	if st.Mode().Perm()&0o022 != 0 {
		return nil, nil, fmt.Errorf("%s may be written by other users (mode %v), who could let themselves in; chmod go-w %s", path, st.Mode().Perm(), path)
	}
	var keys []gossh.PublicKey
	var warnings []string
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, _, opts, _, err := gossh.ParseAuthorizedKey([]byte(line))
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s:%d: not a public key, skipped (%v)", path, i+1, err))
			continue
		}
		if len(opts) > 0 {
			// from=, command=, restrict, cert-authority …: honouring some and
			// not others would let a restricted key in unrestricted.
			warnings = append(warnings, fmt.Sprintf("%s:%d: key %s has options (%s), which serve does not enforce: skipped",
				path, i+1, gossh.FingerprintSHA256(k), strings.Join(opts, ",")))
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, warnings, fmt.Errorf("%s holds no usable public key; add one line like `ssh-ed25519 AAAA… you@laptop`", path)
	}
	return keys, warnings, nil
}

// maxAuthorizedKeys bounds an authorized_keys file (OpenSSH's lines are a
// few hundred bytes each).
const maxAuthorizedKeys = 1 << 20

// keyComment is the comment of the authorized_keys line that matches key.
func keyComment(path string, key gossh.PublicKey) string {
	b, err := inputfile.Read(path, maxAuthorizedKeys, "authorized_keys file")
	if err != nil {
		return ""
	}
	for len(b) > 0 {
		k, comment, _, rest, err := gossh.ParseAuthorizedKey(b)
		if err != nil {
			return ""
		}
		if ssh.KeysEqual(k, key) {
			return comment
		}
		b = rest
	}
	return ""
}

// EnsureHostKey loads the host key at path, or makes an ed25519 one there
// (mode 0600, its directory 0700 when it has to be made) on first start. It
// returns the key's fingerprint. A key that others may read is refused, as
// sshd refuses it.
func EnsureHostKey(path string) (created bool, fingerprint string, err error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return false, "", err
		}
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return false, "", err
		}
		block, err := gossh.MarshalPrivateKey(priv, "agenttrainer serve host key")
		if err != nil {
			return false, "", err
		}
		// O_EXCL: never overwrite a key that appeared meanwhile.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return false, "", err
		}
		_, werr := f.Write(pem.EncodeToMemory(block))
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(path)
			return false, "", werr
		}
		created = true
		signer, err := gossh.NewSignerFromKey(priv)
		if err != nil {
			return true, "", err
		}
		os.WriteFile(path+".pub", gossh.MarshalAuthorizedKey(signer.PublicKey()), 0o644) // a convenience; the key works without it
	case err != nil:
		return false, "", err
	case st.Mode().Perm()&0o077 != 0:
		return false, "", fmt.Errorf("%s may be read by other users (mode %v); chmod 600 %s", path, st.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return created, "", err
	}
	signer, err := gossh.ParsePrivateKey(b)
	if err != nil {
		return created, "", fmt.Errorf("%s: %v", path, err)
	}
	return created, gossh.FingerprintSHA256(signer.PublicKey()), nil
}

// Server serves one app per SSH session.
type Server struct {
	cfg  Config
	log  *log.Logger
	srv  *ssh.Server
	mu   sync.Mutex
	open map[*appSession]struct{}
	// closing is set when the server shuts down: new sessions are refused.
	closing bool
}

type ctxKey int

const (
	ctxSession ctxKey = iota // *appSession
	ctxComment               // the matching authorized_keys line's comment
	ctxConn                  // *graceConn
)

// New makes a server for cfg that logs to logger. The host key must exist
// (EnsureHostKey).
func New(cfg Config, logger *log.Logger) (*Server, error) {
	s := &Server{cfg: cfg, log: logger, open: map[*appSession]struct{}{}}
	opts := []ssh.Option{
		wish.WithHostKeyPath(cfg.HostKey), // exists by now (EnsureHostKey): loaded, not made
		wish.WithPublicKeyAuth(s.authorize),
		// No password or keyboard-interactive handler: with a public-key
		// handler alone, the server offers only "publickey".
		wish.WithMiddleware(
			s.afterApp,
			bm.MiddlewareWithProgramHandler(s.program, termenv.Ascii), // Ascii: never force more colours than the client has
			s.requireTerminal,
			s.logSessions,
		),
		ssh.WrapConn(s.wrapConn),
	}
	if cfg.Idle > 0 {
		// A backstop for peers that vanished: the app's own idle timeout
		// counts key presses (redraws would keep this one from firing).
		opts = append(opts, wish.WithIdleTimeout(cfg.Idle+time.Minute))
	}
	if cfg.MaxTimeout > 0 {
		opts = append(opts, wish.WithMaxTimeout(cfg.MaxTimeout))
	}
	srv, err := wish.NewServer(opts...)
	if err != nil {
		return nil, err
	}
	if srv.PasswordHandler != nil || srv.KeyboardInteractiveHandler != nil || srv.PublicKeyHandler == nil {
		return nil, errors.New("the SSH server must offer public-key authentication only")
	}
	s.srv = srv
	return s, nil
}

// Serve answers connections on ln until ctx is done, then closes every
// session (their trainings go on) and stops. An error, logged already,
// means the server stopped by itself.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	errc := make(chan error, 1)
	serving := make(chan struct{})
	go func() { errc <- s.srv.Serve(&acceptListener{Listener: ln, first: serving}) }()
	select {
	case err := <-errc:
		s.log.Printf("ssh: server stopped: %v", err)
		return err
	case <-serving: // Serve holds the listener: Shutdown will find it
	}
	select {
	case err := <-errc:
		s.log.Printf("ssh: server stopped: %v", err)
		return err
	case <-ctx.Done():
	}
	s.mu.Lock()
	s.closing = true
	sessions := make([]*appSession, 0, len(s.open))
	for a := range s.open {
		sessions = append(sessions, a)
	}
	s.mu.Unlock()
	s.log.Printf("ssh: shutting down: closing %d session(s); their trainings go on", len(sessions))
	for _, a := range sessions {
		a.end("the server is shutting down; the trainings go on")
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		s.log.Printf("ssh: sessions still open after %s: closing them", ShutdownGrace)
		s.srv.Close()
	}
	<-errc
	s.log.Printf("ssh: stopped")
	return nil
}

// acceptListener closes first when Serve first accepts.
type acceptListener struct {
	net.Listener
	once  sync.Once
	first chan struct{}
}

func (l *acceptListener) Accept() (net.Conn, error) {
	l.once.Do(func() { close(l.first) })
	return l.Listener.Accept()
}

// authorize lets in the keys of the authorized_keys file, read again at
// every attempt so that adding or removing a line takes effect at once.
func (s *Server) authorize(ctx ssh.Context, key ssh.PublicKey) bool {
	who := ctx.User() + "@" + ctx.RemoteAddr().String()
	keys, _, err := ReadAuthorizedKeys(s.cfg.AuthKeys)
	if err != nil {
		s.log.Printf("ssh: refused %s: %v", who, err)
		return false
	}
	for _, k := range keys {
		if ssh.KeysEqual(k, key) {
			ctx.SetValue(ctxComment, keyComment(s.cfg.AuthKeys, key))
			return true
		}
	}
	s.log.Printf("ssh: refused %s: %s key %s is not in %s", who, key.Type(), gossh.FingerprintSHA256(key), s.cfg.AuthKeys)
	return false
}

// graceConn holds a connection to its login grace until its session opens.
type graceConn struct {
	net.Conn
	until atomic.Int64 // Unix nanoseconds; 0 once logged in
}

func (c *graceConn) SetDeadline(t time.Time) error {
	if u := c.until.Load(); u != 0 && (t.IsZero() || t.UnixNano() > u) {
		t = time.Unix(0, u)
	}
	return c.Conn.SetDeadline(t)
}

// loggedIn lifts the login deadline.
func (c *graceConn) loggedIn(next time.Duration) {
	c.until.Store(0)
	if next > 0 {
		c.Conn.SetDeadline(time.Now().Add(next))
	} else {
		c.Conn.SetDeadline(time.Time{})
	}
}

func (s *Server) wrapConn(ctx ssh.Context, c net.Conn) net.Conn {
	g := &graceConn{Conn: c}
	until := time.Now().Add(s.cfg.loginGrace())
	g.until.Store(until.UnixNano())
	c.SetDeadline(until)
	ctx.SetValue(ctxConn, g)
	return g
}

// logSessions logs who connected with which key, and when they left.
func (s *Server) logSessions(next ssh.Handler) ssh.Handler {
	return func(sess ssh.Session) {
		if g, ok := sess.Context().Value(ctxConn).(*graceConn); ok {
			next := time.Duration(0)
			if s.cfg.Idle > 0 {
				next = s.cfg.Idle + time.Minute
			}
			g.loggedIn(next)
		}
		start := time.Now()
		who := sess.User() + "@" + sess.RemoteAddr().String()
		key := "no key"
		if k := sess.PublicKey(); k != nil {
			key = k.Type() + " key " + gossh.FingerprintSHA256(k)
			if c, _ := sess.Context().Value(ctxComment).(string); c != "" {
				key += " (" + c + ")"
			}
		}
		term := "no terminal"
		if pty, _, ok := sess.Pty(); ok {
			term = fmt.Sprintf("terminal %s %d×%d", pty.Term, pty.Window.Width, pty.Window.Height)
		}
		s.log.Printf("ssh: %s in with %s, %s", who, key, term)
		defer func() {
			if r := recover(); r != nil {
				s.log.Printf("ssh: %s: the session failed: %v", who, r)
				fmt.Fprintf(sess.Stderr(), "agenttrainer: the session failed: %v\n", r)
				sess.Exit(sessionFailed)
			}
			s.log.Printf("ssh: %s left after %s", who, time.Since(start).Round(time.Second))
		}()
		next(sess)
	}
}

// requireTerminal refuses, politely, sessions that cannot show the app.
func (s *Server) requireTerminal(next ssh.Handler) ssh.Handler {
	return func(sess ssh.Session) {
		connect := "ssh -t -p PORT HOST"
		if a, ok := sess.LocalAddr().(*net.TCPAddr); ok {
			connect = fmt.Sprintf("ssh -t -p %d %s", a.Port, ConnectHost(a))
		}
		if cmd := sess.RawCommand(); cmd != "" {
			fmt.Fprintf(sess.Stderr(), "agenttrainer: this server shows the terminal app and runs no commands (asked for %q).\nConnect without one: %s\n", cut(cmd, 60), connect)
			sess.Exit(sessionFailed)
			return
		}
		if _, _, ok := sess.Pty(); !ok {
			fmt.Fprintf(sess.Stderr(), "agenttrainer: this server shows the terminal app, which needs a terminal, and this session has none.\n"+
				"Connect from a terminal: %s; to train without the app, run `agenttrainer train` on the server.\n", connect)
			sess.Exit(sessionFailed)
			return
		}
		next(sess)
	}
}

func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// appSession is one SSH session's app.
type appSession struct {
	sess  ssh.Session
	in    *sessionInput
	model *tui.Model
	mu    sync.Mutex
	p     *tea.Program
	links []*tui.Link
	done  bool   // the app ended: links made after it are closed at once
	why   string // why the server ended the app, told to the user
}

// program builds the session's app: its own model, renderer (colour profile
// and background of the client's terminal) and input.
func (s *Server) program(sess ssh.Session) *tea.Program {
	a := &appSession{sess: sess, in: newSessionInput(sess)}
	sess.Context().SetValue(ctxSession, a)
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		a.why = "the server is shutting down"
		return nil
	}
	// The renderer asks the terminal for its background colour; its reads
	// see the session's input until the answer or queryWait, so a terminal
	// that never answers costs a moment instead of the first key press.
	r := bm.MakeRenderer(querySession{Session: sess, r: a.in.until(time.Now().Add(queryWait))})
	a.model = tui.New(tui.Options{Config: s.cfg.Config.Clone(), Host: sessionHost{Host: s.cfg.Host, a: a}, Renderer: r})
	opts := append(bm.MakeOptions(sess), tea.WithAltScreen(), tea.WithoutSignalHandler())
	if sess.EmulatedPty() {
		opts = append(opts, tea.WithInput(a.in))
	}
	p := tea.NewProgram(sizedModel{a.model}, opts...)
	a.mu.Lock()
	a.p = p
	a.mu.Unlock()
	s.mu.Lock()
	s.open[a] = struct{}{}
	closing = s.closing
	s.mu.Unlock()
	if closing {
		a.end("the server is shutting down")
	}
	if s.cfg.Idle > 0 {
		go a.watchIdle(s.cfg.Idle)
	}
	return p
}

// afterApp runs when the session's app has ended: it lets go of the runs
// (they go on training) and says how the app ended.
func (s *Server) afterApp(next ssh.Handler) ssh.Handler {
	return func(sess ssh.Session) {
		a, _ := sess.Context().Value(ctxSession).(*appSession)
		if a == nil {
			next(sess)
			return
		}
		s.mu.Lock()
		delete(s.open, a)
		s.mu.Unlock()
		a.mu.Lock()
		a.done = true
		links, why := a.links, a.why
		a.mu.Unlock()
		for _, l := range links {
			if l.Close != nil {
				l.Close()
			}
		}
		var msg string
		if a.model != nil {
			res := a.model.Result()
			msg = res.Summary("log in again and attach from the runs browser (4, then a)")
			if res.Err != nil && !res.Detached {
				msg += fmt.Sprintf("agenttrainer: %v\n", res.Err) // as the command line's exit says it
			}
		}
		if why != "" {
			msg += "agenttrainer: " + why + "\n"
		}
		io.WriteString(sess, msg)
		next(sess)
	}
}

// sessionHost is the server's host with every link a session makes kept,
// to close them when the session ends (the runs go on).
type sessionHost struct {
	tui.Host
	a *appSession
}

func (h sessionHost) Start(cfg config.Config) (*tui.Link, error) { return h.a.track(h.Host.Start(cfg)) }
func (h sessionHost) Attach(dir string) (*tui.Link, error)       { return h.a.track(h.Host.Attach(dir)) }
func (h sessionHost) Resume(dir string) (*tui.Link, error)       { return h.a.track(h.Host.Resume(dir)) }

// track keeps the session's links to close them when the session ends.
func (a *appSession) track(l *tui.Link, err error) (*tui.Link, error) {
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done { // the session went away while the run was starting
		if l.Close != nil {
			l.Close()
		}
		return nil, errors.New("the session ended")
	}
	a.links = append(a.links, l)
	return l, nil
}

// end quits the app, telling the user why; the runs go on.
func (a *appSession) end(why string) {
	a.mu.Lock()
	if a.why == "" {
		a.why = why
	}
	p := a.p
	a.mu.Unlock()
	if p != nil {
		p.Quit()
	}
}

func (a *appSession) watchIdle(limit time.Duration) {
	every := min(max(limit/4, 50*time.Millisecond), 5*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-a.sess.Context().Done():
			return
		case <-t.C:
			if idle := a.in.idle(); idle >= limit {
				a.end(fmt.Sprintf("closed after %s without a key press; the trainings go on", limit))
				return
			}
		}
	}
}

// The largest window the app draws for a client, in cells. A client says
// its size at login (the pty request) and at every change (window-change
// requests) as two 32-bit numbers; the app draws a frame of that many
// cells, so 65535×65535 would cost the server gigabytes and drop every
// other session with it. A terminal larger than this gets a frame of this
// size (a 4K screen in a 6-pixel font is about 640×360).
const (
	MaxWindowWidth  = 1000
	MaxWindowHeight = 500
)

// boundWindow is the size the app draws for a client that says w×h: within
// the bounds, and 80×24 when it says none (ssh -tt from a script reports
// 0×0).
func boundWindow(w, h int) (int, int) {
	if w <= 0 || h <= 0 {
		return 80, 24
	}
	return min(w, MaxWindowWidth), min(h, MaxWindowHeight)
}

// sizedModel gives the app the bounded size of the client's window: every
// size the app sees, at login and at each change, comes through here.
type sizedModel struct{ *tui.Model }

func (m sizedModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if ws, ok := msg.(tea.WindowSizeMsg); ok {
		ws.Width, ws.Height = boundWindow(ws.Width, ws.Height)
		msg = ws
	}
	_, cmd := m.Model.Update(msg)
	return m, cmd
}

// sessionInput reads the session's input in one goroutine and hands it to
// whoever reads: the colour query first, then the app. It remembers when
// the user last typed.
type sessionInput struct {
	ch      chan []byte
	pending []byte
	last    atomic.Int64 // Unix nanoseconds
}

func newSessionInput(r io.Reader) *sessionInput {
	in := &sessionInput{ch: make(chan []byte, 64)}
	in.last.Store(time.Now().UnixNano())
	go func() {
		defer close(in.ch)
		for {
			buf := make([]byte, 1024)
			n, err := r.Read(buf)
			if n > 0 {
				in.last.Store(time.Now().UnixNano())
				in.ch <- buf[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	return in
}

func (in *sessionInput) idle() time.Duration { return time.Since(time.Unix(0, in.last.Load())) }

func (in *sessionInput) Read(p []byte) (int, error) { return in.read(p, nil) }

func (in *sessionInput) read(p []byte, stop <-chan time.Time) (int, error) {
	if len(in.pending) == 0 {
		select {
		case b, ok := <-in.ch:
			if !ok {
				return 0, io.EOF
			}
			in.pending = b
		case <-stop:
			return 0, io.EOF
		}
	}
	n := copy(p, in.pending)
	in.pending = in.pending[n:]
	return n, nil
}

// until is the input as a reader that gives up at deadline.
func (in *sessionInput) until(deadline time.Time) io.Reader {
	return readerFunc(func(p []byte) (int, error) {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		return in.read(p, t.C)
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// querySession is the session with its input read through r.
type querySession struct {
	ssh.Session
	r io.Reader
}

func (q querySession) Read(p []byte) (int, error) { return q.r.Read(p) }
