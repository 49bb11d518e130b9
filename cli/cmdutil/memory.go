package cmdutil

import (
	"os"
	"strconv"
	"strings"
)

// MemoryLimit is how much memory a command may plan to use before a large
// allocation: 80 % of what the kernel reports available (MemAvailable), as
// the trainer plans, or 8 GiB where that cannot be read.
func MemoryLimit() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 8 << 30
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err == nil && kb > 0 {
				return int64(0.8 * kb * 1024)
			}
		}
	}
	return 8 << 30
}
