package remote

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/classic"
)

// requirePython skips a test that needs python3 when there is none.
func requirePython(t testing.TB) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH; the remote environment tests run the servers in ../../remote (CI installs python3)")
	}
	return py
}

func cartpoleServerArgs(extra ...any) envs.Params {
	cmd := []any{"python3", filepath.Join("..", "..", "remote", "cartpole_server.py")}
	return envs.Params{"command": append(cmd, extra...), "timeout_s": generousTimeout, "handshake_timeout_s": generousTimeout}
}

// within runs f and bounds it by d: a hang becomes a panic naming what hung
// (the whole test binary stops, as go test -timeout would, but at once and
// with a reason) instead of a stuck test run.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	name := t.Name()
	timer := time.AfterFunc(d, func() {
		panic(fmt.Sprintf("%s: %s took longer than %v: something hangs", name, what, d))
	})
	defer timer.Stop()
	f()
}

func randomDiscrete(r *rand.Rand, acts []float32, n int) {
	for i := range acts {
		acts[i] = float32(r.IntN(n))
	}
}

// CartPole-v1's termination bounds (those of classic.CartPole).
const cpXThreshold = 2.4

var cpThetaThreshold = 12 * 2 * math.Pi / 360

func TestRemoteCartPoleStdio(t *testing.T) {
	requirePython(t)
	within(t, hangBound, "stepping the Python CartPole", func() {
		const n = 8
		v, err := NewRemoteVector(n, cartpoleServerArgs())
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		b, _ := v.Batch()
		r := b.(*RemoteEnv)
		if r.Name() != "CartPole-v1 (pure Python)" || r.MaxEpisodeSteps() != 500 {
			t.Errorf("server says env %q, max_episode_steps %d", r.Name(), r.MaxEpisodeSteps())
		}
		if os, as := v.ObservationSpace(), v.ActionSpace(); os.Kind != envs.Box || os.Dim != 4 || as.Kind != envs.Discrete || as.N != 2 {
			t.Fatalf("spaces %v / %v, want Box(4) / Discrete(2)", os, as)
		}
		if want := classic.NewCartPole().ObservationSpace(); !slices.Equal(v.ObservationSpace().High, want.High) || !slices.Equal(v.ObservationSpace().Low, want.Low) {
			t.Errorf("observation bounds %v…%v, want %v…%v", v.ObservationSpace().Low, v.ObservationSpace().High, want.Low, want.High)
		}
		v.Reset(3)
		if err := v.Err(); err != nil {
			t.Fatal(err)
		}
		first := slices.Clone(v.Obs)
		for _, x := range first {
			if math.Abs(float64(x)) > 0.05 {
				t.Fatalf("reset observation %v outside ±0.05", first)
			}
		}
		rng := rand.New(rand.NewPCG(1, 2))
		acts := make([]float32, n)
		episodes := 0
		for step := 0; step < 3000; step++ {
			// A policy that mostly balances keeps some episodes long.
			for i := range acts {
				acts[i] = 0
				if v.Obs[i*4+2]+0.5*v.Obs[i*4+3] > 0 {
					acts[i] = 1
				}
				if rng.Float64() < 0.1*float64(i)/n {
					acts[i] = 1 - acts[i]
				}
			}
			v.Step(acts)
			if err := v.Err(); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			if j := firstNonFinite(v.Obs); j >= 0 {
				t.Fatalf("step %d: non-finite observation at %d", step, j)
			}
			for _, ep := range v.Finished {
				episodes++
				if ep.Return > 500 || ep.Length > 500 || ep.Return != float64(ep.Length) {
					t.Fatalf("episode %+v: CartPole pays 1 per step for at most 500 steps", ep)
				}
				fo := v.FinalObs[ep.Env*4 : ep.Env*4+4]
				out := math.Abs(float64(fo[0])) > cpXThreshold || math.Abs(float64(fo[2])) > cpThetaThreshold
				if ep.Truncated == out || ep.Truncated != (ep.Length == 500) {
					t.Fatalf("episode %+v ended on %v: terminated episodes end out of bounds, truncated ones at 500 steps", ep, fo)
				}
				if o := v.Obs[ep.Env*4 : ep.Env*4+4]; math.Abs(float64(o[0])) > 0.05 || math.Abs(float64(o[2])) > 0.05 {
					t.Fatalf("after an episode ended, sub-env %d was not auto-reset: %v", ep.Env, o)
				}
			}
		}
		if episodes < 20 {
			t.Errorf("only %d episodes finished in 3000 steps of 8 sub-environments", episodes)
		}
		// Resetting with the same seed starts the same episodes again.
		v.Reset(3)
		if !slices.Equal(v.Obs, first) || v.Err() != nil {
			t.Errorf("reset(3) again gave %v, first time %v (err %v)", v.Obs, first, v.Err())
		}
		if err := v.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if err := v.Close(); err != nil {
			t.Errorf("second close: %v", err)
		}
		v.Step(acts) // after Close: no I/O, no panic
		if v.Err() == nil {
			t.Error("stepping a closed vector reports no error")
		}
	})
}

// startPythonTCP starts a Python server on a free loopback port and returns
// its address.
func startPythonTCP(t testing.TB, script string, args ...string) string {
	addr, _ := startSecretPython(t, script, args...)
	return addr
}

func TestRemoteCartPoleTCP(t *testing.T) {
	requirePython(t)
	addr := startPythonTCP(t, filepath.Join("..", "..", "remote", "cartpole_server.py"))
	within(t, hangBound, "stepping the Python CartPole over TCP", func() {
		// Two clients at once, each with its own sub-environments.
		args := envs.Params{"address": addr, "timeout_s": generousTimeout, "handshake_timeout_s": generousTimeout}
		a, err := NewRemoteVector(4, args)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		b, err := NewRemoteVector(4, args)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		a.Reset(5)
		b.Reset(5)
		acts := make([]float32, 4)
		for step := 0; step < 200; step++ {
			acts[step%4] = float32(step % 2)
			a.Step(acts)
			b.Step(acts)
			if a.Err() != nil || b.Err() != nil {
				t.Fatalf("step %d: %v / %v", step, a.Err(), b.Err())
			}
			if !slices.Equal(a.Obs, b.Obs) {
				t.Fatalf("step %d: two connections with the same seed and actions differ", step)
			}
		}
	})
}

// TestRemoteCartPoleMatchesGo starts the Python CartPole from the Go
// CartPole's state and compares every step of several episodes.
func TestRemoteCartPoleMatchesGo(t *testing.T) {
	requirePython(t)
	o, err := ParseRemoteArgs(cartpoleServerArgs())
	if err != nil {
		t.Fatal(err)
	}
	within(t, hangBound, "comparing CartPole physics", func() {
		r, err := OpenRemote(1, o)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		pyObs, final := make([]float32, 4), make([]float32, 4)
		rew := make([]float64, 1)
		term, trunc := make([]bool, 1), make([]bool, 1)
		if err := r.Reset(0, pyObs); err != nil {
			t.Fatal(err)
		}
		c := classic.NewCartPole()
		goObs := make([]float32, 4)
		rng := rand.New(rand.NewPCG(3, 4))
		steps, episodes, maxDiff := 0, 0, 0.0
		for steps < 600 {
			c.Reset(int64(episodes), goObs)
			f, err := r.call(struct {
				Type   string      `json:"type"`
				States [][]float64 `json:"states"`
			}{"set_state", [][]float64{c.State()}}, nil, "set_state", r.timeout)
			if err != nil {
				t.Fatal(err)
			}
			decodeF32(pyObs, f.Payload)
			if !slices.Equal(pyObs, goObs) {
				t.Fatalf("after set_state Python observes %v, Go %v", pyObs, goObs)
			}
			episodes++
			for {
				act := []float32{float32(rng.IntN(2))}
				gr, gterm, _ := c.Step(act, goObs)
				if err := r.Step(act, pyObs, final, rew, term, trunc); err != nil {
					t.Fatal(err)
				}
				steps++
				got := pyObs
				if term[0] {
					got = final
				}
				if !slices.Equal(got, goObs) || rew[0] != gr || term[0] != gterm || trunc[0] {
					t.Fatalf("episode %d step %d: Python %v r=%v term=%v trunc=%v, Go %v r=%v term=%v",
						episodes, steps, got, rew[0], term[0], trunc[0], goObs, gr, gterm)
				}
				if term[0] {
					break
				}
				f, err := r.call(struct {
					Type string `json:"type"`
				}{"get_state"}, nil, "get_state", r.timeout)
				if err != nil {
					t.Fatal(err)
				}
				for i, x := range c.State() {
					maxDiff = max(maxDiff, math.Abs(x-f.Header.States[0][i]))
				}
			}
		}
		if maxDiff != 0 {
			t.Errorf("float64 states differ by up to %g over %d steps", maxDiff, steps)
		}
		t.Logf("%d steps in %d episodes: identical observations, rewards and terminations; float64 states differ by at most %g", steps, episodes, maxDiff)
	})
}

func TestParseRemoteArgs(t *testing.T) {
	for _, c := range []struct {
		args envs.Params
		want string // "" = valid
	}{
		{envs.Params{"command": []any{"python3", "s.py"}, "timeout_s": int64(5), "max_frame_bytes": int64(4096), "stderr": "inherit", "options": map[string]any{"env": "x"}}, ""},
		{envs.Params{"command": "python3 s.py --num-envs 4"}, ""},
		{envs.Params{"address": "127.0.0.1:5555", "handshake_timeout_s": 2.5}, ""},
		{envs.Params{}, "needs env.args.command"},
		{envs.Params{"command": []any{"a"}, "address": "127.0.0.1:1"}, "both command and address"},
		{envs.Params{"command": []any{}}, "command is empty"},
		{envs.Params{"command": []any{"python3", int64(3)}}, "list of strings"},
		{envs.Params{"comand": []any{"python3"}}, "did you mean command?"},
		{envs.Params{"command": "x", "timeout_s": int64(0)}, "timeout_s must be a number of seconds above 0 and at most 86400 (one day), got 0"},
		{envs.Params{"command": "x", "handshake_timeout_s": 86400.5}, "handshake_timeout_s must be a number of seconds above 0 and at most 86400 (one day), got 86400.5"},
		{envs.Params{"command": "x", "timeout_s": int64(86400)}, ""},
		{envs.Params{"command": "x", "timeout_s": "5"}, "timeout_s must be"},
		{envs.Params{"command": "x", "max_frame_bytes": 1.5}, "max_frame_bytes must be a whole number"},
		{envs.Params{"command": "x", "stderr": "loud"}, `"capture" or "inherit"`},
		{envs.Params{"command": "x", "allow_remote": "yes"}, "true or false"},
	} {
		o, err := ParseRemoteArgs(c.args)
		if c.want == "" {
			if err != nil {
				t.Errorf("%v: %v", c.args, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q (parsed %+v)", c.args, err, c.want, o)
		}
	}
	o, _ := ParseRemoteArgs(envs.Params{"command": "python3 s.py --num-envs 4", "timeout_s": 1.5})
	if !slices.Equal(o.Command, []string{"python3", "s.py", "--num-envs", "4"}) || o.Timeout != 1500*time.Millisecond ||
		o.HandshakeTimeout != DefaultRemoteHandshakeTimeout || o.MaxFrameBytes != DefaultMaxFrameBytes {
		t.Errorf("parsed %+v", o)
	}
}

func TestRemoteAddressMustBeLoopback(t *testing.T) {
	for _, c := range []struct {
		addr  string
		allow bool
		want  string
	}{
		{"10.1.2.3:5555", false, "not a loopback address"},
		{"[2001:db8::1]:5555", false, "not a loopback address"},
		{":5555", false, "not a loopback address"},
		{"127.0.0.1", false, "not HOST:PORT"},
		{"127.0.0.1:1", false, "cannot connect"},
		{"[::1]:1", false, "cannot connect"},
		{"192.0.2.1:5555", true, ""}, // allowed: fails later, in whatever way this network fails
	} {
		_, err := NewRemoteVector(2, envs.Params{"address": c.addr, "allow_remote": c.allow, "handshake_timeout_s": 0.2})
		if c.want == "" {
			if err == nil || strings.Contains(err.Error(), "loopback") {
				t.Errorf("%s (allow_remote %v): %v", c.addr, c.allow, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s (allow_remote %v): %v, want an error containing %q", c.addr, c.allow, err, c.want)
		}
	}
}

func TestRemoteCommandNotFound(t *testing.T) {
	_, err := NewRemoteVector(2, envs.Params{"command": []any{"no-such-server-binary-for-the-test"}})
	if err == nil || !strings.Contains(err.Error(), "cannot start the server") || !strings.Contains(err.Error(), "env.args.command") {
		t.Errorf("error %v", err)
	}
}

func TestRemoteRegistered(t *testing.T) {
	s, ok := envs.Lookup(RemoteID)
	if !ok || s.Description == "" || s.NewBatch == nil {
		t.Fatalf("remote not registered as a batch environment: %+v", s)
	}
	if _, err := envs.Make(RemoteID, nil); !errors.Is(err, ErrRemoteIsBatch) {
		t.Errorf("Make(remote): %v", err)
	}
	if _, err := s.NewBatch(2, envs.Params{"command": []any{"no-such-server-binary-for-the-test"}}); err == nil || !strings.Contains(err.Error(), "cannot start the server") {
		t.Errorf("NewBatch: %v", err)
	}
}

// TestGymServer runs remote/gym_server.py on a stand-in for gymnasium
// (remote/testdata/fakegym): spaces, one-hot observations, Discrete actions
// with a start offset, success reporting and options from the client.
func TestGymServer(t *testing.T) {
	requirePython(t)
	fake, err := filepath.Abs(filepath.Join("..", "..", "remote", "testdata", "fakegym"))
	if err != nil {
		t.Fatal(err)
	}
	within(t, hangBound, "gym_server.py", func() {
		v, err := NewRemoteVector(3, envs.Params{
			"timeout_s": generousTimeout, "handshake_timeout_s": generousTimeout,
			"command": []any{"python3", filepath.Join("..", "..", "remote", "gym_server.py"), "--success-key", "is_success"},
			"env":     map[string]any{"PYTHONPATH": fake},
			"options": map[string]any{"env": "FakeWalk-v0", "kwargs": map[string]any{"size": int64(3)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		b, _ := v.Batch()
		r := b.(*RemoteEnv)
		if os, as := v.ObservationSpace(), v.ActionSpace(); os.Dim != 3 || !slices.Equal(os.High, []float32{1, 1, 1}) || as.Kind != envs.Discrete || as.N != 3 ||
			r.Name() != "FakeWalk-v0" || r.MaxEpisodeSteps() != 10 || !r.ReportsSuccess() {
			t.Fatalf("hello: %v %v %q %d %v", os, as, r.Name(), r.MaxEpisodeSteps(), r.ReportsSuccess())
		}
		v.Reset(0)
		if !slices.Equal(v.Obs, []float32{1, 0, 0, 1, 0, 0, 1, 0, 0}) {
			t.Fatalf("one-hot reset observations %v", v.Obs)
		}
		// Sub-env 0 walks right (goal in 2 steps), 1 walks left (cut at 10), 2 alternates.
		var eps []envs.Episode
		for step := 0; step < 10; step++ {
			v.Step([]float32{2, 0, float32(2 * (step % 2))})
			if err := v.Err(); err != nil {
				t.Fatal(err)
			}
			eps = append(eps, v.Finished...)
		}
		want := []envs.Episode{
			{Env: 0, Return: 1, Length: 2, Success: true, HasSuccess: true},
			{Env: 0, Return: 1, Length: 2, Success: true, HasSuccess: true},
			{Env: 0, Return: 1, Length: 2, Success: true, HasSuccess: true},
			{Env: 0, Return: 1, Length: 2, Success: true, HasSuccess: true},
			{Env: 0, Return: 1, Length: 2, Success: true, HasSuccess: true},
			{Env: 1, Return: 0, Length: 10, Truncated: true, HasSuccess: true},
			{Env: 2, Return: 0, Length: 10, Truncated: true, HasSuccess: true},
		}
		if !slices.Equal(eps, want) {
			t.Errorf("episodes\n got  %+v\n want %+v", eps, want)
		}
		if !slices.Equal(v.FinalObs[3:6], []float32{1, 0, 0}) {
			t.Errorf("final observation of sub-env 1: %v", v.FinalObs[3:6])
		}
	})
	within(t, hangBound, "gym_server.py errors", func() {
		_, err := NewRemoteVector(2, envs.Params{
			"command":             []any{"python3", filepath.Join("..", "..", "remote", "gym_server.py"), "--env", "NoSuchEnv-v9"},
			"env":                 map[string]any{"PYTHONPATH": fake},
			"handshake_timeout_s": generousTimeout,
		})
		checkErr(t, err, "handshake", "the server reported an error: ValueError: fake gymnasium only has FakeWalk-v0, not 'NoSuchEnv-v9'", "server traceback:")
		_, err = NewRemoteVector(2, envs.Params{
			"command":             []any{"python3", filepath.Join("..", "..", "remote", "gym_server.py")},
			"env":                 map[string]any{"PYTHONPATH": fake},
			"handshake_timeout_s": generousTimeout,
		})
		checkErr(t, err, "no environment to serve: start gym_server.py with --env ID or set env.args.options.env")
	})
	if exec.Command("python3", "-c", "import gymnasium").Run() != nil {
		_, err := NewRemoteVector(2, envs.Params{"command": []any{"python3", filepath.Join("..", "..", "remote", "gym_server.py"), "--env", "CartPole-v1"}, "handshake_timeout_s": generousTimeout})
		checkErr(t, err, "gymnasium is not installed", "pip install gymnasium")
	}
}
