package remote

import (
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
