package control

import (
	"bytes"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// pacedConn is a subscriber's end as a write sees it: each Write hands the
// reader at most take[i] bytes before its deadline passes (the last entry
// repeats), and fails with err (a timeout unless set) when it took fewer.
type pacedConn struct {
	net.Conn
	take      []int
	err       error
	got       bytes.Buffer
	deadlines int
}

func (p *pacedConn) SetWriteDeadline(time.Time) error { p.deadlines++; return nil }

func (p *pacedConn) Write(b []byte) (int, error) {
	n := p.take[0]
	if len(p.take) > 1 {
		p.take = p.take[1:]
	}
	if n >= len(b) {
		p.got.Write(b)
		return len(b), nil
	}
	p.got.Write(b[:n])
	err := p.err
	if err == nil {
		err = &net.OpError{Op: "write", Net: "unix", Err: os.ErrDeadlineExceeded}
	}
	return n, err
}

// TestWriteProgressing: a subscriber is dropped when it takes nothing for a
// whole timeout, not when a large batch takes it longer than that (a viewer
// starved of CPU on a loaded machine lost its run that way).
func TestWriteProgressing(t *testing.T) {
	batch := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB, as after a slow read
	for _, tt := range []struct {
		name    string
		take    []int
		err     error
		wantErr bool
		wantGot int
	}{
		{"a reader that keeps up", []int{len(batch)}, nil, false, len(batch)},
		{"a slow reader: 4 KiB per timeout", []int{4096}, nil, false, len(batch)},
		{"a reader that stops after 8 KiB", []int{4096, 4096, 0}, nil, true, 8192},
		{"a reader that never reads", []int{0}, nil, true, 0},
		{"a reader that hung up", []int{1000}, syscall.EPIPE, true, 1000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &pacedConn{take: tt.take, err: tt.err}
			err := writeProgressing(c, batch, time.Second)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want an error: %v", err, tt.wantErr)
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("err %v, want %v", err, tt.err)
			}
			if c.got.Len() != tt.wantGot || !bytes.Equal(c.got.Bytes(), batch[:tt.wantGot]) {
				t.Errorf("the reader got %d bytes (in order: %v), want %d", c.got.Len(), bytes.Equal(c.got.Bytes(), batch[:min(c.got.Len(), len(batch))]), tt.wantGot)
			}
			if c.deadlines == 0 {
				t.Error("no write deadline set")
			}
		})
	}
}
