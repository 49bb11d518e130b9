package remote

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
)

// trace is what a vector did over a run of random actions.
type trace struct {
	obs, final []uint32 // float bits
	rewards    []float32
	flags      []byte
	episodes   []envs.Episode
}

// record steps v with a fixed stream of random actions and keeps every bit
// it returned.
func record(t *testing.T, v *envs.Vector, seed int64, steps int) trace {
	t.Helper()
	var tr trace
	bits := func(dst []uint32, src []float32) []uint32 {
		for _, x := range src {
			dst = append(dst, math.Float32bits(x))
		}
		return dst
	}
	v.Reset(seed)
	if err := v.Err(); err != nil {
		t.Fatal(err)
	}
	tr.obs = bits(tr.obs, v.Obs)
	rng := rand.New(rand.NewPCG(7, 8))
	acts := make([]float32, v.Len())
	d := v.ObsDim
	for step := range steps {
		randomDiscrete(rng, acts, v.ActionSpace().N)
		v.Step(acts)
		if err := v.Err(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		tr.obs = bits(tr.obs, v.Obs)
		tr.rewards = append(tr.rewards, v.Rewards...)
		for i := range v.Len() {
			f := byte(0)
			if v.Terminated[i] {
				f |= 1
			}
			if v.Truncated[i] {
				f |= 2
			}
			tr.flags = append(tr.flags, f)
			if f != 0 {
				tr.final = bits(tr.final, v.FinalObs[i*d:(i+1)*d])
			}
		}
		tr.episodes = append(tr.episodes, v.Finished...)
	}
	return tr
}

func (a trace) equal(b trace) bool {
	return slices.Equal(a.obs, b.obs) && slices.Equal(a.final, b.final) && slices.Equal(a.rewards, b.rewards) &&
		slices.Equal(a.flags, b.flags) && slices.Equal(a.episodes, b.episodes)
}

// TestPoolMatchesOneServer steps CartPole with one server and with pools of
// 2, 3 (shares of 3, 3 and 2) and 8 workers: every observation, reward, flag
// and episode is the same, bit for bit, after a seeded reset and after an
// unseeded one (each sub-environment's default stream follows its index
// among all workers', the hello's env_offset).
func TestPoolMatchesOneServer(t *testing.T) {
	requirePython(t)
	const n, steps = 8, 400
	within(t, hangBound, "pools of CartPole servers", func() {
		for _, seed := range []int64{11, envs.NoSeed} {
			var want trace
			for _, workers := range []int{1, 2, 3, 8} {
				args := cartpoleServerArgs()
				if workers > 1 {
					args["workers"] = int64(workers)
				}
				v, err := NewRemoteVector(n, args)
				if err != nil {
					t.Fatal(err)
				}
				if b, _ := v.Batch(); workers > 1 {
					if p, ok := b.(*WorkerPool); !ok || p.Workers() != workers {
						t.Fatalf("workers = %d built %T", workers, b)
					}
				}
				got := record(t, v, seed, steps)
				v.Close()
				if workers == 1 {
					want = got
					if len(want.episodes) < 20 {
						t.Fatalf("only %d episodes in %d steps: the comparison covers too few resets", len(want.episodes), steps)
					}
					continue
				}
				if !got.equal(want) {
					t.Errorf("seed %d: %d workers differ from one server (%d vs %d episodes)", seed, workers, len(got.episodes), len(want.episodes))
				}
			}
		}
	})
}

func misbehavingArgs(mode string, at int, extra ...any) envs.Params {
	cmd := []any{"python3", filepath.Join("..", "..", "remote", "testdata", "misbehaving_server.py"), "--mode", mode, "--at", strconv.Itoa(at)}
	return envs.Params{"command": append(cmd, extra...), "timeout_s": generousTimeout, "handshake_timeout_s": generousTimeout}
}

// TestPoolWorkerFailures: a worker that crashes or hangs stops the pool with
// an error naming the worker, its sub-environments and the server's last
// stderr lines; the other workers' processes are stopped too.
func TestPoolWorkerFailures(t *testing.T) {
	requirePython(t)
	for _, c := range []struct {
		mode      string
		timeout   float64
		wantParts []string
	}{
		{"crash", generousTimeout, []string{"env worker 2 of 4 (sub-environments 4–5)", "step request 3", "exit status 3", "simulated crash: the physics blew up at step 3"}},
		// The healthy workers answer in milliseconds; the hung one never
		// does. A loaded machine can only make the wait longer.
		{"hang", 3, []string{"env worker 2 of 4 (sub-environments 4–5)", "step request 3", "no progress", "env.args.timeout_s"}},
		{"error", generousTimeout, []string{"env worker 2 of 4", "ValueError: the pole fell off the cart"}},
	} {
		within(t, hangBound, c.mode, func() {
			args := misbehavingArgs(c.mode, 3, "--only-offset", "4")
			args["workers"], args["timeout_s"] = int64(4), c.timeout
			v, err := NewRemoteVector(8, args)
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			v.Reset(1)
			acts := make([]float32, 8)
			for step := 1; step <= 5 && v.Err() == nil; step++ {
				v.Step(acts)
			}
			checkErr(t, v.Err(), c.wantParts...)
			if err := v.Err(); err != nil {
				for _, other := range []string{"env worker 0 ", "env worker 1 ", "env worker 3 "} {
					if strings.Contains(err.Error(), other) && c.mode != "hang" {
						t.Errorf("%s: the error blames a healthy worker (%s):\n%v", c.mode, other, err)
					}
				}
			}
		})
	}
}

// TestPoolRestartsWorker: with restart_workers, a worker that crashes is
// started again; its sub-environments' episodes end as truncated on the
// failed step (reward 0, the observation the step started from as the final
// one) and new ones begin, while the other workers' go on untouched.
func TestPoolRestartsWorker(t *testing.T) {
	requirePython(t)
	once := filepath.Join(t.TempDir(), "crashed")
	within(t, hangBound, "a restarted worker", func() {
		args := misbehavingArgs("crash", 3, "--only-offset", "2", "--once-file", once)
		args["workers"], args["restart_workers"] = int64(3), true
		v, err := NewRemoteVector(6, args)
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		b, _ := v.Batch()
		p := b.(*WorkerPool)
		var notes []string
		p.SetLog(func(s string) { notes = append(notes, s) })
		v.Reset(1)
		acts := make([]float32, 6)
		for step := 1; step <= 3; step++ {
			v.Step(acts)
			if err := v.Err(); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
		// Step 3 crashed worker 1 (sub-environments 2 and 3).
		if p.Restarts() != 1 || len(notes) != 1 || !strings.Contains(notes[0], "env worker 1 of 3 (sub-environments 2–3)") || !strings.Contains(notes[0], "simulated crash") {
			t.Fatalf("restarts %d, notes %q", p.Restarts(), notes)
		}
		for i := range 6 {
			restarted := i == 2 || i == 3
			if v.Truncated[i] != restarted || v.Terminated[i] {
				t.Errorf("sub-env %d: terminated %v truncated %v", i, v.Terminated[i], v.Truncated[i])
			}
			wantObs := []float32{float32(i), 3}
			if restarted {
				wantObs[1] = 0 // a new episode
				if fo := v.FinalObs[2*i : 2*i+2]; !slices.Equal(fo, []float32{float32(i), 2}) {
					t.Errorf("sub-env %d: final observation %v, want the one the failed step started from", i, fo)
				}
				if v.Rewards[i] != 0 {
					t.Errorf("sub-env %d: reward %v on the failed step", i, v.Rewards[i])
				}
			}
			if got := v.Obs[2*i : 2*i+2]; !slices.Equal(got, wantObs) {
				t.Errorf("sub-env %d: observation %v, want %v", i, got, wantObs)
			}
		}
		if len(v.Finished) != 2 || !v.Finished[0].Truncated || v.Finished[0].Length != 3 {
			t.Errorf("finished %+v", v.Finished)
		}
		for step := 4; step <= 12; step++ {
			v.Step(acts)
			if err := v.Err(); err != nil {
				t.Fatalf("step %d after the restart: %v", step, err)
			}
		}
		if _, err := os.Stat(once); err != nil {
			t.Error(err)
		}
	})
	within(t, hangBound, "restarts used up", func() {
		args := misbehavingArgs("crash", 2, "--only-offset", "0")
		args["workers"], args["restart_workers"], args["max_restarts"] = int64(2), true, int64(2)
		v, err := NewRemoteVector(4, args)
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		b, _ := v.Batch()
		b.(*WorkerPool).SetLog(func(string) {})
		v.Reset(1)
		for step := 0; step < 20 && v.Err() == nil; step++ {
			v.Step(make([]float32, 4))
		}
		checkErr(t, v.Err(), "env worker 0 of 2", "simulated crash", "not restarted: the workers have been restarted 2 times, env.args.max_restarts")
	})
}

func TestPoolArgs(t *testing.T) {
	for _, c := range []struct {
		n    int
		args envs.Params
		want string
	}{
		{2, envs.Params{"command": "x", "workers": int64(3)}, "env.args.workers = 3 is more than env.num_envs = 2"},
		{4, envs.Params{"command": "x", "workers": int64(0)}, "workers must be a whole number from 1 to 1024"},
		{4, envs.Params{"command": "x", "workers": 1.5}, "whole number"},
		{4, envs.Params{"command": "x", "batch_size": int64(2)}, "set env.args.workers to 2 or more"},
		{6, envs.Params{"command": "x", "workers": int64(4), "batch_size": int64(2)}, "env.num_envs = 6 must be a multiple of env.args.workers = 4"},
		{8, envs.Params{"command": "x", "workers": int64(4), "batch_size": int64(3)}, "batch_size = 3 must be a multiple of the 2 sub-environments each of the 4 workers holds"},
		{8, envs.Params{"command": "x", "workers": int64(4), "batch_size": int64(9)}, "batch_size = 9 is more than env.num_envs = 8"},
		{8, envs.Params{"command": "x", "max_restarts": int64(3)}, "set restart_workers = true"},
		{8, envs.Params{"command": "x", "secret_file": "s"}, "secret_file authenticates servers at env.args.address"},
		{8, envs.Params{"address": []any{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, "workers": int64(2)}, "lists 3 servers but env.args.workers = 2"},
		{8, envs.Params{"address": []any{"127.0.0.1:1", int64(2)}}, `"HOST:PORT" or a list of them`},
		{8, envs.Params{"launcher": "mpirun", "command": "x"}, `launcher must be "srun"`},
		{8, envs.Params{"launcher": "srun"}, "set env.args.command"},
		{8, envs.Params{"rendezvous": "/nonexistent-dir-for-the-test", "workers": int64(2)}, "is not a directory"},
		{8, envs.Params{"command": "x", "srun_args": []any{"-N2"}}, "apply to env.args.launcher"},
		{8, envs.Params{"command": "x", "workerz": int64(2)}, "did you mean workers?"},
	} {
		_, err := NewRemoteVector(c.n, c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v (num_envs %d): %v, want an error containing %q", c.args, c.n, err, c.want)
		}
	}
}
