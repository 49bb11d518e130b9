//go:build linux

package control

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// peerIsOwner checks the connecting process's user with SO_PEERCRED: only
// the user running the training may watch or steer it.
func peerIsOwner(c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("not a Unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if credErr != nil {
		return fmt.Errorf("cannot tell who is connecting: %v", credErr)
	}
	return checkUID(int(cred.Uid), os.Getuid())
}
