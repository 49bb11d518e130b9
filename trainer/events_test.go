package trainer

import (
	"fmt"
	"testing"
	"time"
)

// A viewer that subscribes late first gets the recent log and the latest
// state change (a paused run says so), then what follows; one that
// subscribes after the end gets the end and a closed stream.
func TestBrokerReplaysTheRecentLog(t *testing.T) {
	b := newBroker()
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	b.publish(Event{Kind: EventStarted, Time: at, Message: "runs/a"})
	b.publish(Event{Kind: EventState, Time: at, State: StatePaused, Message: "paused at step 512"})
	for i := range recentEvents + 10 { // pushes the state change out of the kept log
		b.publish(Event{Kind: EventLog, Time: at, Message: fmt.Sprintf("line %d", i)})
		b.publish(Event{Kind: EventMetrics, Time: at})
	}
	events, unsubscribe := b.subscribe(4)
	var got []Event
	for range recentEvents + 1 {
		got = append(got, <-events)
	}
	if got[0].Kind != EventState || got[0].State != StatePaused {
		t.Fatalf("the replay does not begin with the latest state: %+v", got[0])
	}
	if got[1].Message != "line 10" || got[len(got)-1].Message != fmt.Sprintf("line %d", recentEvents+9) {
		t.Errorf("replayed log runs %q … %q", got[1].Message, got[len(got)-1].Message)
	}
	for _, e := range got {
		if e.Kind == EventMetrics {
			t.Fatal("metrics are replayed")
		}
	}
	b.publish(Event{Kind: EventLog, Message: "after"})
	if e := <-events; e.Message != "after" {
		t.Errorf("a live event after the replay: %+v", e)
	}
	unsubscribe()

	b.publish(Event{Kind: EventDone, State: StateDone, Message: "run done"})
	b.closeAll()
	late, _ := b.subscribe(1)
	var last Event
	n := 0
	for e := range late { // closed after the end
		last = e
		n++
	}
	if last.Kind != EventDone || n != recentEvents+2 { // the state, the log, the end
		t.Errorf("after the end: %d events, the last %+v", n, last)
	}
}
