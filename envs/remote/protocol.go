package remote

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/agenttrainer/agenttrainer/envs"
)

// The frame layer of the remote environment protocol (remote/PROTOCOL.md):
// a 12-byte prefix (magic, header length, payload length), a JSON header
// and a raw little-endian payload.

// RemoteProtocolVersion is the protocol version this client speaks.
// Version 2 added request ids: every request carries one and every reply
// echoes it. Version 3 added authentication with a shared secret (a
// challenge and response before hello) and the hello's env_offset; a
// conversation without authentication is version 2's, so the client also
// accepts a version-2 hello reply when it does not authenticate.
const RemoteProtocolVersion = 3

const (
	frameMagic     = "AGTP"
	framePrefixLen = 12
	// maxHeaderBytes bounds a frame's JSON header.
	maxHeaderBytes = 1 << 20
	// DefaultMaxFrameBytes bounds a frame's payload unless
	// env.args.max_frame_bytes says otherwise.
	DefaultMaxFrameBytes = 64 << 20
)

// frameHeader holds the header fields of every message type; a message uses
// the ones its type defines and the rest stay zero.
type frameHeader struct {
	Type string `json:"type"`
	// ID is the request id (protocol version 2): a request's, or the one a
	// reply echoes; HasID says whether the header had one.
	ID    uint64 `json:"-"`
	HasID bool   `json:"-"`

	// hello
	Protocol         int             `json:"protocol,omitempty"`
	NumEnvs          int             `json:"num_envs,omitempty"`
	Env              string          `json:"env,omitempty"`
	ObservationSpace json.RawMessage `json:"observation_space,omitempty"`
	ActionSpace      json.RawMessage `json:"action_space,omitempty"`
	MaxEpisodeSteps  int             `json:"max_episode_steps,omitempty"`
	ReportsSuccess   bool            `json:"reports_success,omitempty"`

	// step
	Success []bool `json:"success,omitempty"`

	// challenge and auth (version 3)
	Nonce string `json:"nonce,omitempty"`
	Proof string `json:"proof,omitempty"`
	OK    bool   `json:"ok,omitempty"`

	// error
	Message   string `json:"message,omitempty"`
	Traceback string `json:"traceback,omitempty"`

	// state (test extension of cartpole_server.py)
	States [][]float64 `json:"states,omitempty"`
}

// frame is one decoded frame. Payload and Raw (the whole frame as it
// came) alias the reader's buffer and are valid until the next read.
type frame struct {
	Header  frameHeader
	Payload []byte
	Raw     []byte
}

// frameError is a frame that breaks the protocol; the stream cannot be
// trusted after one.
type frameError struct{ msg string }

func (e *frameError) Error() string { return e.msg }

func frameErrorf(format string, args ...any) error {
	return &frameError{fmt.Sprintf(format, args...)}
}

// errStreamClosed is a clean end of stream between frames.
var errStreamClosed = errors.New("the connection was closed")

// peeker is a buffered reader (bufio.Reader) whose already-read bytes help
// describe a bad frame.
type peeker interface {
	Buffered() int
	Peek(n int) ([]byte, error)
}

// readFrame reads one frame from r into buf (grown as needed and returned
// for reuse). It never reads a payload longer than maxPayload.
func readFrame(r io.Reader, buf []byte, maxPayload int) (frame, []byte, error) {
	if cap(buf) < framePrefixLen {
		buf = make([]byte, 4096)
	}
	prefix := buf[:framePrefixLen]
	if n, err := io.ReadFull(r, prefix); err != nil {
		if err == io.EOF {
			return frame{}, buf, errStreamClosed
		}
		if err == io.ErrUnexpectedEOF {
			return frame{}, buf, frameErrorf("the stream ended in the middle of a frame prefix (%d of %d bytes)", n, framePrefixLen)
		}
		return frame{}, buf, err
	}
	if string(prefix[:4]) != frameMagic {
		got := slices.Clone(prefix)
		if p, ok := r.(peeker); ok { // show what else already arrived
			more, _ := p.Peek(min(p.Buffered(), 52))
			got = append(got, more...)
		}
		return frame{}, buf, frameErrorf("received bytes that are not a protocol frame (want magic %q, got %s)", frameMagic, quoteBytes(got))
	}
	h := binary.LittleEndian.Uint32(prefix[4:8])
	p := binary.LittleEndian.Uint32(prefix[8:12])
	if h < 2 || h > maxHeaderBytes {
		return frame{}, buf, frameErrorf("frame header length %d is outside 2…%d bytes", h, maxHeaderBytes)
	}
	if uint64(p) > uint64(maxPayload) {
		return frame{}, buf, frameErrorf("frame announces a %d-byte payload, over the limit of %d bytes (env.args.max_frame_bytes)", p, maxPayload)
	}
	// The body goes after the prefix, so that the buffer holds the whole
	// frame as it came (Raw: a relay passes it on unchanged).
	total := framePrefixLen + int(h) + int(p)
	if cap(buf) < total {
		grown := make([]byte, total)
		copy(grown, prefix)
		buf = grown
	}
	buf = buf[:total]
	if n, err := io.ReadFull(r, buf[framePrefixLen:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return frame{}, buf, frameErrorf("the stream ended in the middle of a frame (%d of %d header and payload bytes)", n, total-framePrefixLen)
		}
		return frame{}, buf, err
	}
	body := buf[framePrefixLen:]
	f := frame{Payload: body[h:], Raw: buf}
	if err := decodeHeader(body[:h], &f.Header); err != nil {
		return frame{}, buf, err
	}
	return f, buf, nil
}

// decodeHeader parses a JSON header, which must be an object with a
// non-empty string "type" and, when it has an "id", a whole number there.
func decodeHeader(b []byte, h *frameHeader) error {
	// The common replies, as protocol.py writes them, skip the JSON decoder
	// (and allocate nothing).
	if typ, id, ok := fastHeader(b); ok {
		*h = frameHeader{Type: typ, ID: id, HasID: true}
		return nil
	}
	if !utf8.Valid(b) {
		return frameErrorf("frame header is not UTF-8 text: %s", quoteBytes(b))
	}
	var d wireHeader // not h, which would then escape on the fast path too
	if err := json.Unmarshal(b, &d); err != nil {
		return frameErrorf("frame header is not a valid JSON object (%v): %s", err, quoteBytes(b))
	}
	if d.Type == "" {
		return frameErrorf("frame header has no \"type\": %s", quoteBytes(b))
	}
	if d.ID != nil && string(d.ID) != "null" {
		id, err := strconv.ParseUint(string(d.ID), 10, 64)
		if err != nil {
			return frameErrorf("frame header has \"id\": %s, want a whole number from 0 to %d: %s", quoteBytes(d.ID), uint64(math.MaxUint64), quoteBytes(b))
		}
		d.frameHeader.ID, d.frameHeader.HasID = id, true
	}
	*h = d.frameHeader
	return nil
}

// wireHeader is a header as JSON has it: the id is checked by hand.
type wireHeader struct {
	frameHeader
	ID json.RawMessage `json:"id"`
}

// fastHeader recognises {"type":"step","id":N} and {"type":"reset","id":N}
// exactly as protocol.py writes them, N a whole number without leading
// zeros.
func fastHeader(b []byte) (typ string, id uint64, ok bool) {
	const prefix, step, reset, idKey = `{"type":"`, `step"`, `reset"`, `,"id":`
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return "", 0, false
	}
	rest := b[len(prefix):]
	switch {
	case len(rest) >= len(step) && string(rest[:len(step)]) == step:
		typ, rest = "step", rest[len(step):]
	case len(rest) >= len(reset) && string(rest[:len(reset)]) == reset:
		typ, rest = "reset", rest[len(reset):]
	default:
		return "", 0, false
	}
	if len(rest) < len(idKey)+2 || string(rest[:len(idKey)]) != idKey {
		return "", 0, false
	}
	digits := rest[len(idKey) : len(rest)-1]
	if rest[len(rest)-1] != '}' || len(digits) == 0 || len(digits) > 19 || (digits[0] == '0' && len(digits) > 1) {
		return "", 0, false // 19 digits always fit in a uint64
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return "", 0, false
		}
		id = id*10 + uint64(c-'0')
	}
	return typ, id, true
}

// appendRequestHeader appends hb, an encoded JSON object, with "id": id
// added as its last field (the client's requests).
func appendRequestHeader(dst, hb []byte, id uint64) []byte {
	if len(hb) < 2 || hb[len(hb)-1] != '}' {
		return append(dst, hb...) // not an object: appendFrame's reader refuses it
	}
	dst = append(dst, hb[:len(hb)-1]...)
	if len(hb) > 2 {
		dst = append(dst, ',')
	}
	dst = append(dst, `"id":`...)
	dst = strconv.AppendUint(dst, id, 10)
	return append(dst, '}')
}

// appendFrame appends one frame to dst. A header given as []byte is taken
// as encoded JSON.
func appendFrame(dst []byte, header any, payload []byte) ([]byte, error) {
	hb, ok := header.([]byte)
	if !ok {
		var err error
		if hb, err = json.Marshal(header); err != nil {
			return dst, err
		}
	}
	return appendFrameBytes(dst, hb, payload)
}

// appendFrameBytes appends one frame with the encoded JSON header hb to dst.
func appendFrameBytes(dst, hb, payload []byte) ([]byte, error) {
	if len(hb) > maxHeaderBytes {
		return dst, fmt.Errorf("frame header of %d bytes is over the limit of %d", len(hb), maxHeaderBytes)
	}
	if uint64(len(payload)) > math.MaxUint32 {
		return dst, fmt.Errorf("frame payload of %d bytes does not fit the protocol", len(payload))
	}
	dst = append(dst, frameMagic...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(hb)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = append(dst, hb...)
	return append(dst, payload...), nil
}

// quoteBytes shows up to 64 bytes of b for an error message, as text when
// they look like text.
func quoteBytes(b []byte) string {
	const max = 64
	more := ""
	if len(b) > max {
		b, more = b[:max], "…"
	}
	return strconv.QuoteToASCII(string(b)) + more
}

// wireSpace is a space as the handshake describes it; a nil bound is
// unbounded.
type wireSpace struct {
	Kind string     `json:"kind"`
	N    int        `json:"n,omitempty"`
	Dim  int        `json:"dim,omitempty"`
	Low  []*float64 `json:"low,omitempty"`
	High []*float64 `json:"high,omitempty"`
}

// The largest spaces a server may declare (remote/PROTOCOL.md, Limits):
// the client sizes its buffers, and the trainer its networks, from them.
//
// They are what real environments need with room to spare, not what memory
// allows: a server is another program, and what it declares must not size
// the trainer to gigabytes (an observation of 2^20 floats makes an MLP's
// first layers 64 M weights each and a default rollout 6 GB).
const (
	// MaxDiscreteN bounds a discrete space's n (a policy has one output per
	// action).
	MaxDiscreteN = 1 << 16
	// MaxActionDim bounds an action box's dim, for the same reason (one
	// mean per dimension; robots have tens).
	MaxActionDim = 1 << 16
	// MaxObsDim bounds an observation box's dim: 2^18 floats, e.g.
	// 256×256×4 or 512×512 pixels (an Atari frame, 210×160×3, is 100,800).
	MaxObsDim = 1 << 18
)

// decodeSpace parses a space from a hello header. It refuses a discrete n
// above MaxDiscreteN, a box dim above maxDim and, when fits is not nil, a
// box dim that fits refuses (frames too big), all before allocating.
func decodeSpace(raw json.RawMessage, what string, maxDim int, fits func(dim int) error) (envs.Space, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return envs.Space{}, frameErrorf("the hello reply has no %s", what)
	}
	var w wireSpace
	if err := json.Unmarshal(raw, &w); err != nil {
		return envs.Space{}, frameErrorf("the %s in the hello reply is not a space description (%v): %s", what, err, quoteBytes(raw))
	}
	switch w.Kind {
	case "discrete":
		if w.N < 1 || w.N > MaxDiscreteN {
			return envs.Space{}, frameErrorf("the %s is discrete with n = %d, outside the limit of 1…%d actions (remote/PROTOCOL.md, Limits)", what, w.N, MaxDiscreteN)
		}
		return envs.Space{Kind: envs.Discrete, N: w.N}, nil
	case "box":
		if w.Dim < 1 || w.Dim > maxDim {
			return envs.Space{}, frameErrorf("the %s is a box with dim = %d, outside the limit of 1…%d floats (remote/PROTOCOL.md, Limits)", what, w.Dim, maxDim)
		}
		if fits != nil {
			if err := fits(w.Dim); err != nil {
				return envs.Space{}, err
			}
		}
		s := envs.Space{Kind: envs.Box, Dim: w.Dim, Low: make([]float32, w.Dim), High: make([]float32, w.Dim)}
		for _, b := range []struct {
			vals []*float64
			dst  []float32
			inf  float64
			name string
		}{{w.Low, s.Low, math.Inf(-1), "low"}, {w.High, s.High, math.Inf(1), "high"}} {
			if b.vals != nil && len(b.vals) != w.Dim {
				return envs.Space{}, frameErrorf("the %s has dim %d but %d %s bounds", what, w.Dim, len(b.vals), b.name)
			}
			for j := range b.dst {
				v := b.inf
				if b.vals != nil && b.vals[j] != nil {
					v = *b.vals[j]
				}
				b.dst[j] = float32(v)
			}
		}
		for j := range s.Low {
			if !(s.Low[j] <= s.High[j]) {
				return envs.Space{}, frameErrorf("the %s has low[%d] = %v above high[%d] = %v", what, j, s.Low[j], j, s.High[j])
			}
		}
		return s, nil
	default:
		return envs.Space{}, frameErrorf("the %s has kind %q, want \"discrete\" or \"box\"", what, w.Kind)
	}
}

// encodeSpace is decodeSpace's inverse (used by the fake servers in tests).
func encodeSpace(s envs.Space) wireSpace {
	if s.Kind == envs.Discrete {
		return wireSpace{Kind: "discrete", N: s.N}
	}
	w := wireSpace{Kind: "box", Dim: s.Dim}
	bound := func(vals []float32) []*float64 {
		if vals == nil {
			return nil
		}
		out := make([]*float64, len(vals))
		for i, v := range vals {
			if !math.IsInf(float64(v), 0) {
				f := float64(v)
				out[i] = &f
			}
		}
		return out
	}
	w.Low, w.High = bound(s.Low), bound(s.High)
	return w
}

// stepLayout describes the payload of a step reply for N sub-environments
// with observations of D floats.
type stepLayout struct{ n, d int }

// size is the payload size of a step reply in which k episodes ended.
func (l stepLayout) size(k int) int { return 4*l.n*l.d + 8*l.n + l.n + 4*k*l.d }

// decode checks a step reply's payload and writes its parts; it
// returns the number of episodes that ended. finalObs gets rows only where
// an episode ended.
func (l stepLayout) decode(p []byte, obs, finalObs []float32, rewards []float64, term, trunc []bool) (int, error) {
	n, d := l.n, l.d
	if len(p) < l.size(0) {
		return 0, frameErrorf("the step reply's payload is %d bytes, less than the %d that %d sub-environments with %d-float observations need before any final observations (%s): do the server's observations match the observation_space it declared?",
			len(p), l.size(0), n, d, l.sizeHelp())
	}
	flags := p[4*n*d+8*n : 4*n*d+8*n+n]
	k := 0
	for i, f := range flags {
		if f&^3 != 0 {
			return 0, frameErrorf("the step reply's flags byte for sub-environment %d is 0x%02x; only bit 0 (terminated) and bit 1 (truncated) may be set", i, f)
		}
		if f != 0 {
			k++
		}
	}
	if len(p) != l.size(k) {
		return 0, frameErrorf("the step reply's payload is %d bytes, want %d for %d sub-environments with %d-float observations of which %d ended (%s): do the server's observations match the observation_space it declared?",
			len(p), l.size(k), n, d, k, l.sizeHelp())
	}
	decodeF32(obs[:n*d], p)
	p = p[4*n*d:]
	for i := range n {
		rewards[i] = math.Float64frombits(binary.LittleEndian.Uint64(p[8*i:]))
	}
	p = p[8*n+n:]
	for i, f := range flags {
		term[i], trunc[i] = f&1 != 0, f&2 != 0
		if f != 0 {
			decodeF32(finalObs[i*d:(i+1)*d], p[:4*d])
			p = p[4*d:]
		}
	}
	return k, nil
}

func (l stepLayout) sizeHelp() string {
	return fmt.Sprintf("f32 obs[%d×%d] + f64 rewards[%d] + u8 flags[%d] + f32 final_obs[ended×%d]", l.n, l.d, l.n, l.n, l.d)
}

func decodeF32(dst []float32, p []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
	}
}

func appendF32(dst []byte, vals []float32) []byte {
	for _, v := range vals {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
	}
	return dst
}

// encodeStepReply builds a step reply's payload (the fake servers in tests
// and the fuzz round trip use it).
func (l stepLayout) encode(dst []byte, obs, finalObs []float32, rewards []float64, term, trunc []bool) []byte {
	dst = appendF32(dst, obs[:l.n*l.d])
	for _, r := range rewards[:l.n] {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(r))
	}
	for i := range l.n {
		var f byte
		if term[i] {
			f |= 1
		}
		if trunc[i] {
			f |= 2
		}
		dst = append(dst, f)
	}
	for i := range l.n {
		if term[i] || trunc[i] {
			dst = appendF32(dst, finalObs[i*l.d:(i+1)*l.d])
		}
	}
	return dst
}

// firstNonFinite returns the index of the first NaN or ±Inf in vals, or −1.
func firstNonFinite(vals []float32) int {
	for i, v := range vals {
		if v != v || math.IsInf(float64(v), 0) {
			return i
		}
	}
	return -1
}
