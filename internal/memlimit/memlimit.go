// Package memlimit is the one answer to how much memory a command may plan
// to use before a large allocation (the trainer's estimate, a model's
// load): 80 % of what the kernel reports available, or 8 GiB where that
// cannot be read.
package memlimit

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Fallback is the limit where /proc/meminfo cannot be read.
const Fallback = 8 << 30

// Available returns 80 % of MemAvailable in bytes, or Fallback.
func Available() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return Fallback
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err == nil && kb > 0 {
				return int64(0.8 * kb * 1024)
			}
		}
	}
	return Fallback
}
