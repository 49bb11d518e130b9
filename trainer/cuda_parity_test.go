//go:build cuda

package trainer_test

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/internal/numtest"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
)

// Whole-update parity: the same agent (mlp or cnn), built from the same seed on
// the CPU and on the GPU, goes through the steps of trainer.update
// (Forward, PolicyLoss, ValueLoss, Backward, ClipGradNorm, Adam) on the same
// minibatches; values, gradients, parameters, Adam moments and statistics
// must agree within a relative error of 1e-4 after every step.
//
// The networks use tanh, and the minibatches keep ratios and values away
// from the clipping boundaries: there the loss is discontinuous, and a
// rounding difference between devices may put one sample on the other side
// (ReLU has the same kind of edge at 0; the cnn's convolutions use ReLU,
// but an output within rounding of 0 moves its gradients far less than the
// tolerance). The op-level tests in gpu/ feed
// identical inputs to both devices and do exercise clipping and ReLU.

const updateTol = 1e-4

func openTestGPU(t testing.TB) *gpu.CUDA {
	t.Helper()
	g, err := gpu.OpenCUDA(0)
	if err != nil {
		t.Skipf("no usable GPU: %v", err)
	}
	t.Cleanup(g.Close)
	return g
}

// learnerState is one device's copy of everything an update touches.
type learnerState struct {
	dev                                  gpu.Device
	agent                                agents.Learner
	obs, acts, logp, adv, ret, oldValues gpu.Tensor
	stats, m, v                          gpu.Tensor
}

func newLearnerState(t *testing.T, dev gpu.Device, obs, act envs.Space, hidden []int, conv [][]int, B int) *learnerState {
	build := agents.Build{Obs: obs, Act: act, Config: agents.Config{"hidden": hidden, "conv": conv, "activation": "tanh"},
		Device: dev, RNG: rand.New(rand.NewPCG(42, 1))}
	var a agents.Learner
	var err error
	if conv != nil {
		a, err = agents.NewCNN(build)
	} else {
		a, err = agents.NewActorCritic(build)
	}
	if err != nil {
		t.Fatal(err)
	}
	n := a.Params().Len()
	return &learnerState{dev: dev, agent: a,
		obs: dev.Alloc(B, obs.Dim), acts: dev.Alloc(B, act.Size()), logp: dev.Alloc(B, 1), adv: dev.Alloc(B, 1),
		ret: dev.Alloc(B, 1), oldValues: dev.Alloc(B, 1), stats: dev.Alloc(1, gpu.NumStats),
		m: dev.Alloc(1, n), v: dev.Alloc(1, n)}
}

// step runs one minibatch update as trainer.update does and returns the
// values of the forward pass.
func (s *learnerState) step(host minibatch, step int) []float32 {
	d := s.dev
	d.Upload(s.obs, host.obs)
	d.Upload(s.acts, host.acts)
	d.Upload(s.logp, host.logp)
	d.Upload(s.adv, host.adv)
	d.Upload(s.ret, host.ret)
	d.Upload(s.oldValues, host.oldValues)
	value := gpu.ValueArgs{OldValue: s.oldValues, Returns: s.ret, ClipCoef: 0.2, Clip: true, VFCoef: 0.5, Stats: s.stats}
	s.agent.Gradients(s.obs, gpu.PPOPolicyArgs{Actions: s.acts, OldLogp: s.logp, Adv: s.adv,
		ClipCoef: 0.2, EntCoef: 0.01, NormAdv: true, Stats: s.stats}, &value)
	out := make([]float32, value.Value.Len())
	d.Download(out, value.Value)
	d.ClipGradNorm(s.agent.Grads(), 0.5, s.stats)
	d.Adam(s.agent.Params(), s.agent.Grads(), s.m, s.v,
		gpu.AdamArgs{LR: 2.5e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-5, Step: step})
	return out
}

func (s *learnerState) host(t gpu.Tensor) []float32 {
	out := make([]float32, t.Len())
	s.dev.Download(out, t)
	return out
}

type minibatch struct {
	obs, acts, logp, adv, ret, oldValues []float32
}

// makeMinibatch samples actions from the CPU agent's current policy and
// perturbs its log-probabilities and values slightly, so that ratios and
// value changes stay well inside the clipping range.
func makeMinibatch(r *rand.Rand, a agents.Agent, obsDim, actSize, B int) minibatch {
	mb := minibatch{obs: make([]float32, B*obsDim), acts: make([]float32, B*actSize), logp: make([]float32, B),
		adv: make([]float32, B), ret: make([]float32, B), oldValues: make([]float32, B)}
	for i := range mb.obs {
		mb.obs[i] = float32(r.NormFloat64())
	}
	a.Act(mb.obs, B, r, false, mb.acts, mb.logp, mb.oldValues)
	for i := 0; i < B; i++ {
		mb.logp[i] += float32(0.02 * r.NormFloat64())
		mb.oldValues[i] += float32(0.02 * r.NormFloat64())
		mb.adv[i] = float32(r.NormFloat64() + 0.3)
		mb.ret[i] = mb.oldValues[i] + float32(r.NormFloat64())
	}
	return mb
}

func TestCUDAPPOUpdateParity(t *testing.T) {
	g := openTestGPU(t)
	c := gpu.NewCPU(0)
	defer c.Close()
	box := func(n int) envs.Space {
		s := envs.Space{Kind: envs.Box, Dim: n}
		for i := 0; i < n; i++ {
			s.Low, s.High = append(s.Low, -1), append(s.High, 1)
		}
		return s
	}
	image := func(h, w, c int) envs.Space { // as MinAtar's observations
		s := box(h * w * c)
		s.Shape = []int{h, w, c}
		return s
	}
	cases := []struct {
		name     string
		obs, act envs.Space
		hidden   []int
		conv     [][]int // the cnn agent when set
		B        int
	}{
		{"CartPole-like [64,64] B=128", box(4), envs.Space{Kind: envs.Discrete, N: 2}, []int{64, 64}, nil, 128},
		{"discrete [256,256] B=8192", box(8), envs.Space{Kind: envs.Discrete, N: 5}, []int{256, 256}, nil, 8192},
		{"Gaussian [64,64] B=512", box(3), box(1), []int{64, 64}, nil, 512},
		{"Gaussian [256,256] B=4096", box(11), box(3), []int{256, 256}, nil, 4096},
		{"cnn MinAtar preset 10×10×4 B=1024", image(10, 10, 4), envs.Space{Kind: envs.Discrete, N: 3}, []int{128}, [][]int{{16, 3, 1}}, 1024},
		{"cnn two convs, padding, stride 2, Gaussian B=256", image(12, 9, 3), box(2), []int{32}, [][]int{{8, 3, 1, 1}, {6, 2, 2}}, 256},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := newLearnerState(t, c, tc.obs, tc.act, tc.hidden, tc.conv, tc.B)
			gs := newLearnerState(t, g, tc.obs, tc.act, tc.hidden, tc.conv, tc.B)
			maxErr := map[string]float64{} // per quantity, over the steps
			defer func() {
				for _, what := range slices.Sorted(maps.Keys(maxErr)) {
					t.Logf("max relative error %-22s %.3g", what, maxErr[what])
				}
			}()
			compare := func(what string, got, want []float32) {
				t.Helper()
				e, i := numtest.RelErr(got, want)
				key := what
				if _, rest, ok := strings.Cut(what, ": "); ok {
					key = rest
				}
				maxErr[key] = max(maxErr[key], e)
				if e > updateTol {
					t.Fatalf("%s: relative error %.3g at %d (gpu %v, cpu %v)", what, e, i, got[i], want[i])
				}
			}
			compare("initial parameters", gs.host(gs.agent.Params()), cs.host(cs.agent.Params()))
			r := rand.New(rand.NewPCG(7, uint64(tc.B)))
			for step := 1; step <= 3; step++ {
				mb := makeMinibatch(r, cs.agent, tc.obs.Dim, tc.act.Size(), tc.B)
				cv := cs.step(mb, step)
				gv := gs.step(mb, step)
				at := fmt.Sprintf("step %d: ", step)
				compare(at+"values", gv, cv)
				compare(at+"clipped gradients", gs.host(gs.agent.Grads()), cs.host(cs.agent.Grads()))
				compare(at+"parameters", gs.host(gs.agent.Params()), cs.host(cs.agent.Params()))
				compare(at+"Adam m", gs.host(gs.m), cs.host(cs.m))
				compare(at+"Adam v", gs.host(gs.v), cs.host(cs.v))
				cst, gst := cs.host(cs.stats), gs.host(gs.stats)
				for i := range cst {
					if d := math.Abs(float64(gst[i]) - float64(cst[i])); d > updateTol*math.Abs(float64(cst[i]))+1e-7 {
						t.Fatalf("%sstats[%d] = %v on the GPU, %v on the CPU", at, i, gst[i], cst[i])
					}
				}
			}
			// The rollout path: deterministic actions, log-probabilities and
			// values for a batch of observations.
			n := 1000
			obs := make([]float32, n*tc.obs.Dim)
			for i := range obs {
				obs[i] = float32(r.NormFloat64())
			}
			actSize := tc.act.Size()
			ca, cl, cv := make([]float32, n*actSize), make([]float32, n), make([]float32, n)
			ga, gl, gv := make([]float32, n*actSize), make([]float32, n), make([]float32, n)
			cs.agent.Act(obs, n, nil, true, ca, cl, cv)
			gs.agent.Act(obs, n, nil, true, ga, gl, gv)
			compare("Act actions", ga, ca)
			compare("Act log-probabilities", gl, cl)
			compare("Act values", gv, cv)
		})
	}
}
