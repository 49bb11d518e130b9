// Package control lets a training run be watched and steered from other
// processes: the trainer serves a Unix socket (owner-only) beside its run
// directory, and clients — the terminal app after `agenttrainer attach`, an
// SSH session, `agenttrainer ps` — connect to it. The protocol is one JSON
// object per line; each subscriber gets its own lossy event stream, so a
// slow or vanished viewer never slows the training.
package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agenttrainer/agenttrainer/internal/inputfile"
	"github.com/agenttrainer/agenttrainer/trainer"
)

// Version is the protocol version a client and server must share.
const Version = 1

// Files in a run directory.
const (
	SocketFile = "control.sock"
	// InfoFile says where the socket is (it may live in a short temporary
	// path when the run directory's path is too long for a socket) and
	// which process serves it.
	InfoFile = "control.json"
)

// Endpoint is the content of InfoFile.
type Endpoint struct {
	Version int       `json:"version"`
	Socket  string    `json:"socket"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// request is a client's message.
type request struct {
	Op    string `json:"op"` // hello, info, config, pause, resume, stop, save, edit, subscribe
	Key   string `json:"key,omitempty"`
	Value string `json:"value,omitempty"`
	// Buffer is a subscriber's queue length.
	Buffer int `json:"buffer,omitempty"`
}

// response answers a request, or carries one event on a subscription.
type response struct {
	OK      bool          `json:"ok"`
	Error   string        `json:"error,omitempty"`
	Version int           `json:"version,omitempty"`
	Info    *trainer.Info `json:"info,omitempty"`
	Config  string        `json:"config,omitempty"` // TOML
	Paused  bool          `json:"paused,omitempty"`
	Event   *wireEvent    `json:"event,omitempty"`

	// Dir is the run directory the training serves (absolute), in the
	// answer to hello: a client that found the socket through a copied
	// control.json learns that it reached another run's training.
	Dir string `json:"dir,omitempty"`
}

// wireEvent is trainer.Event with its error as text.
type wireEvent struct {
	Kind    trainer.EventKind `json:"kind"`
	Time    time.Time         `json:"time"`
	Metrics *trainer.Metrics  `json:"metrics,omitempty"`
	Message string            `json:"message,omitempty"`
	Edit    *trainer.Edit     `json:"edit,omitempty"`
	State   trainer.State     `json:"state,omitempty"`
	Err     string            `json:"err,omitempty"`
	// Checkpoint is the path an EventCheckpoint announces.
	Checkpoint string `json:"checkpoint,omitempty"`
	Pinned     bool   `json:"pinned,omitempty"`
}

func toWire(e trainer.Event) *wireEvent {
	w := &wireEvent{Kind: e.Kind, Time: e.Time, Message: e.Message, State: e.State, Checkpoint: e.Checkpoint, Pinned: e.Pinned}
	if e.Kind == trainer.EventMetrics {
		m := e.Metrics
		w.Metrics = &m
	}
	if e.Kind == trainer.EventEdit {
		ed := e.Edit
		w.Edit = &ed
	}
	if e.Err != nil {
		w.Err = e.Err.Error()
	}
	return w
}

func (w *wireEvent) event() trainer.Event {
	e := trainer.Event{Kind: w.Kind, Time: w.Time, Message: w.Message, State: w.State, Checkpoint: w.Checkpoint, Pinned: w.Pinned}
	if w.Metrics != nil {
		e.Metrics = *w.Metrics
	}
	if w.Edit != nil {
		e.Edit = *w.Edit
	}
	if w.Err != "" {
		e.Err = errors.New(w.Err)
	}
	return e
}

// maxInfoFile bounds control.json (the program writes about 150 bytes).
const maxInfoFile = 64 << 10

// ReadEndpoint reads a run directory's InfoFile.
func ReadEndpoint(runDir string) (Endpoint, error) {
	var ep Endpoint
	b, err := inputfile.Read(filepath.Join(runDir, InfoFile), maxInfoFile, "control endpoint file")
	if errors.Is(err, os.ErrNotExist) {
		return ep, fmt.Errorf("%s has no live training (no %s); start one with `agenttrainer train --detach`, or continue it with `agenttrainer train --resume %s`", runDir, InfoFile, runDir)
	}
	if err != nil {
		return ep, err
	}
	if err := json.Unmarshal(b, &ep); err != nil {
		return ep, fmt.Errorf("%s: %v", filepath.Join(runDir, InfoFile), err)
	}
	if ep.Version != Version {
		return ep, fmt.Errorf("%s speaks control protocol %d, this program %d; attach with the same agenttrainer version", runDir, ep.Version, Version)
	}
	return ep, nil
}
