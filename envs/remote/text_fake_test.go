package remote

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
)

// fakeText is a text server in Go: its hello misbehaves as mode says, and
// its sessions echo, misbehaving as the action says. It records the
// requests it got.
type fakeText struct {
	mode string

	mu   sync.Mutex
	reqs []fakeRequest
}

// fakeRequest is a request the fake got: its header and "close" list.
type fakeRequest struct {
	frameHeader
	close []uint64
}

func (s *fakeText) requests() []fakeRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]fakeRequest(nil), s.reqs...)
}

func (s *fakeText) serve(conn net.Conn) {
	defer conn.Close()
	var buf []byte
	var f frame
	var err error
	send := func(h map[string]any, p []byte) {
		if _, ok := h["id"]; !ok {
			h["id"] = f.Header.ID
		}
		b, _ := appendFrame(nil, h, p)
		conn.Write(b)
	}
	if f, buf, err = readFrame(conn, buf, 1<<20); err != nil || f.Header.Type != "hello" {
		return
	}
	hello := map[string]any{"type": "hello", "protocol": 4, "text": true, "env": "Fake", "max_turns": 3, "reports_success": true, "max_sessions": 8}
	switch s.mode {
	case "old-server": // what remote/protocol.py of version 3 answers
		send(map[string]any{"type": "error", "message": "protocol error: client speaks protocol version 4, this server speaks 2 and 3"}, nil)
		return
	case "numeric":
		hello = map[string]any{"type": "hello", "protocol": 4, "num_envs": 1, "env": "CartPole"}
	case "v3-reply":
		hello["protocol"] = 3
	case "payload":
		send(hello, []byte("x"))
		return
	case "max-sessions":
		hello["max_sessions"] = 1 << 30
	case "max-turns":
		hello["max_turns"] = -1
	case "no-id":
		hello["id"] = nil
	case "no-limits":
		delete(hello, "max_sessions")
		delete(hello, "reports_success")
	}
	send(hello, nil)
	for {
		if f, buf, err = readFrame(conn, buf, 1<<20); err != nil {
			return
		}
		var closes struct {
			Close []uint64 `json:"close"`
		}
		json.Unmarshal(f.Raw[framePrefixLen:len(f.Raw)-len(f.Payload)], &closes)
		s.mu.Lock()
		s.reqs = append(s.reqs, fakeRequest{f.Header, closes.Close})
		s.mu.Unlock()
		var sid uint64
		json.Unmarshal(f.Header.Session, &sid)
		switch f.Header.Type {
		case "close":
			send(map[string]any{"type": "bye"}, nil)
			return
		case "text_reset":
			send(map[string]any{"type": "text_reset", "info": map[string]any{"session": sid}}, []byte("task "+string(f.Payload)))
			continue
		}
		action := string(f.Payload)
		reply := map[string]any{"type": "text_step", "reward": 0.5, "done": false}
		switch action {
		case "win":
			reply["done"], reply["succeeded"], reply["reward"] = true, true, 1
		case "no-succeeded":
			reply["done"] = true
		case "other-session-error": // an error naming a session that is not the request's
			send(map[string]any{"type": "error", "session": sid + 100, "message": "stale"}, nil)
			continue
		case "session-error":
			send(map[string]any{"type": "error", "session": sid, "message": "ValueError: bad answer"}, nil)
			continue
		case "wrong-type":
			reply["type"] = "text_reset"
		case "info-string":
			reply["info"] = "oops"
		case "reward-huge":
			b, _ := appendFrame(nil, []byte(`{"type":"text_step","id":`+jsonNum(f.Header.ID)+`,"reward":1e400,"done":false}`), nil)
			conn.Write(b)
			continue
		case "die":
			return
		case "hang":
			io.Copy(io.Discard, conn)
			return
		}
		send(reply, []byte("echo "+action))
	}
}

func jsonNum(v uint64) string { b, _ := json.Marshal(v); return string(b) }

// startFakeText serves connections with a fakeText until the test ends.
func startFakeText(t *testing.T, mode string) (string, *fakeText) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &fakeText{mode: mode}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(conn)
		}
	}()
	return ln.Addr().String(), s
}

func TestRemoteTextHandshakeFailures(t *testing.T) {
	for _, c := range []struct{ mode, want string }{
		{"old-server", "text environments need protocol 4, which this server does not speak: its remote/protocol.py is older than this agenttrainer; copy this agenttrainer's remote/protocol.py and remote/textenv.py"},
		{"numeric", `the server serves a numeric environment (its hello declares no "text"): use env.id = "remote" for it`},
		{"v3-reply", "the server answered a text hello with protocol version 3; text environments need 4"},
		{"payload", "the hello reply has a 1-byte payload, want none"},
		{"max-sessions", "max_sessions = 1073741824, outside 1…1048576"},
		{"max-turns", "max_turns = -1, outside 0…1048576"},
		{"no-id", `the "hello" reply carries no request id, want id 1`},
	} {
		t.Run(c.mode, func(t *testing.T) {
			within(t, hangBound, c.mode, func() {
				addr, _ := startFakeText(t, c.mode)
				o, err := ParseTextArgs(envs.Params{"address": addr})
				if err != nil {
					t.Fatal(err)
				}
				_, err = OpenTextPool(o)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("got %v\nwant %q", err, c.want)
				}
			})
		})
	}
}

// TestRemoteTextFake plays the Go fake: session ids, the closes that ride
// on the next request, errors that end a session and errors that end the
// connection.
func TestRemoteTextFake(t *testing.T) {
	within(t, hangBound, "the Go fake", func() {
		addr, srv := startFakeText(t, "")
		p := openTestPool(t, envs.Params{"address": addr, "timeout_s": generousTimeout})
		if p.Name() != "Fake" || p.maxTurns != 3 {
			t.Fatalf("%q, max_turns %d", p.Name(), p.maxTurns)
		}
		// The task is the row with env.args under it, less the connection's
		// keys.
		e, err := text.Make(TextID, envs.Params{"q": "2+2"}, envs.Params{"address": addr, "timeout_s": generousTimeout, "level": 3})
		if err != nil {
			t.Fatal(err)
		}
		defer CloseTextPools()
		obs, info, err := e.Reset(nil)
		if err != nil || obs != `task {"level":3,"q":"2+2"}` || info["session"] != float64(1) {
			t.Fatalf("reset: %q %v %v", obs, info, err)
		}
		obs, r, done, _, err := e.Step("4")
		if err != nil || obs != "echo 4" || r != 0.5 || done {
			t.Fatalf("step: %q %v %v %v", obs, r, done, err)
		}
		if _, r, done, _, err := e.Step("win"); err != nil || r != 1 || !done || !e.(text.Succeeder).Succeeded() {
			t.Fatalf("win: %v %v %v", r, done, err)
		}

		// On the pool: a session error the client finds closes the session
		// with the next request; one the server reports does not need to.
		a := p.NewEnv(envs.Params{"n": 1})
		if _, _, err := a.Reset(nil); err != nil {
			t.Fatal(err)
		}
		_, _, _, _, err = a.Step("info-string")
		if err == nil || !strings.Contains(err.Error(), `the reply's "info" is "\"oops\"", want a JSON object`) {
			t.Errorf("info-string: %v", err)
		}
		b := p.NewEnv(envs.Params{"n": 2})
		if _, _, err := b.Reset(nil); err != nil {
			t.Fatal(err)
		}
		reqs := srv.requests()
		last := reqs[len(reqs)-1]
		var sa, sb uint64
		json.Unmarshal(reqs[len(reqs)-2].Session, &sa)
		json.Unmarshal(last.Session, &sb)
		if last.Type != "text_reset" || sb != sa+1 {
			t.Fatalf("session ids %d then %d (%s)", sa, sb, last.Type)
		}
		if got := closesOf(t, srv, len(reqs)-1); len(got) != 1 || got[0] != sa {
			t.Errorf("the reset after a failed session closes %v, want [%d]", got, sa)
		}
		_, _, _, _, err = b.Step("session-error")
		if err == nil || !strings.Contains(err.Error(), "the environment failed: ValueError: bad answer") {
			t.Errorf("session-error: %v", err)
		}
		_, _, _, _, err = b.Step("no-succeeded")
		if err == nil || !strings.Contains(err.Error(), "Step before Reset") {
			t.Errorf("a step after a failed session: %v", err)
		}
		c := p.NewEnv(envs.Params{})
		c.Reset(nil)
		if got := closesOf(t, srv, len(srv.requests())-1); len(got) != 0 {
			t.Errorf("closes %v after a session the server ended itself", got)
		}
		for _, k := range []struct{ action, want string }{
			{"no-succeeded", `ends the episode has "succeeded": absent`},
			{"reward-huge", `the text_step reply's "reward" is "1e400", want a finite number`},
		} {
			e := p.NewEnv(envs.Params{})
			if _, _, err := e.Reset(nil); err != nil {
				t.Fatal(err)
			}
			if _, _, _, _, err := e.Step(k.action); err == nil || !strings.Contains(err.Error(), k.want) {
				t.Errorf("%s: %v", k.action, err)
			}
		}
	})
}

func closesOf(t *testing.T, srv *fakeText, i int) []uint64 {
	t.Helper()
	return srv.requests()[i].close
}

// TestRemoteTextFatalReplies: replies that break the conversation end the
// connection and every episode on it.
func TestRemoteTextFatalReplies(t *testing.T) {
	for _, c := range []struct{ action, want string }{
		{"other-session-error", "the server reported an error: stale"},
		{"wrong-type", `the server answered text_step with a "text_reset" message, want "text_step"`},
		{"die", "the server closed the connection while the client was waiting for the reply"},
		{"hang", "no progress waiting for the reply within 2s (env.args.timeout_s)"},
	} {
		t.Run(c.action, func(t *testing.T) {
			within(t, hangBound, c.action, func() {
				addr, _ := startFakeText(t, "")
				p := openTestPool(t, envs.Params{"address": addr, "timeout_s": hangTimeout.Seconds()})
				e, other := p.NewEnv(envs.Params{}), p.NewEnv(envs.Params{})
				e.Reset(nil)
				other.Reset(nil)
				if _, _, _, _, err := e.Step(c.action); err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("got %v, want %q", err, c.want)
				}
				if _, _, _, _, err := other.Step("x"); err == nil || !strings.Contains(err.Error(), "lost with its worker") {
					t.Errorf("the other episode: %v", err)
				}
				if _, _, err := p.NewEnv(envs.Params{}).Reset(nil); err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("a new episode: %v", err)
				}
			})
		})
	}
}

// TestRemoteTextDefaults: a hello without max_sessions and
// reports_success gets the defaults, and the environment then is no
// text.Succeeder.
func TestRemoteTextDefaults(t *testing.T) {
	within(t, hangBound, "defaults", func() {
		addr, _ := startFakeText(t, "no-limits")
		p := openTestPool(t, envs.Params{"address": addr, "timeout_s": generousTimeout})
		if c := p.workers[0].conn.text; c.maxSessions != DefaultMaxSessions || c.reportsSuccess {
			t.Errorf("max_sessions %d, reports success %v", c.maxSessions, c.reportsSuccess)
		}
		if _, ok := p.NewEnv(nil).(text.Succeeder); ok {
			t.Error("a server that does not report success gave a Succeeder")
		}
		if p.workers[0].conn.timeout != generousTimeout*1e9 {
			t.Errorf("timeout %v", p.workers[0].conn.timeout)
		}
	})
}

func TestParseTextArgs(t *testing.T) {
	for _, c := range []struct {
		args envs.Params
		want string // in the error; "" for none
	}{
		{envs.Params{"command": []any{"python3", "env.py"}}, ""},
		{envs.Params{"address": "127.0.0.1:5555", "workers": 4, "max_observation_bytes": 4096}, ""},
		{envs.Params{}, "the remote text environment needs env.args.command"},
		{envs.Params{"command": "x", "batch_size": 4}, "env.args.batch_size steps numeric sub-environments"},
		{envs.Params{"command": "x", "max_observation_bytes": 0}, "max_observation_bytes must be a whole number of bytes from 1"},
		{envs.Params{"command": "x", "max_observation_bytes": 1.5}, "max_observation_bytes must be a whole number"},
		{envs.Params{"command": "x", "max_observation_bytes": 1 << 20, "max_frame_bytes": 4096}, "max_observation_bytes = 1048576 is over env.args.max_frame_bytes = 4096"},
		{envs.Params{"command": "x", "timeout_s": -1}, "env.args.timeout_s must be a number of seconds above 0"},
		{envs.Params{"command": "x", "address": "127.0.0.1:1"}, "both command and address"},
	} {
		o, err := ParseTextArgs(c.args)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		case c.want == "" && c.args["timeout_s"] == nil && o.Timeout != DefaultTextTimeout:
			t.Errorf("%v: timeout %v, want the text default %v", c.args, o.Timeout, DefaultTextTimeout)
		}
	}
	conn, task := SplitTextArgs(envs.Params{"command": "x", "workers": 2, "question": "q", "answer": 4})
	if len(conn) != 2 || len(task) != 2 || task["question"] != "q" || conn["workers"] != 2 {
		t.Errorf("split: %v / %v", conn, task)
	}
}

// TestRemoteTextRegistered: remote-text is in the text registry, and a
// bad configuration is an argument error at Make.
func TestRemoteTextRegistered(t *testing.T) {
	s, ok := text.Lookup(TextID)
	if !ok || s.Agent != "single_turn" || !strings.Contains(s.Description, "remote/textenv.py") {
		t.Fatalf("%v %+v", ok, s)
	}
	_, err := text.Make(TextID, envs.Params{"question": "q"}, envs.Params{"comand": "python3 x.py"})
	var ae *envs.ArgsError
	if err == nil || !strings.Contains(err.Error(), "needs env.args.command") || !strings.Contains(err.Error(), "(env.args.comand; did you mean command?)") {
		t.Errorf("a misspelt command: %v", err)
	} else if !errors.As(err, &ae) {
		t.Errorf("%T is not an *envs.ArgsError", err)
	}
}
