package trainer

import (
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
type broker struct {
	mu   sync.Mutex
	subs map[chan Event]struct{}
}

func newBroker() *broker { return &broker{subs: map[chan Event]struct{}{}} }

func (b *broker) subscribe(buffer int) (<-chan Event, func()) {
	ch := make(chan Event, max(buffer, 1))
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[ch]; ok {
			delete(b.subs, ch)
			close(ch)
		}
	}
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
