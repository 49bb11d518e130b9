package remote

import (
	"errors"
	"math"
	"testing"
	"time"
	"unicode/utf8"
)

// fuzzTextConversation is a well-formed text server's output: the hello,
// a text_reset reply, a step that goes on, a session error and, after a
// second reset, a step that ends the episode (requests 1 to 6).
func fuzzTextConversation() []byte {
	b, _ := appendFrame(nil, map[string]any{"type": "hello", "id": 1, "protocol": TextProtocolVersion, "text": true, "env": "fuzz",
		"max_turns": 4, "reports_success": true, "max_sessions": 8}, nil)
	b, _ = appendFrame(b, map[string]any{"type": "text_reset", "id": 2, "info": map[string]any{"n": 1}}, []byte("question: 2+2?"))
	b, _ = appendFrame(b, map[string]any{"type": "text_step", "id": 3, "reward": 0.5, "done": false, "info": map[string]any{"nested": []any{1, "é", nil}}}, []byte("lower ✓"))
	b, _ = appendFrame(b, map[string]any{"type": "error", "id": 4, "session": 1, "message": "ValueError: no"}, nil)
	b, _ = appendFrame(b, map[string]any{"type": "text_reset", "id": 5}, nil)
	b, _ = appendFrame(b, map[string]any{"type": "text_step", "id": 6, "reward": 1, "done": true, "succeeded": true}, []byte("correct"))
	return b
}

// playText plays the client's side of fuzzTextConversation against data
// (everything a server says) and checks what got through.
func playText(t *testing.T, data []byte, maxObs int) (replies int, err error) {
	r, err := openTextOver(newMemTransport(data), RemoteOptions{Timeout: time.Second, HandshakeTimeout: time.Second, MaxFrameBytes: 1 << 16, MaxObservationBytes: maxObs})
	if err != nil {
		return 0, err
	}
	defer r.Close()
	c := r.text
	if c.maxSessions < 1 || c.maxSessions > MaxSessions || c.maxTurns < 0 || c.maxTurns > maxTextTurns {
		t.Fatalf("limits got through: %+v", c)
	}
	kinds := []string{"text_reset", "text_step", "text_step", "text_reset", "text_step"}
	var sid uint64
	for _, kind := range kinds {
		if kind == "text_reset" {
			if sid, _, err = c.openSession(); err != nil {
				return replies, err
			}
		}
		rep, err := r.textCall(kind, sid, nil, []byte("4"))
		var se *sessionError
		if errors.As(err, &se) {
			continue // the session ended; the stream goes on
		}
		if err != nil {
			if r.broken == nil {
				t.Fatalf("an error that is neither a session's nor the connection's: %v", err)
			}
			return replies, err
		}
		replies++
		if !utf8.ValidString(rep.obs) || len(rep.obs) > maxObs || math.IsNaN(rep.reward) || math.IsInf(rep.reward, 0) {
			t.Fatalf("a reply got through: %+v", rep)
		}
	}
	return replies, nil
}

// FuzzTextConversation feeds arbitrary bytes to the text client as
// everything a server says: no input may panic, hang or hand the
// environment an observation that is not UTF-8 or over its limit, or a
// reward that is not finite. The corpus is testdata/fuzz/FuzzTextConversation.
func FuzzTextConversation(f *testing.F) {
	f.Add(fuzzTextConversation())
	bad, _ := appendFrame(nil, map[string]any{"type": "hello", "id": 1, "protocol": 4, "text": true}, nil)
	bad, _ = appendFrame(bad, []byte(`{"type":"text_reset","id":2,"info":[1]}`), []byte("caf\xe9"))
	f.Add(bad)
	f.Add([]byte("AGTP\x02\x00\x00\x00\x00\x00\x00\x00{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		playText(t, data, 64)
	})
}

// TestFuzzTextConversationIsValid makes sure the seed reaches the end.
func TestFuzzTextConversationIsValid(t *testing.T) {
	n, err := playText(t, fuzzTextConversation(), 64)
	if err != nil || n != 4 {
		t.Fatalf("%d replies, %v", n, err)
	}
}
