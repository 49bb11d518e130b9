package classic

import (
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
)

// BenchmarkStep measures one Step of each classic-control environment
// through its registered time limit, resetting when an episode ends, as the
// vector runner does. Step must not allocate.
func BenchmarkStep(b *testing.B) {
	for _, id := range classicControlIDs {
		b.Run(id, func(b *testing.B) {
			e, err := envs.Make(id, nil)
			if err != nil {
				b.Fatal(err)
			}
			obs := make([]float32, e.ObservationSpace().Dim)
			act := make([]float32, e.ActionSpace().Size())
			e.Reset(1, obs)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				act[0] = float32(i % 3) // a different action each step; 2 clips to 1 where continuous
				if _, term, trunc := e.Step(act, obs); term || trunc {
					e.Reset(envs.NoSeed, obs)
				}
			}
		})
	}
}
