package remote

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/envs"
)

// memTransport plays a recorded server output stream to the client.
type memTransport struct{ *bufio.Reader }

func newMemTransport(b []byte) memTransport        { return memTransport{bufio.NewReader(bytes.NewReader(b))} }
func (m memTransport) Write(b []byte) (int, error) { return len(b), nil }
func (m memTransport) arm(time.Duration) func()    { return func() {} }
func (m memTransport) timedOut() bool              { return false }
func (m memTransport) diagnose(bool) string        { return "" }
func (m memTransport) finish(time.Duration)        {}
func (m memTransport) Close() error                { return nil }
func (m memTransport) String() string              { return "in memory" }

// fuzzConversation is a well-formed server output: hello for 3
// sub-environments with 2-float observations, a reset reply and two step
// replies (in the second, sub-environment 1 terminates), answering request
// ids 1 to 4.
func fuzzConversation(actKind string) []byte {
	const n, d = 3, 2
	act := encodeSpace(envs.Space{Kind: envs.Discrete, N: 2})
	if actKind == "box" {
		act = encodeSpace(envs.Space{Kind: envs.Box, Dim: 2, Low: []float32{-1, -1}, High: []float32{1, 1}})
	}
	b, _ := appendFrame(nil, map[string]any{"type": "hello", "id": 1, "protocol": RemoteProtocolVersion, "num_envs": n, "env": "fuzz",
		"observation_space": encodeSpace(envs.Space{Kind: envs.Box, Dim: d, Low: []float32{-1, float32(math.Inf(-1))}, High: []float32{1, 2}}),
		"action_space":      act, "reports_success": true}, nil)
	obs := []float32{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}
	b, _ = appendFrame(b, []byte(`{"type":"reset","id":2}`), appendF32(nil, obs))
	lay := stepLayout{n, d}
	p := lay.encode(nil, obs, obs, []float64{1, 1, 1}, []bool{false, false, false}, []bool{false, false, false})
	b, _ = appendFrame(b, map[string]any{"type": "step", "id": 3, "success": []bool{}}, p)
	p = lay.encode(nil, obs, obs, []float64{1, 0, 1}, []bool{false, true, false}, []bool{false, false, false})
	b, _ = appendFrame(b, map[string]any{"type": "step", "id": 4, "success": []bool{true}}, p)
	return b
}

// FuzzDecodeFrame feeds arbitrary bytes to the frame decoder and then, as a
// whole server output stream, to the client (handshake, reset, steps): no
// input may panic, hang or yield something other than a frame or an error.
// The corpus lives in testdata/fuzz/FuzzDecodeFrame.
func FuzzDecodeFrame(f *testing.F) {
	f.Add(fuzzConversation("discrete"))
	f.Add(fuzzConversation("box"))
	errFrame, _ := appendFrame(nil, map[string]any{"type": "error", "id": 1, "message": "boom", "traceback": "tb"}, nil)
	f.Add(errFrame)
	f.Add([]byte("AGTP\x16\x00\x00\x00\x00\x00\x00\x00{\"type\":\"step\",\"id\":3}"))
	f.Add([]byte("AGTP\x18\x00\x00\x00\x00\x00\x00\x00{\"type\":\"reset\",\"id\":007}"))
	f.Add([]byte("Traceback (most recent call last):\n"))
	f.Add([]byte("AGTP\x02\x00\x00\x00\x00\x00\x00\x00{}"))
	f.Add([]byte("AGTP\xff\xff\xff\xff\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const maxPayload = 1 << 16
		fr, _, err := readFrame(bytes.NewReader(data), nil, maxPayload)
		if err != nil {
			var fe *frameError
			if !errors.As(err, &fe) && err != errStreamClosed {
				t.Fatalf("readFrame returned %T %v, want a frame error", err, err)
			}
		} else {
			if fr.Header.Type == "" || len(fr.Payload) > maxPayload {
				t.Fatalf("decoded %+v with a %d-byte payload", fr.Header, len(fr.Payload))
			}
			// Spaces and payloads decode or fail cleanly.
			fits := func(dim int) error {
				if dim > 1<<12 {
					return frameErrorf("too big")
				}
				return nil
			}
			decodeSpace(fr.Header.ObservationSpace, "observation_space", MaxObsDim, fits)
			decodeSpace(fr.Header.ActionSpace, "action_space", MaxActionDim, nil)
			// The hand-written fast path agrees with the JSON decoder.
			hdr := data[framePrefixLen : framePrefixLen+binary.LittleEndian.Uint32(data[4:8])]
			if typ, id, ok := fastHeader(hdr); ok {
				var slow wireHeader
				if json.Unmarshal(hdr, &slow) != nil || slow.Type != typ || string(slow.ID) != strconv.FormatUint(id, 10) {
					t.Fatalf("fast path read %q id %d, the JSON decoder %+v", typ, id, slow)
				}
			}
			lay := stepLayout{3, 2}
			obs, fin := make([]float32, 6), make([]float32, 6)
			if _, err := lay.decode(fr.Payload, obs, fin, make([]float64, 3), make([]bool, 3), make([]bool, 3)); err == nil && len(fr.Payload) < lay.size(0) {
				t.Fatal("a short step payload decoded")
			}
			// Re-encoding the payload under the same type and id decodes to
			// the same bytes.
			h := map[string]any{"type": fr.Header.Type}
			if fr.Header.HasID {
				h["id"] = fr.Header.ID
			}
			b, err := appendFrame(nil, h, fr.Payload)
			if err != nil {
				t.Fatal(err)
			}
			fr2, _, err := readFrame(bytes.NewReader(b), nil, maxPayload)
			if err != nil || fr2.Header.Type != fr.Header.Type || fr2.Header.HasID != fr.Header.HasID || fr2.Header.ID != fr.Header.ID || !bytes.Equal(fr2.Payload, fr.Payload) {
				t.Fatalf("round trip: %v %+v", err, fr2.Header)
			}
		}

		// The same bytes as everything a server says to the client.
		r, err := openRemote(newMemTransport(data), 3, RemoteOptions{Timeout: time.Second, HandshakeTimeout: time.Second, MaxFrameBytes: maxPayload})
		if err != nil {
			return
		}
		v, err := envs.NewBatchVector(r)
		if err != nil {
			t.Fatal(err)
		}
		v.Reset(1)
		acts := make([]float32, 3*v.ActDim)
		for range 3 {
			v.Step(acts)
			if v.Err() != nil {
				break
			}
			if firstNonFinite(v.Obs) >= 0 || slices.ContainsFunc(v.Rewards, func(x float32) bool { return math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) }) {
				t.Fatalf("non-finite values got through: %v %v", v.Obs, v.Rewards)
			}
		}
		v.Close()
	})
}

// TestFuzzConversationIsValid makes sure the fuzz seeds reach the deep end:
// the recorded conversation is accepted as a whole.
func TestFuzzConversationIsValid(t *testing.T) {
	for _, kind := range []string{"discrete", "box"} {
		r, err := openRemote(newMemTransport(fuzzConversation(kind)), 3, RemoteOptions{Timeout: time.Second, MaxFrameBytes: 1 << 16})
		if err != nil {
			t.Fatal(err)
		}
		v, err := envs.NewBatchVector(r)
		if err != nil {
			t.Fatal(err)
		}
		v.Reset(1)
		acts := make([]float32, 3*v.ActDim)
		v.Step(acts)
		v.Step(acts)
		if err := v.Err(); err != nil {
			t.Fatal(err)
		}
		want := []envs.Episode{{Env: 1, Return: 1, Length: 2, Success: true, HasSuccess: true}}
		if !slices.Equal(v.Finished, want) || v.FinalObs[2] != 0.3 || v.Obs[2] != 0.3 {
			t.Errorf("%s: finished %+v, final obs %v", kind, v.Finished, v.FinalObs)
		}
		v.Step(acts) // the stream is over: a clean error
		if err := v.Err(); err == nil || !strings.Contains(err.Error(), "closed the connection") {
			t.Errorf("%s: after the recording ends: %v", kind, err)
		}
	}
}
