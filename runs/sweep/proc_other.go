//go:build !linux

package sweep

import "syscall"

// trialProcAttr: without Linux's parent-death signal, a trial outlives a
// killed sweep process; --resume stops it over its control socket first.
func trialProcAttr() *syscall.SysProcAttr { return nil }
