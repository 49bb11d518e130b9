package runstore

import (
	"os"
	"path/filepath"
	"sync"
	"time"
)

// SummaryCache keeps run summaries (ReadRunInfo) keyed by the size and
// modification time of the files they are read from, so a browser that
// lists the same runs again reads only the runs that changed. Safe for
// concurrent use.
type SummaryCache struct {
	mu sync.Mutex
	m  map[string]cachedInfo
}

type cachedInfo struct {
	sig  [4]fileSig
	info RunInfo
}

type fileSig struct {
	size int64
	mod  time.Time
}

// summaryFiles are the files a summary is read from.
var summaryFiles = [4]string{ConfigFile, MetricsFile, EditsFile, MetaFile}

func signature(dir string) [4]fileSig {
	var s [4]fileSig
	for i, f := range summaryFiles {
		if st, err := os.Stat(filepath.Join(dir, f)); err == nil {
			s[i] = fileSig{st.Size(), st.ModTime()}
		}
	}
	return s
}

// Read is ReadRunInfo, from the cache when none of the run's files changed
// since it was last read.
func (c *SummaryCache) Read(dir string) RunInfo {
	sig := signature(dir)
	c.mu.Lock()
	e, ok := c.m[dir]
	c.mu.Unlock()
	if ok && e.sig == sig {
		return e.info
	}
	info := ReadRunInfo(dir)
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]cachedInfo{}
	}
	c.m[dir] = cachedInfo{sig: sig, info: info}
	c.mu.Unlock()
	return info
}

// Forget drops dir's summary (a run deleted or renamed).
func (c *SummaryCache) Forget(dir string) {
	c.mu.Lock()
	delete(c.m, dir)
	c.mu.Unlock()
}
