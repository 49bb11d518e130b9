//go:build amd64 && !purego

package gpu

import "golang.org/x/sys/cpu"

//go:noescape
func fmaLoop256(n int)

//go:noescape
func fmaLoop512(n int)

// peakLoops are the register-only multiply-add loops this machine can run,
// with the float32 operations one iteration performs.
func peakLoops() []peakLoop {
	var loops []peakLoop
	if hasFMA {
		loops = append(loops, peakLoop{"avx2 fma", fmaLoop256, 12 * 8 * 2})
	}
	if cpu.X86.HasAVX512F {
		loops = append(loops, peakLoop{"avx-512 fma", fmaLoop512, 12 * 16 * 2})
	}
	return loops
}
