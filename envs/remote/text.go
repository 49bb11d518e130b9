package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
	"github.com/agenttrainer/agenttrainer/internal/anynum"
	"github.com/agenttrainer/agenttrainer/internal/suggest"
)

// TextID is the env.id of text environments served by another process
// (a Python TextEnv, remote/textenv.py) over the remote protocol.
const TextID = "remote-text"

// DefaultTextMaxTurns is remote-text's turn limit where neither the
// workflow nor the server sets one.
const DefaultTextMaxTurns = 100

func init() {
	text.Register(text.Spec{
		ID: TextID,
		Description: `a text environment in another process (a Python TextEnv, remote/textenv.py): ` +
			`env.args.command = ["python3", "remote/guess_server.py"] or env.args.address = "HOST:PORT"; env.args.workers for several; the rest of env.args and the task row is the task`,
		New:      newSharedTextEnv,
		Agent:    "single_turn",
		MaxTurns: DefaultTextMaxTurns,
	})
}

// textArgKeys are the keys of remote-text's env.args that configure the
// connection; every other key of env.args and the task row is the task the
// server's environment is built from.
var textArgKeys = []string{"command", "dir", "env", "address", "allow_remote", "timeout_s", "handshake_timeout_s", "max_frame_bytes",
	"max_observation_bytes", "stderr", "options", "workers", "batch_size", "restart_workers", "max_restarts", "secret_file",
	"rendezvous", "launcher", "srun_args", "launch_timeout_s", "server_exe"}

// SplitTextArgs parts a task row merged with remote-text's env.args into
// the connection's settings and the task.
func SplitTextArgs(p envs.Params) (conn, task envs.Params) {
	conn, task = envs.Params{}, envs.Params{}
	for k, v := range p {
		if slices.Contains(textArgKeys, k) {
			conn[k] = v
		} else {
			task[k] = v
		}
	}
	return conn, task
}

// ParseTextArgs reads remote-text's connection settings: those of the
// numeric remote environment (ParseRemoteArgs) but batch_size, with
// timeout_s 300 by default, and max_observation_bytes (1 MiB by default).
func ParseTextArgs(conn envs.Params) (RemoteOptions, error) {
	conn = maps.Clone(conn)
	if _, ok := conn["batch_size"]; ok {
		return RemoteOptions{}, errors.New("env.args.batch_size steps numeric sub-environments asynchronously; a text environment's episodes step on their own, spread over env.args.workers")
	}
	if conn["command"] == nil && conn["address"] == nil && conn["rendezvous"] == nil {
		return RemoteOptions{}, errors.New(`the remote text environment needs env.args.command (a server to start, e.g. ["python3", "remote/guess_server.py"]), ` +
			`env.args.address (a server listening on TCP, e.g. "127.0.0.1:5555") or env.args.rendezvous; see remote/PROTOCOL.md, Text environments`)
	}
	maxObs := 0
	if v, ok := conn["max_observation_bytes"]; ok {
		f, ok := anynum.Float(v)
		if !ok || f != math.Trunc(f) || f < 1 || f > math.MaxInt32 {
			return RemoteOptions{}, fmt.Errorf("env.args.max_observation_bytes must be a whole number of bytes from 1 to %d, got %s", math.MaxInt32, envs.DescribeArg(v))
		}
		maxObs = int(f)
		delete(conn, "max_observation_bytes")
	}
	_, timeoutSet := conn["timeout_s"]
	o, err := ParseRemoteArgs(conn)
	if err != nil {
		return o, err
	}
	if !timeoutSet {
		o.Timeout = DefaultTextTimeout
	}
	if maxObs == 0 {
		maxObs = min(DefaultMaxObservationBytes, o.MaxFrameBytes)
	}
	if maxObs > o.MaxFrameBytes {
		return o, fmt.Errorf("env.args.max_observation_bytes = %d is over env.args.max_frame_bytes = %d: an observation travels in one frame; raise max_frame_bytes too", maxObs, o.MaxFrameBytes)
	}
	o.MaxObservationBytes = maxObs
	return o, nil
}

// TextPool is a set of connections (workers) to text environment servers.
// Every episode is a session on one worker, the one that held the fewest
// when it started; a worker answers one request at a time, so W workers
// step W episodes at once.
//
// A worker that fails (crashes, hangs past env.args.timeout_s, breaks the
// protocol) ends the episodes it held with its error; the next episode
// that picks it gets that error too, unless env.args.restart_workers
// starts it again (at most env.args.max_restarts times over the pool's
// life). An environment that fails (an exception in its reset or step)
// ends its own episode only.
type TextPool struct {
	o        RemoteOptions
	launched *launch
	workers  []*textWorker

	name           string
	maxTurns       int
	reportsSuccess bool

	next     atomic.Uint32 // where the search for the least busy worker starts
	restarts atomic.Int32
	log      func(string)
	closed   atomic.Bool
}

// textWorker is one connection of a TextPool.
type textWorker struct {
	p    *TextPool
	idx  int
	addr string

	mu   sync.Mutex // one request at a time; guards conn and err
	conn *RemoteEnv
	err  error // why conn broke, when it did
	// cur is conn for those who must not wait for a request under way:
	// the choice of a worker, and Close.
	cur atomic.Pointer[RemoteEnv]
}

// setConn replaces the worker's connection (w.mu held, or none yet).
func (w *textWorker) setConn(c *RemoteEnv) {
	w.conn = c
	w.cur.Store(c)
}

// OpenTextPool starts or connects to the text servers that o describes
// (env.args.workers of them), all at once.
func OpenTextPool(o RemoteOptions) (*TextPool, error) {
	w := o.workerCount()
	if o.Pool.BatchSize > 0 {
		return nil, errors.New("a text pool steps each episode on its own: leave env.args.batch_size out")
	}
	addrs, l, err := resolveAddresses(o, w)
	if err != nil {
		return nil, err
	}
	p := &TextPool{o: o, launched: l, log: func(s string) { fmt.Fprintln(os.Stderr, s) }}
	for i := range w {
		wk := &textWorker{p: p, idx: i}
		if len(addrs) > 0 {
			wk.addr = addrs[i%len(addrs)]
		}
		p.workers = append(p.workers, wk)
	}
	err = connectAll(w, func(i int) error {
		c, err := p.workers[i].connect()
		p.workers[i].setConn(c)
		return err
	})
	if err != nil {
		p.Close()
		return nil, err
	}
	first := p.workers[0].conn.text
	p.name, p.maxTurns, p.reportsSuccess = first.name, first.maxTurns, first.reportsSuccess
	for _, wk := range p.workers[1:] {
		if err := p.sameAsFirst(wk.conn.text); err != nil {
			p.Close()
			return nil, wk.wrap(err)
		}
	}
	return p, nil
}

// connect opens the worker's connection.
func (w *textWorker) connect() (*RemoteEnv, error) {
	r, err := openTextConn(workerOptions(w.p.o, w.p.launched, w.addr, w.idx))
	if err != nil {
		return nil, w.wrap(err)
	}
	return r, nil
}

// wrap names the worker in err when the pool has several.
func (w *textWorker) wrap(err error) error {
	if len(w.p.workers) < 2 {
		return err
	}
	return fmt.Errorf("env worker %d of %d: %w", w.idx, len(w.p.workers), err)
}

// sameAsFirst checks that a worker serves what worker 0 does.
func (p *TextPool) sameAsFirst(c *textConn) error {
	if c.name != p.name || c.reportsSuccess != p.reportsSuccess || c.maxTurns != p.maxTurns {
		return fmt.Errorf("it serves %q (reports success %v, max_turns %d), worker 0 %q (%v, %d): every worker must serve the same environment",
			c.name, c.reportsSuccess, c.maxTurns, p.name, p.reportsSuccess, p.maxTurns)
	}
	return nil
}

// Name is the environment's name as the servers gave it.
func (p *TextPool) Name() string { return p.name }

// Workers is the number of workers.
func (p *TextPool) Workers() int { return len(p.workers) }

// Restarts is how many times a failed worker was started again.
func (p *TextPool) Restarts() int { return int(p.restarts.Load()) }

// SetLog sends the pool's notes (a worker restarted) to log instead of
// the process's stderr.
func (p *TextPool) SetLog(log func(string)) { p.log = log }

// Sessions is how many sessions the workers hold, worker by worker.
func (p *TextPool) Sessions() []int {
	out := make([]int, len(p.workers))
	for i, w := range p.workers {
		if c := w.cur.Load(); c != nil {
			out[i] = c.text.sessions()
		}
	}
	return out
}

// Close ends every connection (stopping servers the pool started). The
// environments of the pool fail from then on.
func (p *TextPool) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	var wg sync.WaitGroup
	for _, w := range p.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !w.mu.TryLock() { // a request is under way: end it at once
				if c := w.cur.Load(); c != nil {
					c.t.Close()
				}
				return
			}
			defer w.mu.Unlock()
			if w.conn != nil {
				w.conn.Close()
			}
		}()
	}
	wg.Wait()
	if p.launched != nil {
		p.launched.stop()
	}
	return nil
}

// pick is the worker for a new session: the one holding the fewest, the
// search starting one further each time so that ties rotate. A failed
// worker holds none, so the next session goes to it: it is started again
// (env.args.restart_workers) or fails that episode with its error, so a
// failure is not hidden by the other workers.
func (p *TextPool) pick() *textWorker {
	start := int(p.next.Add(1)) % len(p.workers)
	var best *textWorker
	bestN := math.MaxInt
	for i := range p.workers {
		w := p.workers[(start+i)%len(p.workers)]
		n := 0
		if c := w.cur.Load(); c != nil {
			n = c.text.sessions()
		}
		if n < bestN {
			best, bestN = w, n
		}
	}
	return best
}

// ready returns the worker's connection (w.mu held), starting it again
// when it failed and restarts are allowed.
func (w *textWorker) ready() (*RemoteEnv, error) {
	p := w.p
	if p.closed.Load() {
		return nil, errors.New("the remote text environment's connections are closed")
	}
	if w.conn != nil && w.conn.broken == nil {
		return w.conn, nil
	}
	if w.err == nil && w.conn != nil {
		w.err = w.wrap(w.conn.broken)
	}
	if !p.o.Pool.RestartWorkers {
		return nil, fmt.Errorf("%w\n(the worker failed earlier; env.args.restart_workers = true starts a failed worker again)", w.err)
	}
	k := p.restarts.Add(1)
	if int(k) > p.o.Pool.MaxRestarts {
		return nil, fmt.Errorf("%w\n(not restarted: the workers have been restarted %d times, env.args.max_restarts)", w.err, p.o.Pool.MaxRestarts)
	}
	if w.conn != nil {
		w.conn.Close()
	}
	conn, err := w.connect()
	if err != nil {
		w.setConn(nil)
		return nil, fmt.Errorf("%w\nrestarting it failed: %v", w.err, err)
	}
	p.log(fmt.Sprintf("warning: %v\nrestarted it (restart %d of at most %d, env.args.max_restarts); the episodes it held ended with the error", w.err, k, p.o.Pool.MaxRestarts))
	w.setConn(conn)
	w.err = nil
	return conn, nil
}

// failed records a broken connection's error (w.mu held): its sessions
// are gone with it.
func (w *textWorker) failed(conn *RemoteEnv, err error) error {
	err = w.wrap(err)
	conn.text.lost()
	if w.conn == conn {
		w.err = err
	}
	return err
}

// session is an episode's hold on a server: the connection it lives on
// and its id there. It is apart from TextEnv so that a TextEnv that is
// dropped without Close can still give its session back (a cleanup
// releases it).
type session struct {
	mu   sync.Mutex
	w    *textWorker
	conn *RemoteEnv
	id   uint64
	live bool // the server holds it
}

// end marks the session over; close asks the server to close it (with the
// worker's next request) when the server still holds it.
func (s *session) end(close bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live {
		s.live = false
		s.conn.text.ended(s.id, close)
	}
}

// TextEnv is one episode's environment on a text server: a text.Env whose
// Reset opens a session built from the task (the server's from_dict and
// reset) and whose Step sends the action. Close it when the episode ends
// (a session the server holds otherwise lasts until the TextEnv is
// garbage collected or the pool closes). Its methods are safe to call
// from several goroutines; calls wait for each other.
type TextEnv struct {
	p    *TextPool
	task envs.Params

	mu        sync.Mutex
	s         *session // the current episode's, or nil
	done      bool
	succeeded bool
	closed    bool
}

// textEnvSuccess is a TextEnv of a server that reports success.
type textEnvSuccess struct{ *TextEnv }

// Succeeded implements text.Succeeder: whether the episode that ended
// succeeded, as the server said.
func (e textEnvSuccess) Succeeded() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.done && e.succeeded
}

// NewEnv returns an environment for task (the task row with the
// connection's keys left out). It is a text.Succeeder when the servers
// report success.
func (p *TextPool) NewEnv(task envs.Params) text.Env {
	e := &TextEnv{p: p, task: task}
	if p.reportsSuccess {
		return textEnvSuccess{e}
	}
	return e
}

// MaxTurns implements text.TurnLimiter: the server's turn limit (0: none).
func (e *TextEnv) MaxTurns() int { return e.p.maxTurns }

// String names the environment and its servers.
func (e *TextEnv) String() string {
	return fmt.Sprintf("remote text environment %s (%s)", e.p.name, e.p.workers[0].describe())
}

func (w *textWorker) describe() string {
	if w.addr != "" {
		return "at " + w.addr
	}
	return "`" + strings.Join(w.p.o.Command, " ") + "`"
}

// Reset implements text.Env: it ends the episode under way and opens a
// session for task (nil: the task the environment was built from) on the
// least busy worker.
func (e *TextEnv) Reset(task envs.Params) (string, text.Info, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return "", nil, errors.New("the remote text environment was closed")
	}
	e.endLocked()
	if task == nil {
		task = e.task
	} else {
		_, task = SplitTextArgs(task)
	}
	body, err := json.Marshal(task)
	if err != nil {
		return "", nil, fmt.Errorf("the task cannot be sent to the remote text environment as JSON: %v", err)
	}
	if len(body) > e.p.o.MaxFrameBytes {
		return "", nil, fmt.Errorf("the task is %d bytes of JSON, over env.args.max_frame_bytes = %d", len(body), e.p.o.MaxFrameBytes)
	}
	w := e.p.pick()
	w.mu.Lock()
	defer w.mu.Unlock()
	conn, err := w.ready()
	if err != nil {
		return "", nil, err
	}
	sid, closes, err := conn.text.openSession()
	if err != nil {
		return "", nil, w.wrap(conn.errorf("text_reset", "%v", err))
	}
	s := &session{w: w, conn: conn, id: sid, live: true}
	rep, err := conn.textCall("text_reset", sid, closes, body)
	if err != nil {
		return "", nil, e.failed(s, err)
	}
	e.s, e.done, e.succeeded = s, false, false
	runtime.AddCleanup(e, func(s *session) { s.end(true) }, s)
	return rep.obs, rep.info, nil
}

// Step implements text.Env.
func (e *TextEnv) Step(action string) (string, float64, bool, text.Info, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return "", 0, true, nil, errors.New("the remote text environment was closed")
	case e.done:
		return "", 0, true, nil, errors.New("the episode is over (done); Reset starts another")
	case e.s == nil:
		return "", 0, true, nil, errors.New("Step before Reset: the remote text environment has no episode under way")
	}
	s := e.s
	if !utf8.ValidString(action) { // a model may stop inside a character
		action = strings.ToValidUTF8(action, "\uFFFD")
	}
	if len(action) > e.p.o.MaxFrameBytes {
		err := fmt.Errorf("the action is %d bytes, over env.args.max_frame_bytes = %d", len(action), e.p.o.MaxFrameBytes)
		e.endLocked()
		return "", 0, true, nil, err
	}
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn != s.conn || s.conn.broken != nil {
		cause := s.conn.broken
		if cause == nil {
			cause = errors.New("its connection was closed")
		}
		e.s = nil
		s.end(false)
		return "", 0, true, nil, fmt.Errorf("this episode's environment was lost with its worker: %w", w.wrap(cause))
	}
	rep, err := s.conn.textCall("text_step", s.id, s.conn.text.takeClosing(), []byte(action))
	if err != nil {
		return "", 0, true, nil, e.failed(s, err)
	}
	if rep.done {
		s.end(false) // the server closed it
		e.done, e.succeeded = true, rep.succeeded
	}
	return rep.obs, rep.reward, rep.done, rep.info, nil
}

// failed ends session s after err (e.mu and the worker's mu held) and
// returns err naming the worker.
func (e *TextEnv) failed(s *session, err error) error {
	e.s = nil
	var se *sessionError
	if errors.As(err, &se) {
		s.end(!se.ended)
		return s.w.wrap(err)
	}
	s.end(false) // the connection is gone, and its sessions with it
	return s.w.failed(s.conn, err)
}

// endLocked gives the current session back (e.mu held).
func (e *TextEnv) endLocked() {
	if e.s != nil {
		e.s.end(true)
		e.s = nil
	}
}

// Close implements io.Closer: the server closes the episode's environment
// with the worker's next request. The pool's connections stay open.
func (e *TextEnv) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.endLocked()
	e.closed = true
	return nil
}

// The pools remote-text's registration opens, shared by the environments
// of the same connection settings (one per episode) and kept until
// CloseTextPools.
var shared struct {
	mu    sync.Mutex
	pools map[string]*sharedPool
}

type sharedPool struct {
	ready chan struct{} // closed once pool or err is set
	pool  *TextPool
	err   error
}

// maxSharedPools bounds the connection settings open at once: task rows
// that carry connection keys (command, address, …) would otherwise start
// servers row by row.
const maxSharedPools = 16

// newSharedTextEnv is remote-text's constructor: the connection settings of
// task (a row merged with env.args) find or open a shared pool, and the
// rest is the task.
func newSharedTextEnv(merged envs.Params) (text.Env, error) {
	conn, task := SplitTextArgs(merged)
	key, err := json.Marshal(conn)
	if err != nil {
		key = []byte(fmt.Sprint(conn))
	}
	shared.mu.Lock()
	if shared.pools == nil {
		shared.pools = map[string]*sharedPool{}
	}
	sp, ok := shared.pools[string(key)]
	if !ok {
		o, err := ParseTextArgs(conn)
		if err != nil {
			shared.mu.Unlock()
			return nil, &envs.ArgsError{Err: fmt.Errorf("%v%s", err, misspeltConnKeys(task))}
		}
		if len(shared.pools) >= maxSharedPools {
			shared.mu.Unlock()
			return nil, fmt.Errorf("remote-text already holds %d servers of different settings: do the task rows carry connection keys (%s)? Those belong in env.args",
				maxSharedPools, strings.Join(textArgKeys, ", "))
		}
		sp = &sharedPool{ready: make(chan struct{})}
		shared.pools[string(key)] = sp
		shared.mu.Unlock()
		sp.pool, sp.err = OpenTextPool(o)
		if sp.err != nil { // the next episode tries again
			shared.mu.Lock()
			delete(shared.pools, string(key))
			shared.mu.Unlock()
		}
		close(sp.ready)
	} else {
		shared.mu.Unlock()
		<-sp.ready
	}
	if sp.err != nil {
		return nil, sp.err
	}
	return sp.pool.NewEnv(task), nil
}

// misspeltConnKeys names the task keys that look like misspelt connection
// keys (a task key is anything else, so a typo is not refused as such).
func misspeltConnKeys(task envs.Params) string {
	var hints []string
	for _, k := range slices.Sorted(maps.Keys(task)) {
		if near := suggest.Names(k, textArgKeys); len(near) > 0 {
			hints = append(hints, fmt.Sprintf("env.args.%s%s", k, suggest.DidYouMean(near)))
		}
	}
	if len(hints) == 0 {
		return ""
	}
	return " (" + strings.Join(hints, "; ") + ")"
}

// CloseTextPools closes the pools remote-text's registration opened
// (stopping the servers it started); later environments open new ones.
// A training calls it when it ends.
func CloseTextPools() {
	shared.mu.Lock()
	pools := shared.pools
	shared.pools = nil
	shared.mu.Unlock()
	for _, sp := range pools {
		<-sp.ready
		if sp.pool != nil {
			sp.pool.Close()
		}
	}
}
