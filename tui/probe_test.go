package tui

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// probeLive dials runs' sockets side by side: every probe here waits until
// two are in flight at once, which one after another never are, and each
// run's answer lands on its own directory.
func TestProbeLiveConcurrent(t *testing.T) {
	var runs []runstore.RunInfo
	for i := range 40 {
		runs = append(runs, runstore.RunInfo{Dir: fmt.Sprintf("runs/%02d", i)})
	}
	var mu sync.Mutex
	inFlight, most := 0, 0
	both := make(chan struct{})
	var once sync.Once
	live := func(dir string) bool {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		if inFlight >= 2 {
			once.Do(func() { close(both) })
		}
		mu.Unlock()
		select {
		case <-both:
		case <-time.After(time.Minute):
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		return dir[len(dir)-1]%2 == 0
	}
	got := probeLive(runs, live)
	if most < 2 {
		t.Errorf("at most %d probe in flight at once, want them side by side", most)
	}
	if most > probeWorkers {
		t.Errorf("%d probes in flight at once, more than %d", most, probeWorkers)
	}
	for _, r := range runs {
		if want := r.Dir[len(r.Dir)-1]%2 == 0; got[r.Dir] != want {
			t.Errorf("%s live = %v, want %v", r.Dir, got[r.Dir], want)
		}
	}
}
