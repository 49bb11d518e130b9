package remote

import (
	"bufio"
	"bytes"
	"math"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestDecodeHeaderIDs(t *testing.T) {
	for _, c := range []struct {
		in    string
		typ   string
		id    uint64
		hasID bool
		err   string
	}{
		{`{"type":"step","id":7}`, "step", 7, true, ""},
		{`{"type":"reset","id":18446744073709551615}`, "reset", math.MaxUint64, true, ""},
		{`{"type":"step","id":0}`, "step", 0, true, ""},
		{`{"id":7,"type":"step"}`, "step", 7, true, ""},
		{`{"type":"step","id":7,"success":[true]}`, "step", 7, true, ""},
		{`{"type":"step"}`, "step", 0, false, ""},
		{`{"type":"step","id":null}`, "step", 0, false, ""},
		{`{"type":"step","id":007}`, "", 0, false, "not a valid JSON object"},
		{`{"type":"step","id":-1}`, "", 0, false, `"id": "-1", want a whole number`},
		{`{"type":"step","id":1.5}`, "", 0, false, `"id": "1.5", want a whole number`},
		{`{"type":"step","id":"3"}`, "", 0, false, `want a whole number`},
		{`{"type":"step","id":18446744073709551616}`, "", 0, false, `want a whole number`},
		{`{"type":"step","id":}`, "", 0, false, "not a valid JSON object"},
		{`{"type":"step","id":`, "", 0, false, "not a valid JSON object"},
		{`{"type":"step","id":1x}`, "", 0, false, "not a valid JSON object"},
	} {
		var h frameHeader
		err := decodeHeader([]byte(c.in), &h)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one containing %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || h.Type != c.typ || h.ID != c.id || h.HasID != c.hasID {
			t.Errorf("%s: %+v, %v; want type %q id %d (has %v)", c.in, h, err, c.typ, c.id, c.hasID)
		}
	}
}

// TestDecodeHeaderFastPathAllocs keeps the common replies off the heap.
func TestDecodeHeaderFastPathAllocs(t *testing.T) {
	for _, in := range []string{`{"type":"step","id":123456}`, `{"type":"reset","id":2}`} {
		b := []byte(in)
		var h frameHeader
		if n := testing.AllocsPerRun(100, func() { decodeHeader(b, &h) }); n != 0 {
			t.Errorf("%s: %v allocations per decode", in, n)
		}
	}
	// And a whole step request, ids included.
	r := &RemoteEnv{}
	hb := stepRequest.([]byte)
	r.hbuf = appendRequestHeader(nil, hb, 1<<40)
	if n := testing.AllocsPerRun(100, func() {
		r.lastID++
		r.hbuf = appendRequestHeader(r.hbuf[:0], hb, r.lastID)
	}); n != 0 {
		t.Errorf("step request header: %v allocations", n)
	}
}

func BenchmarkDecodeHeaderStep(b *testing.B) {
	hb := []byte(`{"type":"step","id":12345}`)
	var h frameHeader
	b.ReportAllocs()
	for b.Loop() {
		if err := decodeHeader(hb, &h); err != nil {
			b.Fatal(err)
		}
	}
}

func TestAppendRequestHeader(t *testing.T) {
	for _, c := range [][2]string{
		{`{"type":"step"}`, `{"type":"step","id":42}`},
		{`{}`, `{"id":42}`},
	} {
		if got := string(appendRequestHeader(nil, []byte(c[0]), 42)); got != c[1] {
			t.Errorf("%s: %s, want %s", c[0], got, c[1])
		}
	}
}

// recTransport plays a recorded server output and keeps what the client
// writes.
type recTransport struct {
	memTransport
	sent bytes.Buffer
}

func (r *recTransport) Write(b []byte) (int, error) { return r.sent.Write(b) }

// TestRequestIDs checks that the client numbers its requests 1, 2, 3, … from
// the hello on.
func TestRequestIDs(t *testing.T) {
	tr := &recTransport{memTransport: newMemTransport(fuzzConversation("discrete"))}
	r, err := openRemote(tr, 3, RemoteOptions{Timeout: time.Second, MaxFrameBytes: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	obs, fin := make([]float32, 6), make([]float32, 6)
	rew, term, trunc := make([]float64, 3), make([]bool, 3), make([]bool, 3)
	if err := r.Reset(1, obs); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := r.Step(make([]float32, 3), obs, fin, rew, term, trunc); err != nil {
			t.Fatal(err)
		}
	}
	rd := bufio.NewReader(&tr.sent)
	for i, typ := range []string{"hello", "reset", "step", "step"} {
		f, _, err := readFrame(rd, nil, 1<<16)
		if err != nil || f.Header.Type != typ || !f.Header.HasID || f.Header.ID != uint64(i+1) {
			t.Fatalf("request %d: %+v, %v; want %q with id %d", i+1, f.Header, err, typ, i+1)
		}
	}
}

// TestDecodeSpaceLimits refuses spaces beyond the protocol's limits, and
// box dims a frame cannot carry, before allocating anything of their size.
func TestDecodeSpaceLimits(t *testing.T) {
	tooBig := func(dim int) error {
		if dim > 1000 {
			return frameErrorf("dim %d does not fit", dim)
		}
		return nil
	}
	for _, c := range []struct{ raw, want string }{
		{`{"kind":"discrete","n":16777216}`, "discrete with n = 16777216, outside the limit of 1…65536 actions"},
		{`{"kind":"discrete","n":65537}`, "n = 65537, outside the limit of 1…65536"},
		{`{"kind":"discrete","n":0}`, "n = 0, outside"},
		{`{"kind":"box","dim":65537}`, "box with dim = 65537, outside the limit of 1…65536 floats"},
		{`{"kind":"box","dim":1048576}`, "box with dim = 1048576, outside the limit of 1…65536 floats"},
		{`{"kind":"box","dim":60000}`, "dim 60000 does not fit"},
		{`{"kind":"discrete","n":65536}`, ""},
		{`{"kind":"box","dim":1000}`, ""},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s, err := decodeSpace([]byte(c.raw), "action_space", MaxActionDim, tooBig)
		runtime.ReadMemStats(&after)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.raw, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (%v), want an error containing %q", c.raw, err, s, c.want)
		}
		if d := after.TotalAlloc - before.TotalAlloc; d > 64<<10 {
			t.Errorf("%s: refusing it allocated %d bytes", c.raw, d)
		}
	}
	if _, err := decodeSpace([]byte(`{"kind":"box","dim":262144}`), "observation_space", MaxObsDim, nil); err != nil {
		t.Errorf("the largest observation: %v", err)
	}
	if _, err := decodeSpace([]byte(`{"kind":"box","dim":262145}`), "observation_space", MaxObsDim, nil); err == nil || !strings.Contains(err.Error(), "outside the limit of 1…262144 floats") {
		t.Errorf("an observation over the limit: %v", err)
	}
}

// TestRemoteNumEnvsOverFrame refuses more sub-environments than a step reply
// can carry before the handshake.
func TestRemoteNumEnvsOverFrame(t *testing.T) {
	_, err := openRemote(newMemTransport(nil), 1000, RemoteOptions{Timeout: time.Second, MaxFrameBytes: 1024})
	checkErr(t, err, "1000 sub-environments (env.num_envs) need step replies of at least 17000 bytes, over the limit of 1024 (env.args.max_frame_bytes)")
}

// TestPythonServerIDs speaks to protocol.py directly: replies echo the
// request's id, a request without one is refused, and a client of version
// 1 (no ids) hears which versions the server speaks.
func TestPythonServerIDs(t *testing.T) {
	requirePython(t)
	addr := startPythonTCP(t, filepath.Join("..", "..", "remote", "cartpole_server.py"))
	within(t, hangBound, "talking to protocol.py", func() {
		dial := func() (net.Conn, *bufio.Reader) {
			c, err := net.DialTimeout("tcp", addr, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c, bufio.NewReader(c)
		}
		ask := func(c net.Conn, rd *bufio.Reader, header string, payload []byte) frame {
			t.Helper()
			b, _ := appendFrameBytes(nil, []byte(header), payload)
			if _, err := c.Write(b); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(time.Minute))
			f, _, err := readFrame(rd, nil, 1<<20)
			if err != nil {
				t.Fatalf("%s: %v", header, err)
			}
			return f
		}
		c, rd := dial()
		for _, q := range []struct {
			header  string
			payload []byte
			typ     string
			id      uint64
		}{
			{`{"type":"hello","protocol":2,"num_envs":2,"client":"test","id":1}`, nil, "hello", 1},
			{`{"type":"reset","seed":3,"id":2}`, nil, "reset", 2},
			{`{"type":"step","id":3}`, make([]byte, 8), "step", 3},
			{`{"type":"get_state","id":9}`, nil, "state", 9},
			{`{"type":"no_such_type","id":10}`, nil, "error", 10},
			{`{"type":"step","id":11}`, make([]byte, 4), "error", 11}, // a short payload: the server stops
		} {
			f := ask(c, rd, q.header, q.payload)
			if f.Header.Type != q.typ || !f.Header.HasID || f.Header.ID != q.id {
				t.Errorf("%s: answered %+v, want %q with id %d", q.header, f.Header, q.typ, q.id)
			}
		}
		c, rd = dial()
		if f := ask(c, rd, `{"type":"hello","protocol":1,"num_envs":2,"client":"old"}`, nil); f.Header.Type != "error" || f.Header.HasID ||
			!strings.Contains(f.Header.Message, "client speaks protocol version 1, this server speaks 2") {
			t.Errorf("a client of version 1: %+v", f.Header)
		}
		c, rd = dial()
		if f := ask(c, rd, `{"type":"hello","protocol":2,"num_envs":2}`, nil); f.Header.Type != "error" || !strings.Contains(f.Header.Message, `hello without an "id"`) {
			t.Errorf("hello without an id: %+v", f.Header)
		}
		c, rd = dial()
		ask(c, rd, `{"type":"hello","protocol":2,"num_envs":2,"id":1}`, nil)
		if f := ask(c, rd, `{"type":"reset"}`, nil); f.Header.Type != "error" || !strings.Contains(f.Header.Message, `'reset' request without an "id"`) {
			t.Errorf("reset without an id: %+v", f.Header)
		}
		c, rd = dial()
		ask(c, rd, `{"type":"hello","protocol":2,"num_envs":2,"id":1}`, nil)
		if f := ask(c, rd, `{"type":"reset","id":true}`, nil); f.Header.Type != "error" || !strings.Contains(f.Header.Message, "request id True is not a whole number") {
			t.Errorf("reset with id true: %+v", f.Header)
		}
	})
}
