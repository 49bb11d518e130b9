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
// says at the second step (or at handshake).
func fakeServe(conn net.Conn, mode string) {
	defer conn.Close()
	const n, d = 2, 3
	send := func(h any, p []byte) {
		b, _ := appendFrame(nil, h, p)
		conn.Write(b)
	}
	var buf []byte
	var f frame
	var err error
	if f, buf, err = readFrame(conn, buf, 1<<20); err != nil || f.Header.Type != "hello" {
		return
	}
	hello := map[string]any{
		"type": "hello", "protocol": 1, "num_envs": f.Header.NumEnvs, "env": "fake",
		"observation_space": encodeSpace(envs.Space{Kind: envs.Box, Dim: d}),
		"action_space":      encodeSpace(envs.Space{Kind: envs.Discrete, N: 2}),
	}
	switch mode {
	case "hello-hang":
		io.Copy(io.Discard, conn)
		return
	case "hello-version":
		hello["protocol"] = 2
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

// TestRemoteFailuresTCP runs misbehaving servers: each failure must stop the
// vector with an error naming what was wrong, quickly and without a panic.
func TestRemoteFailuresTCP(t *testing.T) {
	for _, c := range []struct {
		mode string
		want []string
	}{
		{"hello-hang", []string{"handshake", "no progress waiting for the reply within 300ms", "env.args.handshake_timeout_s"}},
		{"hello-version", []string{"protocol version 2, this client speaks 1"}},
		{"hello-num-envs", []string{"serves 3 sub-environments, env.num_envs asks for 2"}},
		{"hello-space", []string{"observation_space has kind \"tuple\""}},
		{"hello-box-bounds", []string{"dim 3 but 2 low bounds"}},
		{"hello-discrete-obs", []string{"observations must be a box"}},
		{"hello-huge", []string{"observation_space is a box with dim = 16777216; more than 4194302 do not fit in a frame (raise env.args.max_frame_bytes"}},
		{"hello-error", []string{"the server reported an error: ModuleNotFoundError: No module named 'gymnasium'"}},
		{"crash", []string{"step request 2", "closed the connection while the client was waiting for the reply"}},
		{"hang", []string{"step request 2", "no progress waiting for the reply within 300ms (env.args.timeout_s)", "hung"}},
		{"garbage", []string{"not a protocol frame", `got "Traceback (most recent call last):\n  File \"env.py\"\n"`, "logs belong on stderr"}},
		{"oversize", []string{"1073741824-byte payload", "env.args.max_frame_bytes"}},
		{"huge-header", []string{"header length 1073741824 is outside"}},
		{"truncated", []string{"ended in the middle of a frame"}},
		{"bad-json", []string{"not a valid JSON object"}},
		{"no-type", []string{`header has no "type"`}},
		{"short-obs", []string{"payload is 38 bytes, less than the 42 that 2 sub-environments with 3-float observations need", "do the server's observations match the observation_space it declared?"}},
		{"extra-final", []string{"payload is 46 bytes, want 42 for 2 sub-environments with 3-float observations of which 0 ended"}},
		{"bad-flags", []string{"flags byte for sub-environment 1 is 0x04"}},
		{"nan-obs", []string{"non-finite observation (NaN in element 1 of sub-environment 1)"}},
		{"inf-final-obs", []string{"non-finite final observation (+Inf in element 0 of sub-environment 1)"}},
		{"nan-reward", []string{"non-finite reward (NaN) for sub-environment 1"}},
		{"wrong-type", []string{`answered step with a "reset" message`}},
		{"error", []string{"the server reported an error: ValueError: the pole fell off the cart", "server traceback:", `File "env.py", line 3`}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			addr := startFakeServer(t, c.mode)
			within(t, 5*time.Second, c.mode, func() {
				args := envs.Params{"address": addr, "timeout_s": 0.3, "handshake_timeout_s": 0.3}
				v, err := NewRemoteVector(2, args)
				if strings.HasPrefix(c.mode, "hello") {
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
				v.Step(acts)
				err = v.Err()
				checkErr(t, err, append(c.want, "remote environment at "+addr)...)
				t.Log(err)
				start := time.Now()
				v.Step(acts) // sticky: no more I/O
				v.Reset(2)
				if v.Err() != err || time.Since(start) > 50*time.Millisecond {
					t.Errorf("after a failure the vector went on talking or changed its error: %v", v.Err())
				}
				if len(v.Finished) != 0 {
					t.Errorf("finished episodes after a failure: %+v", v.Finished)
				}
			})
		})
	}
}

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
		{"hang", false, []string{"step request 3", "no progress waiting for the reply within 1s (env.args.timeout_s)"}},
		{"garbage", false, []string{"step request 3", "not a protocol frame", `"Traceback (most recent call last): something printed this\n"`}},
		{"error", false, []string{"step request 3", "ValueError: the pole fell off the cart", "server traceback:", "misbehaving_server.py"}},
		{"nan", false, []string{"step request 3", "non-finite observation (NaN in element 1 of sub-environment 0)"}},
		{"startup-crash", true, []string{"handshake", "exit status 1", "No module named 'no_such_module_for_the_test'"}},
		{"slow-hello", true, []string{"handshake", "env.args.handshake_timeout_s", "starting it and building its environments"}},
		{"ok", true, []string{"handshake", "this server was started with --num-envs 4; the client asks for 2 (set env.num_envs = 4)"}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			within(t, 10*time.Second, c.mode, func() {
				cmd := []any{"python3", script, "--mode", c.mode}
				if c.mode == "ok" {
					cmd = append(cmd, "--num-envs", "4")
				}
				args := envs.Params{"command": cmd, "timeout_s": 1, "handshake_timeout_s": 5}
				if c.mode == "slow-hello" {
					args["handshake_timeout_s"] = 0.7
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
				v.Reset(0)
				acts := []float32{1, 0}
				for i := 0; i < 3 && v.Err() == nil; i++ {
					v.Step(acts)
				}
				err = v.Err()
				checkErr(t, err, c.want...)
				t.Log(err)
				// The failure itself stops the server: a hung one must not
				// outlive a trainer that forgets Close.
				b, _ := v.Batch()
				p := b.(*RemoteEnv).t.(*procTransport)
				select {
				case <-p.exited:
				case <-time.After(3 * time.Second):
					t.Error("the server process is still running after the failure")
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
	within(t, 10*time.Second, "noisy server", func() {
		v, err := NewRemoteVector(3, envs.Params{"command": []any{"python3", filepath.Join("..", "..", "remote", "testdata", "misbehaving_server.py"), "--mode", "noisy"}})
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
	within(t, 10*time.Second, "killed server", func() {
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
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("noticing the dead server took %v", d)
		}
		t.Logf("error after %v: %v", time.Since(start).Round(time.Millisecond), v.Err())
	})
}
