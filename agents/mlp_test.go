package agents

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
)

func newTestAgent(t *testing.T, act envs.Space, hidden []int) (*ActorCritic, *gpu.CPU) {
	dev := gpu.NewCPU(1)
	a, err := NewActorCritic(Build{Obs: envs.Space{Kind: envs.Box, Dim: 3}, Act: act, Config: Config{"hidden": hidden,
		"activation": "tanh"}, Device: dev, RNG: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	return a, dev
}

// TestActorCriticGradients checks Gradients against central differences of
// the whole PPO loss (policy + entropy + value) in every parameter.
func TestActorCriticGradients(t *testing.T) {
	for _, tc := range []struct {
		name string
		act  envs.Space
	}{
		{"categorical", envs.Space{Kind: envs.Discrete, N: 3}},
		{"gaussian", envs.Space{Kind: envs.Box, Dim: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, dev := newTestAgent(t, tc.act, []int{5, 4})
			r := rand.New(rand.NewPCG(3, 4))
			const B = 8
			ad := tc.act.Size()
			obs, acts := make([]float32, B*3), make([]float32, B*ad)
			for i := range obs {
				obs[i] = float32(r.NormFloat64())
			}
			// Make the policy non-trivial so gradients are not tiny.
			p := dev.Data(a.Params())
			for i := range p {
				p[i] += float32(r.NormFloat64() * 0.3)
			}
			old, vals := make([]float32, B), make([]float32, B)
			a.Act(obs, B, r, false, acts, old, vals)
			for i := range old {
				old[i] += float32(r.NormFloat64() * 0.05)
			}
			adv, ret := make([]float32, B), make([]float32, B)
			for i := range adv {
				adv[i], ret[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			up := func(rows, cols int, v []float32) gpu.Tensor { x := dev.Alloc(rows, cols); dev.Upload(x, v); return x }
			obsT, actT, oldT, advT, retT, valT := up(B, 3, obs), up(B, ad, acts), up(B, 1, old), up(B, 1, adv), up(B, 1, ret), up(B, 1, vals)
			stats := dev.Alloc(1, gpu.NumStats)
			loss := func() float64 {
				dev.Fill(stats, 0)
				a.Gradients(obsT, gpu.PPOPolicyArgs{Actions: actT, OldLogp: oldT, Adv: advT, ClipCoef: 10, EntCoef: 0.05, NormAdv: true, Stats: stats},
					&gpu.ValueArgs{OldValue: valT, Returns: retT, ClipCoef: 10, Clip: true, VFCoef: 0.5, Stats: stats})
				s := dev.Data(stats)
				return float64(s[gpu.StatPolicyLoss]) - 0.05*float64(s[gpu.StatEntropy]) + 0.5*float64(s[gpu.StatValueLoss])
			}
			loss()
			grad := append([]float32(nil), dev.Data(a.Grads())...)
			const h = 1e-2
			for i := range p {
				orig := p[i]
				p[i] = orig + h
				lu := loss()
				p[i] = orig - h
				ld := loss()
				p[i] = orig
				num := (lu - ld) / (2 * h)
				if math.Abs(num-float64(grad[i])) > 2e-4+2e-2*math.Abs(num) {
					t.Errorf("param %d: analytic %v, numeric %v", i, grad[i], num)
				}
			}
		})
	}
}

func TestInitialPolicyIsNearUniform(t *testing.T) {
	a, _ := newTestAgent(t, envs.Space{Kind: envs.Discrete, N: 2}, []int{64, 64})
	obs := []float32{0.1, -0.2, 0.3}
	acts, logp, vals := make([]float32, 1), make([]float32, 1), make([]float32, 1)
	a.Act(obs, 1, rand.New(rand.NewPCG(1, 1)), false, acts, logp, vals)
	// Policy head gain 0.01 keeps initial logits tiny: both actions ≈ ½.
	if math.Abs(float64(logp[0])-math.Log(0.5)) > 0.01 {
		t.Fatalf("initial log-prob %v, want ≈ log ½", logp[0])
	}
	if names := a.Tensors(); names[0].Name != "actor.0.weight" || names[len(names)-1].Name != "critic.4.bias" {
		t.Fatalf("tensor names %q … %q", names[0].Name, names[len(names)-1].Name)
	}
}

// TestGradientsSameOnAnyCoreCount: running actor and critic side by side (a
// two-core device, minibatches large enough to split) must give exactly
// the actions, values, gradients and statistics of running them one after
// the other.
func TestGradientsSameOnAnyCoreCount(t *testing.T) {
	for _, act := range []envs.Space{{Kind: envs.Discrete, N: 3}, {Kind: envs.Box, Dim: 2}} {
		for _, shape := range []struct {
			rows   int
			hidden []int
		}{{minParallelRows - 1, []int{64, 32}}, {minParallelRows, []int{64, 32}}, {200, []int{64, 32}}, {300, []int{256, 128}}} {
			rows := shape.rows
			// Four threads: each side's large products are split as well.
			var grads, stats, acted [3][]float32
			for i, threads := range []int{1, 2, 4} {
				dev := gpu.NewCPU(threads)
				a, err := NewActorCritic(Build{Obs: envs.Space{Kind: envs.Box, Dim: 5}, Act: act, Config: Config{"hidden": shape.hidden,
					"activation": "tanh"}, Device: dev, RNG: rand.New(rand.NewPCG(1, 2))})
				if err != nil {
					t.Fatal(err)
				}
				r := rand.New(rand.NewPCG(3, uint64(rows)))
				host := func(n int) []float32 {
					v := make([]float32, n)
					for j := range v {
						v[j] = float32(r.NormFloat64())
					}
					return v
				}
				obs := host(rows * 5)
				acts, logp, vals := make([]float32, rows*act.Size()), make([]float32, rows), make([]float32, rows)
				a.Act(obs, rows, r, false, acts, logp, vals)
				acted[i] = slices.Concat(acts, logp, vals)
				up := func(v []float32, cols int) gpu.Tensor { x := dev.Alloc(len(v)/cols, cols); dev.Upload(x, v); return x }
				st := dev.Alloc(1, gpu.NumStats)
				for step := 0; step < 3; step++ { // stats accumulate over calls
					a.Gradients(up(obs, 5), gpu.PPOPolicyArgs{Actions: up(acts, act.Size()), OldLogp: up(host(rows), 1),
						Adv: up(host(rows), 1), ClipCoef: 0.2, EntCoef: 0.01, NormAdv: true, Stats: st},
						&gpu.ValueArgs{OldValue: up(vals, 1), Returns: up(host(rows), 1), ClipCoef: 0.2, Clip: true, VFCoef: 0.5, Stats: st})
				}
				grads[i] = append([]float32(nil), dev.Data(a.Grads())...)
				stats[i] = append([]float32(nil), dev.Data(st)...)
				dev.Close()
			}
			for i := 1; i < 3; i++ {
				if !slices.Equal(acted[0], acted[i]) {
					t.Errorf("%v, %d rows: Act differs between 1 thread and %d", act, rows, 2*i)
				}
				if !slices.Equal(grads[0], grads[i]) || !slices.Equal(stats[0], stats[i]) {
					t.Errorf("%v, %d rows: 1 thread and %d differ\nstats %v\n vs   %v", act, rows, 2*i, stats[0], stats[i])
				}
			}
		}
	}
}
