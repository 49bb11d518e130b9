package memlimit

import (
	"os"
	"testing"
)

// On Linux the limit follows MemAvailable: positive and below the machine's
// total; elsewhere it is the fallback.
func TestAvailable(t *testing.T) {
	got := Available()
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		if got != Fallback {
			t.Fatalf("without /proc/meminfo: %d, want %d", got, Fallback)
		}
		return
	}
	if got <= 0 || got == Fallback {
		t.Fatalf("Available() = %d with /proc/meminfo present", got)
	}
}
