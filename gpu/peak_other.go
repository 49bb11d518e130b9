//go:build !amd64 || purego

package gpu

// peakLoops: without assembly, the portable loop is the yardstick.
func peakLoops() []peakLoop { return nil }
