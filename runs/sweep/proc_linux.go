package sweep

import "syscall"

// trialProcAttr makes a trial get SIGTERM when the sweep process dies
// (even by SIGKILL): it then writes a final checkpoint, and --resume
// continues it.
func trialProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
