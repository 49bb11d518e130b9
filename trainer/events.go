package trainer

import (
	"slices"
	"sync"
	"time"

	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// EventKind says what an Event carries.
type EventKind uint8

const (
	EventStarted    EventKind = iota // the run directory exists and training begins
	EventMetrics                     // one iteration's metrics
	EventLog                         // a line for the log pane
	EventEdit                        // a live config edit was applied
	EventState                       // paused or resumed
	EventDone                        // the run ended (Err set if it failed)
	EventCheckpoint                  // a checkpoint was written (Checkpoint is its path)
)

// State is the lifecycle state of a run.
type State string

const (
	StateRunning State = "running"
	StatePaused  State = "paused"
	StateDone    State = "done"
	StateStopped State = "stopped"
	StateFailed  State = "failed"
)

// Event is one message on a trainer's event stream.
type Event struct {
	Kind    EventKind
	Time    time.Time
	Metrics Metrics // EventMetrics
	Message string  // EventLog, EventState, EventEdit
	Edit    Edit    // EventEdit
	State   State   // EventState, EventDone
	Err     error   // EventDone
	// Checkpoint is the path of the checkpoint an EventCheckpoint
	// announces; Pinned, that it was asked for by hand and the rotation
	// keeps it.
	Checkpoint string
	Pinned     bool
}

// Metrics, Float and Edit are the records of a run directory's
// metrics.jsonl and edits.jsonl, which the trainer publishes as events.
type (
	Metrics = runstore.Metrics
	Float   = runstore.Float
	Edit    = runstore.Edit
)

// broker fans events out to subscribers. Publishing never blocks: a
// subscriber that does not keep up loses events rather than slowing the
// trainer. Lifecycle events (state changes, the end of the run) displace the
// oldest queued event instead of being dropped, so every viewer learns how
// the run ended.
//
// It also keeps the run's recent log (every event but metrics, the last
// recentEvents of them, and the latest state change however old) and
// replays it to each new subscriber first: a viewer that attaches late, or
// again, sees what the log said and whether the run is paused.
type broker struct {
	mu     sync.Mutex
	subs   map[chan Event]struct{}
	recent []Event // oldest first, at most recentEvents
	state  *Event  // the latest EventState
	done   *Event  // the EventDone, once published
}

// recentEvents bounds the log a broker keeps for viewers that attach later.
const recentEvents = 200

func newBroker() *broker { return &broker{subs: map[chan Event]struct{}{}} }

func (b *broker) subscribe(buffer int) (<-chan Event, func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	replay := b.replay()
	ch := make(chan Event, max(buffer, len(replay)+1, 1))
	for _, e := range replay {
		ch <- e
	}
	if b.done != nil { // the run is over: its end, and nothing more
		ch <- *b.done
		close(ch)
		return ch, func() {}
	}
	b.subs[ch] = struct{}{}
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[ch]; ok {
			delete(b.subs, ch)
			close(ch)
		}
	}
}

// replay is the recent log with the latest state change in its place (put
// first when it is older than the log kept).
func (b *broker) replay() []Event {
	out := make([]Event, 0, len(b.recent)+1)
	if b.state != nil && !slices.ContainsFunc(b.recent, func(e Event) bool { return e.Kind == EventState }) {
		out = append(out, *b.state)
	}
	return append(out, b.recent...)
}

// keep adds e to the recent log.
func (b *broker) keep(e Event) {
	switch e.Kind {
	case EventMetrics:
		return
	case EventState:
		b.state = &e
	case EventDone:
		b.done = &e
		return
	}
	if len(b.recent) == recentEvents {
		b.recent = append(b.recent[:0], b.recent[1:]...)
	}
	b.recent = append(b.recent, e)
}

// Lifecycle reports whether events of this kind (the start, state changes,
// checkpoints, the end) must reach every viewer: queues drop older events to make room
// for them instead of dropping them.
func (k EventKind) Lifecycle() bool {
	return k == EventDone || k == EventState || k == EventStarted || k == EventCheckpoint
}

func (b *broker) publish(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.keep(e)
	for ch := range b.subs {
		Offer(ch, e)
	}
}

// Offer queues e for a viewer without ever blocking: when the queue is
// full an ordinary event is dropped, and a lifecycle event drops the oldest
// queued one to make room. The caller must be ch's only sender (the broker
// under its lock, a socket client's reader), so the retry cannot block.
func Offer(ch chan Event, e Event) {
	select {
	case ch <- e:
		return
	default:
	}
	if !e.Kind.Lifecycle() {
		return
	}
	select { // make room by dropping the oldest event
	case <-ch:
	default:
	}
	select {
	case ch <- e:
	default:
	}
}

// closeAll ends every subscription (after EventDone).
func (b *broker) closeAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		delete(b.subs, ch)
		close(ch)
	}
}
