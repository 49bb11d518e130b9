package control

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/agenttrainer/agenttrainer/internal/termtext"
	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// dialTimeout bounds connecting and every request's round trip; a
// training answers hello from the goroutine that accepted the
// connection, so helloTimeout can be short, and a socket that never
// answers (a stopped process, a listener that is not a training) costs a
// lister like ps little.
const (
	dialTimeout  = 5 * time.Second
	helloTimeout = 2 * time.Second
)

// maxAnswer bounds one line the training sends (an answer or an event):
// the largest, a config, is a few KiB.
const maxAnswer = 1 << 20

// Client watches and steers a run in another process. It has the methods
// of *trainer.Trainer that a viewer uses, so the terminal app drives either.
type Client struct {
	runDir string
	ep     Endpoint
	mu     sync.Mutex
	conn   net.Conn
	rd     *bufio.Reader
	info   trainer.Info
}

// Dial connects to the training running in runDir.
func Dial(runDir string) (*Client, error) {
	ep, err := ReadEndpoint(runDir)
	if err != nil {
		return nil, err
	}
	c := &Client{runDir: runDir, ep: ep}
	if c.conn, c.rd, err = c.connect(); err != nil {
		return nil, err
	}
	r, err := c.callWithin(request{Op: "hello"}, helloTimeout)
	if err != nil {
		c.conn.Close()
		return nil, err
	}
	if r.Version != Version {
		c.conn.Close()
		return nil, fmt.Errorf("%s speaks control protocol %d, this program %d", runDir, r.Version, Version)
	}
	if err := sameRun(runDir, r.Dir); err != nil {
		c.conn.Close()
		return nil, err
	}
	return c, nil
}

// sameRun checks that the training that answered serves runDir: a run
// directory copied (cp -a) while it trained carries the original's
// control.json, whose socket is the original's training, and steering it
// from the copy (or listing the copy as live) would reach the wrong run.
func sameRun(runDir, served string) error {
	if served == "" {
		return nil // a training that does not say
	}
	a, err1 := os.Stat(runDir)
	b, err2 := os.Stat(served)
	if err1 == nil && err2 == nil && os.SameFile(a, b) {
		return nil
	}
	return fmt.Errorf("%s holds no live training: its %s names the socket of the training in %s (the directory was copied?); `agenttrainer train --resume %s` continues this copy",
		runDir, InfoFile, served, runDir)
}

func (c *Client) connect() (net.Conn, *bufio.Reader, error) {
	conn, err := net.DialTimeout("unix", c.ep.Socket, dialTimeout)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return nil, nil, fmt.Errorf("the training in %s (pid %d) is not running any more; `agenttrainer train --resume %s` continues it", c.runDir, c.ep.PID, c.runDir)
		}
		return nil, nil, fmt.Errorf("cannot reach the training in %s: %w", c.runDir, err)
	}
	// Only this user's own training may answer: control.json may name any
	// socket, and what answers there is believed (and shown).
	if err := peerIsOwner(conn); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("%s names a socket served by another user's process; not talking to it: %v", filepath.Join(c.runDir, InfoFile), err)
	}
	return conn, bufio.NewReaderSize(conn, 64<<10), nil
}

// readLine reads one line of at most maxAnswer bytes.
func readLine(rd *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := rd.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxAnswer {
			return nil, fmt.Errorf("an answer of more than %d bytes, which no training sends", maxAnswer)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// call sends one request and reads its answer.
func (c *Client) call(req request) (response, error) { return c.callWithin(req, dialTimeout) }

func (c *Client) callWithin(req request, d time.Duration) (response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, _ := json.Marshal(req)
	c.conn.SetDeadline(time.Now().Add(d))
	defer c.conn.SetDeadline(time.Time{})
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		return response{}, c.lost(err)
	}
	line, err := readLine(c.rd)
	if err != nil {
		return response{}, c.lost(err)
	}
	var r response
	if err := json.Unmarshal(line, &r); err != nil {
		return response{}, fmt.Errorf("bad answer from the training: %v", err)
	}
	if !r.OK {
		return r, errors.New(r.Error)
	}
	return r, nil
}

func (c *Client) lost(err error) error {
	return fmt.Errorf("lost the connection to the training in %s (pid %d): %v", c.runDir, c.ep.PID, err)
}

// Close ends the connection; the training goes on.
func (c *Client) Close() error { return c.conn.Close() }

// PID is the training process.
func (c *Client) PID() int { return c.ep.PID }

// Info describes the run (the last known description if the call fails).
func (c *Client) Info() trainer.Info {
	if r, err := c.call(request{Op: "info"}); err == nil && r.Info != nil {
		c.info = *r.Info
		// Shown by the app and ps: a run directory's name may hold
		// control characters.
		c.info.RunDir, c.info.Device = termtext.Clean(c.info.RunDir), termtext.Clean(c.info.Device)
		c.info.EnvID, c.info.Agent = termtext.Clean(c.info.EnvID), termtext.Clean(c.info.Agent)
	}
	if c.info.RunDir == "" {
		c.info.RunDir = c.runDir
	}
	return c.info
}

// Paused reports whether the run is paused.
func (c *Client) Paused() bool {
	r, err := c.call(request{Op: "info"})
	return err == nil && r.Paused
}

// Config is the run's config, live edits included.
func (c *Client) Config() config.Config {
	cfg := config.Default()
	if r, err := c.call(request{Op: "config"}); err == nil {
		cfg.LoadTOML(r.Config, "the training's config")
	}
	return cfg
}

// Pause, Resume, Stop and SaveCheckpoint steer the run.
func (c *Client) Pause() { c.call(request{Op: "pause"}) }

// Resume continues a paused run.
func (c *Client) Resume() { c.call(request{Op: "resume"}) }

// Stop ends the run, keeping what it did.
func (c *Client) Stop() { c.call(request{Op: "stop"}) }

// SaveCheckpoint asks for a checkpoint at the next iteration.
func (c *Client) SaveCheckpoint() { c.call(request{Op: "save"}) }

// Edit changes a live key; refusals come back as *config.Error.
func (c *Client) Edit(key, raw string) error {
	r, err := c.call(request{Op: "edit", Key: key, Value: raw})
	if err != nil && r.Error != "" {
		return &config.Error{Msg: r.Error}
	}
	return err
}

// Subscribe streams the run's events over a connection of its own. If the
// training process dies, the stream ends with a failed EventDone that says
// how to continue the run. A stream the training cut while it trains on
// (a viewer too slow to read, on a loaded machine) is subscribed again; the
// events in between are lost, as a slow subscriber's are anyway.
func (c *Client) Subscribe(buffer int) (<-chan trainer.Event, func()) {
	out := make(chan trainer.Event, max(buffer, 1))
	var mu sync.Mutex
	var conn net.Conn // the stream's connection now
	unsubscribed := false
	subscribe := func() (*bufio.Reader, error) {
		nc, rd, err := c.connect()
		if err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		if unsubscribed {
			nc.Close()
			return nil, errUnsubscribed
		}
		conn = nc
		b, _ := json.Marshal(request{Op: "subscribe", Buffer: buffer})
		nc.Write(append(b, '\n'))
		return rd, nil
	}
	rd, err := subscribe()
	if err != nil {
		out <- trainer.Event{Kind: trainer.EventDone, Time: time.Now(), State: trainer.StateFailed, Err: err, Message: err.Error()}
		close(out)
		return out, func() {}
	}
	go func() {
		defer close(out)
		for {
			forwarded, sawEnd := forward(rd, out)
			mu.Lock()
			conn.Close()
			gone := unsubscribed
			mu.Unlock()
			if sawEnd || gone {
				return
			}
			// Only a stream that delivered events is taken again: one cut
			// before its first (a refusal) would be retried for ever.
			if forwarded {
				if rd, err = subscribe(); err == nil {
					continue
				} else if errors.Is(err, errUnsubscribed) {
					return
				}
			}
			err := fmt.Errorf("lost the training in %s (pid %d); if it crashed, `agenttrainer train --resume %s` continues it", c.runDir, c.ep.PID, c.runDir)
			trainer.Offer(out, trainer.Event{Kind: trainer.EventDone, Time: time.Now(), State: trainer.StateFailed, Err: err, Message: err.Error()})
			return
		}
	}()
	return out, func() {
		mu.Lock()
		defer mu.Unlock()
		unsubscribed = true
		conn.Close()
	}
}

var errUnsubscribed = errors.New("unsubscribed")

// forward passes one stream's events to out until the stream ends; it
// reports whether it passed any, and whether the last was the run's end.
func forward(rd *bufio.Reader, out chan trainer.Event) (forwarded, sawEnd bool) {
	for {
		line, err := readLine(rd)
		if err != nil {
			return forwarded, sawEnd
		}
		var r response
		if json.Unmarshal(line, &r) != nil || r.Event == nil {
			continue
		}
		e := r.Event.event()
		e.Message, e.Checkpoint = termtext.CleanText(e.Message), termtext.Clean(e.Checkpoint)
		e.Err = termtext.Error(e.Err)
		forwarded, sawEnd = true, e.Kind == trainer.EventDone
		trainer.Offer(out, e) // lossy like the trainer's own subscriptions
	}
}
