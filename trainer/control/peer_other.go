//go:build !linux

package control

import "net"

// peerIsOwner relies on the socket's owner-only permissions where the
// platform has no SO_PEERCRED.
func peerIsOwner(net.Conn) error { return nil }
