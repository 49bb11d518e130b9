package remote

import (
	"encoding/binary"
	"io"
	"math"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/envs"
)

// fakeServe answers one connection as a server of 2 sub-environments with
// 3-float observations and Discrete(2) actions would, misbehaving as mode
// says at the second step (or at handshake, or at the first step for
// "twice").
func fakeServe(conn net.Conn, mode string) {
	defer conn.Close()
	const n, d = 2, 3
	var buf []byte
	var f frame
	var err error
	// send echoes the id of the request in f.
	send := func(h map[string]any, p []byte) {
		if _, ok := h["id"]; !ok && f.Header.HasID {
			h["id"] = f.Header.ID
		}
		b, _ := appendFrame(nil, h, p)
		conn.Write(b)
	}
	if f, buf, err = readFrame(conn, buf, 1<<20); err != nil || f.Header.Type != "hello" {
		return
	}
	hello := map[string]any{
		"type": "hello", "protocol": RemoteProtocolVersion, "num_envs": f.Header.NumEnvs, "env": "fake",
		"observation_space": encodeSpace(envs.Space{Kind: envs.Box, Dim: d}),
		"action_space":      encodeSpace(envs.Space{Kind: envs.Discrete, N: 2}),
	}
	switch mode {
	case "hello-hang":
		io.Copy(io.Discard, conn)
		return
	case "hello-version":
		hello["protocol"] = 4
	case "hello-v1": // a server of version 1: no ids
		hello["protocol"] = 1
		hello["id"] = nil
	case "hello-v1-error": // how protocol.py of version 1 refuses a client of version 2
		send(map[string]any{"type": "error", "id": nil, "message": "protocol error: client speaks protocol version 2, this server speaks 1"}, nil)
		return
	case "hello-no-id":
		hello["id"] = nil
	case "hello-wrong-id":
		hello["id"] = 0
	case "hello-num-envs":
		hello["num_envs"] = 3
	case "hello-space":
		hello["observation_space"] = map[string]any{"kind": "tuple"}
	case "hello-box-bounds":
		hello["observation_space"] = map[string]any{"kind": "box", "dim": 3, "low": []any{0, 0}}
	case "hello-discrete-obs":
		hello["observation_space"] = map[string]any{"kind": "discrete", "n": 16}
	case "hello-huge":
		hello["observation_space"] = map[string]any{"kind": "box", "dim": 1 << 24}
	case "hello-discrete-16m":
		hello["action_space"] = map[string]any{"kind": "discrete", "n": 16777216}
	case "hello-discrete-1m":
		hello["action_space"] = map[string]any{"kind": "discrete", "n": 1000000}
	case "hello-dim-200k", "hello-dim-200k-big-frames":
		hello["observation_space"] = map[string]any{"kind": "box", "dim": 200000}
	case "hello-action-dim":
		hello["action_space"] = map[string]any{"kind": "box", "dim": 60000}
	case "hello-error":
		send(map[string]any{"type": "error", "message": "ModuleNotFoundError: No module named 'gymnasium'"}, nil)
		return
	}
	send(hello, nil)
	obs := make([]float32, n*d)
	fin := make([]float32, n*d)
	rew := []float64{1, 1}
	term, trunc := []bool{false, false}, []bool{false, false}
	lay := stepLayout{n, d}
	steps := 0
	for {
		if f, buf, err = readFrame(conn, buf, 1<<20); err != nil {
			return
		}
		switch f.Header.Type {
		case "reset":
			send(map[string]any{"type": "reset"}, appendF32(nil, obs))
			continue
		case "close":
			send(map[string]any{"type": "bye"}, nil)
			return
		}
		steps++
		reply := map[string]any{"type": "step"}
		if steps < 2 {
			send(reply, lay.encode(nil, obs, fin, rew, term, trunc))
			if mode == "twice" {
				send(reply, lay.encode(nil, obs, fin, rew, term, trunc))
			}
			continue
		}
		good := lay.encode(nil, obs, fin, rew, term, trunc)
		switch mode {
		case "crash":
			return
		case "hang":
			io.Copy(io.Discard, conn)
			return
		case "garbage":
			conn.Write([]byte("Traceback (most recent call last):\n  File \"env.py\"\n"))
		case "oversize":
			var p [12]byte
			copy(p[:], frameMagic)
			binary.LittleEndian.PutUint32(p[4:], 16)
			binary.LittleEndian.PutUint32(p[8:], 1<<30)
			conn.Write(p[:])
		case "huge-header":
			var p [12]byte
			copy(p[:], frameMagic)
			binary.LittleEndian.PutUint32(p[4:], 1<<30)
			conn.Write(p[:])
		case "truncated":
			b, _ := appendFrame(nil, reply, good)
			conn.Write(b[:len(b)/2])
			return
		case "bad-json":
			var p [12]byte
			copy(p[:], frameMagic)
			binary.LittleEndian.PutUint32(p[4:], 5)
			conn.Write(append(p[:], "{type"...))
		case "no-type":
			send(map[string]any{"kind": "step"}, good)
		case "no-id":
			send(map[string]any{"type": "step", "id": nil}, good)
		case "bad-id":
			send(map[string]any{"type": "step", "id": "4"}, good)
		case "error-wrong-id":
			send(map[string]any{"type": "error", "id": 2, "message": "stale"}, nil)
		case "short-obs":
			send(reply, good[4:])
		case "extra-final":
			send(reply, append(good, 0, 0, 0, 0))
		case "bad-flags":
			good[4*n*d+8*n+1] = 4
			send(reply, good)
		case "nan-obs":
			o := []float32{0, 0, 0, 0, float32(math.NaN()), 0}
			send(reply, lay.encode(nil, o, fin, rew, term, trunc))
		case "inf-final-obs":
			f := []float32{0, 0, 0, float32(math.Inf(1)), 0, 0}
			send(reply, lay.encode(nil, obs, f, rew, []bool{false, true}, trunc))
		case "nan-reward":
			send(reply, lay.encode(nil, obs, fin, []float64{1, math.NaN()}, term, trunc))
		case "wrong-type":
			send(map[string]any{"type": "reset"}, appendF32(nil, obs))
		case "error":
			send(map[string]any{"type": "error", "message": "ValueError: the pole fell off the cart", "traceback": "Traceback (most recent call last):\n  File \"env.py\", line 3, in step\nValueError: the pole fell off the cart"}, nil)
		}
		io.Copy(io.Discard, conn) // stay connected until the client gives up
		return
	}
}

func startFakeServer(t *testing.T, mode string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		fakeServe(conn, mode)
	}()
	return ln.Addr().String()
}

// hangTimeout is the timeout of the tests whose server never answers: any
// bound proves the point there, so it need not be short enough for a busy
// machine to miss (the tests of servers that do answer use
// generousTimeout).
const (
	hangTimeout     = 2 * time.Second
	generousTimeout = 120 // seconds, for env.args
	// hangBound bounds a test that might hang; it is no performance check.
	hangBound = 3 * time.Minute
)

// TestRemoteFailuresTCP runs misbehaving servers: each failure must stop the
// vector with an error naming what was wrong, without a panic.
func TestRemoteFailuresTCP(t *testing.T) {
	for _, c := range []struct {
		mode string
		want []string
		args envs.Params // added to the defaults
	}{
		{"hello-hang", []string{"handshake", "no progress waiting for the reply within 2s", "env.args.handshake_timeout_s"}, envs.Params{"handshake_timeout_s": hangTimeout.Seconds()}},
		{"hello-version", []string{"protocol version 4, this client speaks 3"}, nil},
		{"hello-v1", []string{"protocol version 1, this client speaks 3", "use the protocol.py that comes with this agenttrainer"}, nil},
		{"hello-v1-error", []string{"the server reported an error: protocol error: client speaks protocol version 2, this server speaks 1"}, nil},
		{"hello-no-id", []string{`the "hello" reply carries no request id, want id 1`, "version 3"}, nil},
		{"hello-wrong-id", []string{`the "hello" reply carries request id 0, want 1 (the id of this request)`}, nil},
		{"hello-num-envs", []string{"serves 3 sub-environments, env.num_envs asks for 2"}, nil},
		{"hello-space", []string{"observation_space has kind \"tuple\""}, nil},
		{"hello-box-bounds", []string{"dim 3 but 2 low bounds"}, nil},
		{"hello-discrete-obs", []string{"observations must be a box"}, nil},
		{"hello-huge", []string{"observation_space is a box with dim = 16777216, outside the limit of 1…262144 floats"}, nil},
		{"hello-discrete-16m", []string{"action_space is discrete with n = 16777216, outside the limit of 1…65536 actions"}, nil},
		{"hello-discrete-1m", []string{"action_space is discrete with n = 1000000, outside the limit of 1…65536 actions"}, nil},
		{"hello-dim-200k", []string{"observation_space is a box with dim = 200000: a step reply for 2 sub-environments may need 3200018 bytes", "over the limit of 1048576 (env.args.max_frame_bytes)"}, envs.Params{"max_frame_bytes": 1 << 20}},
		{"hello-dim-200k-big-frames", nil, nil}, // 3.2 MB per step reply fit in the default 64 MiB
		{"hello-action-dim", []string{"action_space is a box with dim = 60000: a step request for 2 sub-environments needs 480000 bytes (f32 actions[2×60000]), over the limit of 262144"}, envs.Params{"max_frame_bytes": 1 << 18}},
		{"hello-error", []string{"the server reported an error: ModuleNotFoundError: No module named 'gymnasium'"}, nil},
		{"crash", []string{"step request 2", "closed the connection while the client was waiting for the reply"}, nil},
		{"hang", []string{"step request 2", "no progress waiting for the reply within 2s (env.args.timeout_s)", "hung"}, nil},
		{"garbage", []string{"not a protocol frame", `got "Traceback (most recent call last):\n  File \"env.py\"\n"`, "logs belong on stderr"}, nil},
		{"oversize", []string{"1073741824-byte payload", "env.args.max_frame_bytes"}, nil},
		{"huge-header", []string{"header length 1073741824 is outside"}, nil},
		{"truncated", []string{"ended in the middle of a frame"}, nil},
		{"bad-json", []string{"not a valid JSON object"}, nil},
		{"no-type", []string{`header has no "type"`}, nil},
		{"twice", []string{"step request 2", `the "step" reply carries request id 3, want 4 (the id of this request): the server answered an earlier request again, or out of order`}, nil},
		{"no-id", []string{"step request 2", `the "step" reply carries no request id, want id 4`}, nil},
		{"bad-id", []string{"step request 2", `frame header has "id": "\"4\"", want a whole number`}, nil},
		{"error-wrong-id", []string{"step request 2", `the error reply ("stale") carries request id 2, want 4`}, nil},
		{"short-obs", []string{"payload is 38 bytes, less than the 42 that 2 sub-environments with 3-float observations need", "do the server's observations match the observation_space it declared?"}, nil},
		{"extra-final", []string{"payload is 46 bytes, want 42 for 2 sub-environments with 3-float observations of which 0 ended"}, nil},
		{"bad-flags", []string{"flags byte for sub-environment 1 is 0x04"}, nil},
		{"nan-obs", []string{"non-finite observation (NaN in element 1 of sub-environment 1)"}, nil},
		{"inf-final-obs", []string{"non-finite final observation (+Inf in element 0 of sub-environment 1)"}, nil},
		{"nan-reward", []string{"non-finite reward (NaN) for sub-environment 1"}, nil},
		{"wrong-type", []string{`answered step with a "reset" message`}, nil},
		{"error", []string{"the server reported an error: ValueError: the pole fell off the cart", "server traceback:", `File "env.py", line 3`}, nil},
	} {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			addr := startFakeServer(t, c.mode)
			within(t, hangBound, c.mode, func() {
				args := envs.Params{"address": addr, "timeout_s": generousTimeout, "handshake_timeout_s": generousTimeout}
				for k, v := range c.args {
					args[k] = v
				}
				v, err := NewRemoteVector(2, args)
				if strings.HasPrefix(c.mode, "hello") {
					if c.want == nil {
						if err != nil {
							t.Fatal(err)
						}
						v.Close()
						return
					}
					if err == nil {
						v.Close()
						t.Fatal("the handshake succeeded")
					}
					checkErr(t, err, append(c.want, "remote environment at "+addr)...)
					t.Log(err)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				defer v.Close()
				v.Reset(1)
				acts := []float32{0, 1}
				v.Step(acts)
				if err := v.Err(); err != nil {
					t.Fatalf("first step: %v", err)
				}
				b, _ := v.Batch()
				r := b.(*RemoteEnv)
				if c.mode == "hang" {
					r.timeout = hangTimeout // the server never answers this step
				}
				v.Step(acts)
				err = v.Err()
				checkErr(t, err, append(c.want, "remote environment at "+addr)...)
				t.Log(err)
				r.t = noIOTransport{t} // sticky: no more I/O
				v.Step(acts)
				v.Reset(2)
				if v.Err() != err {
					t.Errorf("after a failure the vector changed its error: %v", v.Err())
				}
				if len(v.Finished) != 0 {
					t.Errorf("finished episodes after a failure: %+v", v.Finished)
				}
			})
		})
	}
}

// noIOTransport fails a test that talks to a server it should be done with.
type noIOTransport struct{ t *testing.T }

func (n noIOTransport) Read([]byte) (int, error) {
	n.t.Error("read after a failure")
	return 0, io.EOF
}

func (n noIOTransport) Write([]byte) (int, error) {
	n.t.Error("write after a failure")
	return 0, io.ErrClosedPipe
}
func (n noIOTransport) arm(time.Duration) func() { return func() {} }
func (n noIOTransport) timedOut() bool           { return false }
func (n noIOTransport) diagnose(bool) string     { return "" }
func (n noIOTransport) finish(time.Duration)     {}
func (n noIOTransport) Close() error             { return nil }
func (n noIOTransport) String() string           { return "done with" }

func checkErr(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not contain %q:\n%v", w, err)
		}
	}
}

// TestRemoteFailuresProcess runs a misbehaving server over stdio: crashes
// show the exit status and the server's stderr, hangs end in a timeout and
// a killed process.
func TestRemoteFailuresProcess(t *testing.T) {
	requirePython(t)
	script := filepath.Join("..", "..", "remote", "testdata", "misbehaving_server.py")
	for _, c := range []struct {
		mode      string
		handshake bool // fails at handshake
		want      []string
	}{
		{"crash", false, []string{"step request 3", "closed the connection", "exit status 3", "simulated crash: the physics blew up at step 3"}},
		{"hang", false, []string{"step request 3", "no progress waiting for the reply within 2s (env.args.timeout_s)"}},
		{"twice", false, []string{"step request 3", `the "step" reply carries request id 4, want 5 (the id of this request): the server answered an earlier request again, or out of order`}},
		{"garbage", false, []string{"step request 3", "not a protocol frame", `"Traceback (most recent call last): something printed this\n"`}},
		{"error", false, []string{"step request 3", "ValueError: the pole fell off the cart", "server traceback:", "misbehaving_server.py"}},
		{"nan", false, []string{"step request 3", "non-finite observation (NaN in element 1 of sub-environment 0)"}},
		{"startup-crash", true, []string{"handshake", "exit status 1", "No module named 'no_such_module_for_the_test'"}},
		{"slow-hello", true, []string{"handshake", "env.args.handshake_timeout_s", "starting it and building its environments"}},
		{"ok", true, []string{"handshake", "this server was started with --num-envs 4; the client asks for 2 (set env.num_envs = 4)"}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			within(t, hangBound, c.mode, func() {
				cmd := []any{"python3", script, "--mode", c.mode}
				switch c.mode {
				case "ok":
					cmd = append(cmd, "--num-envs", "4")
				case "twice":
					cmd = append(cmd, "--at", "2") // replies twice to step 2; step 3 reads the second
				}
				args := envs.Params{"command": cmd, "timeout_s": generousTimeout, "handshake_timeout_s": generousTimeout}
				if c.mode == "slow-hello" { // it never answers hello
					args["handshake_timeout_s"] = hangTimeout.Seconds()
				}
				start := time.Now()
				v, err := NewRemoteVector(2, args)
				if c.handshake {
					checkErr(t, err, c.want...)
					t.Log(err)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				b, _ := v.Batch()
				r := b.(*RemoteEnv)
				p := r.t.(*procTransport)
				v.Reset(0)
				acts := []float32{1, 0}
				for i := 0; i < 3 && v.Err() == nil; i++ {
					if c.mode == "hang" && i == 2 {
						r.timeout = hangTimeout // the server never answers step 3
					}
					v.Step(acts)
				}
				err = v.Err()
				checkErr(t, err, c.want...)
				t.Log(err)
				// The failure itself stops the server: a hung one must not
				// outlive a trainer that forgets Close.
				select {
				case <-p.exited:
				case <-time.After(time.Minute):
					t.Error("the server process is still running a minute after the failure")
				}
				v.Close()
				t.Logf("failed and closed in %v", time.Since(start).Round(time.Millisecond))
			})
		})
	}
}

// TestRemoteNoisyServer checks that a server whose environment prints to
// stdout keeps a clean protocol stream (protocol.py moves it to stderr).
func TestRemoteNoisyServer(t *testing.T) {
	requirePython(t)
	within(t, hangBound, "noisy server", func() {
		v, err := NewRemoteVector(3, envs.Params{"command": []any{"python3", filepath.Join("..", "..", "remote", "testdata", "misbehaving_server.py"), "--mode", "noisy"},
			"timeout_s": generousTimeout, "handshake_timeout_s": generousTimeout})
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		v.Reset(0)
		acts := make([]float32, 3)
		ended := 0
		for i := 0; i < 20; i++ {
			v.Step(acts)
			if err := v.Err(); err != nil {
				t.Fatal(err)
			}
			ended += len(v.Finished)
		}
		if ended != 12 || v.Obs[2*2] != 2 {
			t.Errorf("%d episodes ended (want 12), obs %v", ended, v.Obs)
		}
		b, _ := v.Batch()
		if tail := b.(*RemoteEnv).t.(*procTransport).stderr.tail(2); !strings.Contains(tail, "noise") {
			t.Errorf("stderr tail %q does not hold the server's stdout noise", tail)
		}
	})
}

// TestRemoteServerKilled kills the server process mid-run, as a user or
// the OOM killer might.
func TestRemoteServerKilled(t *testing.T) {
	requirePython(t)
	within(t, hangBound, "killed server", func() {
		v, err := NewRemoteVector(4, cartpoleServerArgs())
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		v.Reset(0)
		acts := make([]float32, 4)
		for i := 0; i < 10; i++ {
			v.Step(acts)
		}
		b, _ := v.Batch()
		p := b.(*RemoteEnv).t.(*procTransport)
		p.cmd.Process.Kill()
		<-p.exited
		start := time.Now()
		v.Step(acts)
		checkErr(t, v.Err(), "step request 11", "closed the connection", "signal: killed")
		// Noticing is not waiting for timeout_s (cartpoleServerArgs: 120 s).
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("noticing the dead server took %v", d)
		}
		t.Logf("error after %v: %v", time.Since(start).Round(time.Millisecond), v.Err())
	})
}
