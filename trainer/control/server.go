package control

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// writeTimeout bounds how long a client may take no bytes of a write: a
// viewer that stops reading is dropped instead of holding anything up.
const writeTimeout = 5 * time.Second

// maxSocketPath keeps within sockaddr_un's 108 bytes on Linux.
const maxSocketPath = 100

// Bounds on what viewers can make a training hold: connections at once,
// and events queued for each subscriber (about 200 bytes each), so that
// viewers that never read cost at most a few megabytes.
const (
	MaxConnections     = 32
	MaxSubscriberQueue = 1024
)

// MaxPinned bounds the checkpoints a run keeps because they were asked for
// by hand (save): each stays through every rotation, so without a bound a
// client repeating save would fill the disk.
const MaxPinned = 32

// Server serves one training run's control socket.
type Server struct {
	t       *trainer.Trainer
	ln      net.Listener
	runDir  string
	absDir  string // runDir, absolute: what hello says
	sock    string
	tempDir string // set when the socket lives outside the run directory
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	closed  bool
	// sameUser decides whether a connecting process may control the run
	// (tests replace it).
	sameUser func(net.Conn) error
}

// Serve listens on runDir's control socket (creating runDir if need be)
// and answers clients until Close. The socket is owner-only and every
// connection's peer must be the same user.
func Serve(t *trainer.Trainer, runDir string) (*Server, error) {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, err
	}
	s := &Server{t: t, runDir: runDir, conns: map[net.Conn]struct{}{}, sameUser: peerIsOwner}
	s.absDir, _ = filepath.Abs(runDir)
	s.sock = filepath.Join(runDir, SocketFile)
	if abs, err := filepath.Abs(s.sock); err == nil && len(abs) > maxSocketPath {
		dir, err := os.MkdirTemp("", "agenttrainer-") // mode 0700
		if err != nil {
			return nil, err
		}
		s.tempDir, s.sock = dir, filepath.Join(dir, SocketFile)
	}
	os.Remove(s.sock) // left by a run that crashed
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", s.sock)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", s.sock, err)
	}
	if err := os.Chmod(s.sock, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	s.ln = ln
	abs, _ := filepath.Abs(s.sock)
	ep, _ := json.Marshal(Endpoint{Version: Version, Socket: abs, PID: os.Getpid(), Started: time.Now()})
	if err := atomicfile.Write(filepath.Join(runDir, InfoFile), ep, 0o644); err != nil {
		ln.Close()
		return nil, err
	}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Socket is the path of the listening socket.
func (s *Server) Socket() string { return s.sock }

// closeGrace is how long Close lets subscribers receive the run's last
// events before it cuts their connections.
const closeGrace = 2 * time.Second

// Close stops listening, lets subscribers receive what is queued for them
// (the end of the run, when the training is over) for up to closeGrace,
// ends the remaining connections and removes the socket and its InfoFile,
// so that `agenttrainer ps` no longer lists the run.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	err := s.ln.Close()
	drained := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(closeGrace):
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		<-drained
	}
	os.Remove(filepath.Join(s.runDir, InfoFile))
	os.Remove(s.sock)
	if s.tempDir != "" {
		os.Remove(s.tempDir)
	}
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		if len(s.conns) >= MaxConnections {
			s.mu.Unlock()
			s.wg.Add(1)
			go func() { // answered aside, so a slow refusal holds up no one
				defer s.wg.Done()
				refuse(c, fmt.Sprintf("too many connections to this training (%d, the limit); close a viewer and try again", MaxConnections))
				c.Close()
			}()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.serve(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		}()
	}
}

func send(c net.Conn, r response) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	c.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err = c.Write(append(b, '\n'))
	return err
}

// serve answers one connection's requests until it closes or subscribes.
func (s *Server) serve(c net.Conn) {
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 4096), 1<<16)
	if err := s.sameUser(c); err != nil {
		refuse(c, "refused: "+err.Error())
		return
	}
	for sc.Scan() {
		var req request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			send(c, response{Error: fmt.Sprintf("bad request (not JSON): %v", err)})
			return
		}
		if req.Op == "subscribe" {
			s.stream(c, sc, req.Buffer)
			return
		}
		if err := send(c, s.handle(req)); err != nil {
			return
		}
	}
}

func (s *Server) handle(req request) response {
	t := s.t
	switch req.Op {
	case "hello":
		return response{OK: true, Version: Version, Dir: s.absDir}
	case "info":
		info := t.Info()
		if info.RunDir == "" {
			info.RunDir = s.runDir
		}
		return response{OK: true, Info: &info, Paused: t.Paused()}
	case "config":
		cfg := t.Config()
		return response{OK: true, Config: cfg.TOML()}
	case "pause":
		t.Pause()
	case "resume":
		t.Resume()
	case "stop":
		t.Stop()
	case "save":
		// One save asked for before may still be on its way to its pin.
		if n := runstore.CountPinned(filepath.Join(s.runDir, runstore.CheckpointsDir)); n >= MaxPinned-1 {
			return response{Error: fmt.Sprintf("%d checkpoints of this run are pinned already (the most a run keeps asked for by hand); remove some step-N.safetensors.pinned files in %s to pin more",
				n, filepath.Join(s.runDir, runstore.CheckpointsDir))}
		}
		t.SaveCheckpoint()
	case "edit":
		if err := t.Edit(req.Key, req.Value); err != nil {
			return response{Error: err.Error()}
		}
	default:
		return response{Error: fmt.Sprintf("unknown operation %q", req.Op)}
	}
	return response{OK: true}
}

// stream forwards the run's events to a subscriber until the run ends, the
// subscriber goes away, or a write times out.
func (s *Server) stream(c net.Conn, sc *bufio.Scanner, buffer int) {
	events, unsubscribe := s.t.Subscribe(min(max(buffer, 16), MaxSubscriberQueue))
	defer unsubscribe()
	gone := make(chan struct{})
	go func() { // a subscriber sends nothing more; EOF means it left
		for sc.Scan() {
		}
		close(gone)
	}()
	if err := send(c, response{OK: true, Version: Version}); err != nil {
		return
	}
	var batch []byte
	for {
		select {
		case e, ok := <-events:
			if !ok {
				return
			}
			// What else is queued goes in the same write.
			batch = appendEvent(batch[:0], e)
			ended := false
		drain:
			for {
				select {
				case e, ok := <-events:
					if !ok {
						ended = true
						break drain
					}
					batch = appendEvent(batch, e)
				default:
					break drain
				}
			}
			if err := writeProgressing(c, batch, writeTimeout); err != nil || ended {
				return
			}
			// Events that arrive meanwhile wait in the queue for the next write.
			select {
			case <-gone:
				return
			case <-time.After(streamInterval):
			}
		case <-gone:
			return
		}
	}
}

// writeProgressing writes b to a subscriber, dropping it (an error) only
// when a whole timeout passes with no byte taken. A batch can be hundreds
// of KiB (a full queue of events, after a slow read), and a viewer starved
// of CPU on a loaded machine reads it slowly but reads it: one deadline for
// the whole batch dropped such viewers, who saw their run as lost.
func writeProgressing(c net.Conn, b []byte, timeout time.Duration) error {
	for len(b) > 0 {
		c.SetWriteDeadline(time.Now().Add(timeout))
		n, err := c.Write(b)
		b = b[n:]
		if err != nil && (n == 0 || !errors.Is(err, os.ErrDeadlineExceeded)) {
			return err
		}
	}
	return nil
}

// streamInterval is the least time between two writes to a subscriber;
// the events of a fast run (hundreds of iterations a second) go out
// together instead of waking the viewer, and the trainer, for each: a
// viewer needs no more than 20 updates a second.
const streamInterval = 50 * time.Millisecond

// appendEvent appends an event's line to a subscriber's batch.
func appendEvent(batch []byte, e trainer.Event) []byte {
	b, err := json.Marshal(response{OK: true, Event: toWire(e)})
	if err != nil { // an event is plain data: this does not happen
		return batch
	}
	return append(append(batch, b...), '\n')
}

// refuse answers a connection's first request with why it is refused.
// The request is read first: closing with it unread would break the
// client's write, and it would never read the reason.
func refuse(c net.Conn, why string) {
	c.SetReadDeadline(time.Now().Add(writeTimeout))
	bufio.NewReader(io.LimitReader(c, 1<<16)).ReadString('\n')
	send(c, response{Error: why})
}

var errOtherUser = errors.New("the training belongs to another user")
