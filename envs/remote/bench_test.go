package remote

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
)

// The remote benchmarks step 16 CartPoles through the protocol with the
// pure-Python server; BenchmarkNativeCartPoleVector is the same vector of
// Go CartPoles. Both report env steps/s (16 per vector step).
//
//	go test -run '^$' -bench 'CartPole' ./envs

const benchEnvs = 16

func benchVector(b *testing.B, v *envs.Vector) {
	b.Helper()
	v.Reset(1)
	acts := make([]float32, benchEnvs)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range acts {
			acts[j] = float32((i + j) & 1)
		}
		v.Step(acts)
	}
	b.StopTimer()
	if err := v.Err(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(benchEnvs*b.N)/b.Elapsed().Seconds(), "steps/s")
}

func BenchmarkNativeCartPoleVector(b *testing.B) {
	list := make([]envs.Env, benchEnvs)
	for i := range list {
		e, err := envs.Make("CartPole-v1", nil)
		if err != nil {
			b.Fatal(err)
		}
		list[i] = e
	}
	v, err := envs.NewVector(list)
	if err != nil {
		b.Fatal(err)
	}
	benchVector(b, v)
}

func BenchmarkRemoteCartPole(b *testing.B) {
	requirePython(b)
	v, err := NewRemoteVector(benchEnvs, cartpoleServerArgs())
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	benchVector(b, v)
}

func BenchmarkRemoteCartPoleTCP(b *testing.B) {
	requirePython(b)
	addr := startPythonTCP(b, filepath.Join("..", "..", "remote", "cartpole_server.py"))
	v, err := NewRemoteVector(benchEnvs, envs.Params{"address": addr})
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	benchVector(b, v)
}

// BenchmarkWorkers steps scripts/sleepenv.py, whose every sub-environment
// step sleeps 1 ms (or spins the CPU for 1 ms), with W worker processes:
// one sub-environment per worker (W = 1 … 16, as Gymnasium's
// AsyncVectorEnv and SB3's SubprocVecEnv run one per process), 16
// sub-environments shared by W workers, and the CPU-bound variant at 1 and
// 2 workers. It reports env steps/s. With AGENTTRAINER_GYM_PYTHONPATH set to
// a PYTHONPATH where gymnasium imports, the workers run remote/gym_server.py
// serving the same environment through Gymnasium (sleepenv:Sleep-v0), the
// exact environment scripts/env_scaling_peer.py gives the peers
// (AGENTTRAINER_GYM_PYTHON names a python3 with NumPy).
//
//	go test -run '^$' -bench Workers -benchtime 400x ./envs/remote
func BenchmarkWorkers(b *testing.B) {
	requirePython(b)
	scripts, err := filepath.Abs(filepath.Join("..", "..", "scripts"))
	if err != nil {
		b.Fatal(err)
	}
	gymPath := os.Getenv("AGENTTRAINER_GYM_PYTHONPATH")
	args := func(kind string, workers int) envs.Params {
		ms := map[string]string{"sleep": "sleep", "spin": "spin"}[kind]
		p := envs.Params{"timeout_s": generousTimeout, "handshake_timeout_s": generousTimeout, "workers": int64(workers)}
		if gymPath == "" {
			p["command"] = []any{"python3", filepath.Join(scripts, "sleepenv.py"), "--" + ms + "-ms", "1"}
			return p
		}
		py := os.Getenv("AGENTTRAINER_GYM_PYTHON") // a python3 with NumPy
		if py == "" {
			py = "python3"
		}
		p["command"] = []any{py, filepath.Join(scripts, "..", "remote", "gym_server.py"), "--env", "sleepenv:Sleep-v0"}
		p["env"] = map[string]any{"PYTHONPATH": gymPath + string(os.PathListSeparator) + scripts}
		kw := map[string]any{"sleep_ms": 0.0, "spin_ms": 0.0}
		kw[ms+"_ms"] = 1.0
		p["options"] = map[string]any{"kwargs": kw}
		return p
	}
	type bc struct {
		kind          string
		envs, workers int
	}
	var cases []bc
	for _, w := range []int{1, 2, 4, 8, 16} {
		cases = append(cases, bc{"sleep", w, w})
	}
	for _, w := range []int{1, 2, 4, 8, 16} {
		cases = append(cases, bc{"sleep", 16, w})
	}
	cases = append(cases, bc{"spin", 1, 1}, bc{"spin", 2, 2}, bc{"spin", 2, 1})
	for _, c := range cases {
		b.Run(fmt.Sprintf("%s/envs=%d/workers=%d", c.kind, c.envs, c.workers), func(b *testing.B) {
			v, err := NewRemoteVector(c.envs, args(c.kind, c.workers))
			if err != nil {
				b.Fatal(err)
			}
			defer v.Close()
			v.Reset(1)
			acts := make([]float32, c.envs)
			v.Step(acts) // the first step out of the timing
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				acts[i%c.envs] = float32(i & 1)
				v.Step(acts)
			}
			b.StopTimer()
			if err := v.Err(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(c.envs*b.N)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}
