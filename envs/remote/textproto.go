package remote

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agenttrainer/agenttrainer/envs/text"
)

// The text messages of the remote protocol (remote/PROTOCOL.md, "Text
// environments", version 4): a connection whose hello says "text" holds
// sessions, one per episode, that the client opens with text_reset (the
// task as a JSON payload) and steps with text_step (the action as the
// payload); the replies carry the observation as the payload and the
// reward, done and info in the header. An error reply that names the
// session ends that session only.

// TextProtocolVersion is the version of text conversations. Numeric ones
// keep RemoteProtocolVersion, so that servers older than text still serve
// them.
const TextProtocolVersion = 4

// Limits and defaults of text connections.
const (
	// DefaultMaxObservationBytes bounds an observation unless
	// env.args.max_observation_bytes says otherwise: a megabyte of text is
	// a quarter of a million tokens, more than any prompt holds.
	DefaultMaxObservationBytes = 1 << 20
	// DefaultTextTimeout bounds a text request unless env.args.timeout_s
	// says otherwise: a step may call a slow verifier.
	DefaultTextTimeout = 5 * time.Minute
	// DefaultMaxSessions is a server's session limit when its hello
	// declares none; MaxSessions bounds what one may declare.
	DefaultMaxSessions = 4096
	MaxSessions        = 1 << 20
	// maxTextTurns bounds a server's max_turns.
	maxTextTurns = 1 << 20
	// maxCloseIDs bounds the sessions one request closes.
	maxCloseIDs = 4096
)

// textConn is the state of a text connection: what its hello declared and
// the sessions the server holds for the client.
type textConn struct {
	name           string // the environment, as the hello names it
	maxTurns       int    // the server's turn limit (0: none)
	maxSessions    int
	reportsSuccess bool
	maxObs         int

	mu      sync.Mutex
	next    uint64   // the last session id given out
	live    int      // sessions the server holds
	closing []uint64 // sessions to close with the next request
	gone    bool     // the connection failed, and its sessions with it
}

// textHelloRequest is the text hello's header; call adds the id.
type textHelloRequest struct {
	Type                string         `json:"type"`
	Protocol            int            `json:"protocol"`
	Text                bool           `json:"text"`
	Client              string         `json:"client"`
	MaxObservationBytes int            `json:"max_observation_bytes"`
	Options             map[string]any `json:"options,omitempty"`
}

// openTextConn starts or connects to a text server and performs the
// handshake.
func openTextConn(o RemoteOptions) (*RemoteEnv, error) {
	o.fillDefaults(DefaultTextTimeout)
	if o.MaxObservationBytes <= 0 {
		o.MaxObservationBytes = min(DefaultMaxObservationBytes, o.MaxFrameBytes)
	}
	t, err := openTransport(o)
	if err != nil {
		return nil, err
	}
	return openTextOver(t, o)
}

// openTextOver performs the text handshake over t, closing t when it fails.
func openTextOver(t remoteTransport, o RemoteOptions) (*RemoteEnv, error) {
	r := &RemoteEnv{t: t, timeout: o.Timeout, maxFrame: o.MaxFrameBytes, text: &textConn{maxObs: o.MaxObservationBytes}}
	if err := r.handshakeText(o); err != nil {
		r.broken = err
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *RemoteEnv) handshakeText(o RemoteOptions) error {
	if o.Secret != nil {
		if err := r.authenticate(o.Secret, o); err != nil {
			return err
		}
	}
	f, err := r.call(textHelloRequest{Type: "hello", Protocol: TextProtocolVersion, Text: true, Client: "agenttrainer",
		MaxObservationBytes: r.text.maxObs, Options: o.Options}, nil, "handshake", o.HandshakeTimeout)
	if err != nil {
		if strings.Contains(err.Error(), fmt.Sprintf("client speaks protocol version %d", TextProtocolVersion)) {
			err = fmt.Errorf("%w\n(text environments need protocol %d, which this server does not speak: its remote/protocol.py is older than this agenttrainer; copy this agenttrainer's remote/protocol.py and remote/textenv.py next to it)", err, TextProtocolVersion)
			r.broken = err
		}
		return err
	}
	h := &f.Header
	fail := func(format string, args ...any) error {
		return r.breakf("handshake", format, args...)
	}
	switch {
	case h.Type != "hello":
		return fail("the server answered hello with a %q message: it does not speak the agenttrainer remote protocol (remote/PROTOCOL.md)", h.Type)
	case h.Protocol != TextProtocolVersion:
		return fail("the server answered a text hello with protocol version %d; text environments need %d: use the protocol.py and textenv.py that come with this agenttrainer (remote/)", h.Protocol, TextProtocolVersion)
	case !h.HasID: // call let it through for the version check above
		return fail("%s", idMismatch(h, r.lastID, TextProtocolVersion))
	case !h.Text:
		return fail("the server serves a numeric environment (its hello declares no \"text\"): use env.id = \"remote\" for it; a text environment is a TextEnv served by remote/textenv.py")
	case len(f.Payload) != 0:
		return fail("the hello reply has a %d-byte payload, want none", len(f.Payload))
	case h.MaxTurns < 0 || h.MaxTurns > maxTextTurns:
		return fail("the hello declares max_turns = %d, outside 0…%d", h.MaxTurns, maxTextTurns)
	case h.MaxSessions < 0 || h.MaxSessions > MaxSessions:
		return fail("the hello declares max_sessions = %d, outside 1…%d", h.MaxSessions, MaxSessions)
	}
	c := r.text
	c.name, c.maxTurns, c.maxSessions, c.reportsSuccess = h.Env, h.MaxTurns, h.MaxSessions, h.ReportsSuccess
	if c.maxSessions == 0 {
		c.maxSessions = DefaultMaxSessions
	}
	return nil
}

// textRequest is the header of text_reset and text_step; call adds the id.
type textRequest struct {
	Type    string   `json:"type"`
	Session uint64   `json:"session"`
	Close   []uint64 `json:"close,omitempty"`
}

// sessionError is the failure of one text session; the connection goes on.
// ended says whether the server has closed the session (it reported the
// error, or the reply said done); else the client must close it.
type sessionError struct {
	err   error
	ended bool
}

func (e *sessionError) Error() string { return e.err.Error() }
func (e *sessionError) Unwrap() error { return e.err }

// textReply is what a text_reset or text_step reply says.
type textReply struct {
	obs       string
	info      text.Info
	reward    float64
	done      bool
	succeeded bool
}

// textCall sends a text request for session sid, closing the sessions in
// closes first, and decodes the reply. A *sessionError ends the session
// only; any other error has broken the connection.
func (r *RemoteEnv) textCall(kind string, sid uint64, closes []uint64, payload []byte) (textReply, error) {
	op := fmt.Sprintf("session %d, %s (request %d)", sid, kind, r.lastID+1)
	f, err := r.exchange(textRequest{Type: kind, Session: sid, Close: closes}, payload, op, r.timeout)
	if err != nil {
		return textReply{}, err
	}
	h := &f.Header
	if h.Type == "error" {
		if s, ok := errorSession(h); ok && s == sid {
			return textReply{}, &sessionError{err: r.errorf(op, "the environment failed: %s", errorReplyText(h)), ended: true}
		}
		return textReply{}, r.breakf(op, "the server reported an error: %s", errorReplyText(h))
	}
	if h.Type != kind {
		return textReply{}, r.breakf(op, "the server answered %s with a %q message, want %q", kind, h.Type, kind)
	}
	rep, err := decodeTextReply(h, f.Payload, kind == "text_step", r.text.maxObs, r.text.reportsSuccess)
	if err != nil {
		return textReply{}, &sessionError{err: r.errorf(op, "%v", err), ended: rep.done}
	}
	return rep, nil
}

// errorSession is the session an error reply names.
func errorSession(h *frameHeader) (uint64, bool) {
	var s uint64
	if len(h.Session) == 0 || json.Unmarshal(h.Session, &s) != nil {
		return 0, false
	}
	return s, true
}

// decodeTextReply checks a text reply's header fields and payload. Its
// errors leave the stream sound (the frame was whole): they end the
// session. done is set as soon as it is known, also with an error, so that
// the caller knows whether the server still holds the session.
func decodeTextReply(h *frameHeader, payload []byte, step bool, maxObs int, reportsSuccess bool) (textReply, error) {
	var rep textReply
	if step {
		if len(h.Done) == 0 || json.Unmarshal(h.Done, &rep.done) != nil {
			return rep, fmt.Errorf("the text_step reply's \"done\" is %s, want true or false (remote/PROTOCOL.md, Text environments)", showRaw(h.Done))
		}
		if len(h.Reward) == 0 || json.Unmarshal(h.Reward, &rep.reward) != nil || math.IsNaN(rep.reward) || math.IsInf(rep.reward, 0) {
			return rep, fmt.Errorf("the text_step reply's \"reward\" is %s, want a finite number", showRaw(h.Reward))
		}
		if rep.done && reportsSuccess {
			if len(h.Succeeded) == 0 || json.Unmarshal(h.Succeeded, &rep.succeeded) != nil {
				return rep, fmt.Errorf("the text_step reply that ends the episode has \"succeeded\": %s, want true or false (the server's hello says it reports success)", showRaw(h.Succeeded))
			}
		}
	}
	if len(payload) > maxObs {
		return rep, fmt.Errorf("the observation is %d bytes, over the limit of %d (env.args.max_observation_bytes): the environment must say less, or raise the limit", len(payload), maxObs)
	}
	if !utf8.Valid(payload) {
		at := invalidUTF8At(payload)
		return rep, fmt.Errorf("the observation is not UTF-8 text (byte 0x%02x at offset %d: %s): the server must encode observations as UTF-8", payload[at], at, quoteBytes(payload[max(0, at-16):min(len(payload), at+16)]))
	}
	rep.obs = string(payload)
	if info := bytes.TrimSpace(h.Info); len(info) > 0 && string(info) != "null" {
		if info[0] != '{' {
			return rep, fmt.Errorf("the reply's \"info\" is %s, want a JSON object", showRaw(info))
		}
		if err := json.Unmarshal(info, &rep.info); err != nil {
			return rep, fmt.Errorf("the reply's \"info\" is not a JSON object (%v): %s", err, showRaw(info))
		}
	}
	return rep, nil
}

// showRaw shows a raw JSON value for a message ("absent" when missing).
func showRaw(b []byte) string {
	if len(b) == 0 {
		return "absent"
	}
	return quoteBytes(b)
}

// invalidUTF8At is the offset of the first byte of b that is not part of
// valid UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b) - 1
}

// openSession reserves a new session id, or refuses when the server holds
// as many as it allows; closes are the sessions to close with the request.
func (c *textConn) openSession() (sid uint64, closes []uint64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live >= c.maxSessions {
		return 0, nil, fmt.Errorf("the server holds %d sessions, its limit (max_sessions in its hello): episodes whose environments are not closed keep theirs; close a TextEnv when its episode ends", c.live)
	}
	c.next++
	c.live++
	return c.next, c.takeClosingLocked(), nil
}

// takeClosing returns the sessions to close with the next request.
func (c *textConn) takeClosing() []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.takeClosingLocked()
}

func (c *textConn) takeClosingLocked() []uint64 {
	n := min(len(c.closing), maxCloseIDs)
	out := c.closing[:n:n]
	c.closing = c.closing[n:]
	return out
}

// ended counts a session the server no longer holds; close asks the server
// to close it with the next request.
func (c *textConn) ended(sid uint64, close bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone {
		return
	}
	c.live--
	if close {
		c.closing = append(c.closing, sid)
	}
}

// lost marks the connection failed: the server holds no session of it.
func (c *textConn) lost() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gone, c.live, c.closing = true, 0, nil
}

// sessions is how many sessions the server holds for the client.
func (c *textConn) sessions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}
