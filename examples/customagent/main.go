// Command customagent trains PPO with an agent defined right here, outside
// agents/, registered as the shipped ones are: a config key of its own
// (agent.torso_width, which `config`, the app's editor and overrides know
// once it is registered), a cost estimate, a network made of agents/layers
// and actions from agents/dist. The agent is an actor-critic whose policy
// and value heads share one hidden layer.
package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/agents/dist"
	"github.com/agenttrainer/agenttrainer/agents/layers"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/trainer"
)

func init() {
	agents.Register(agents.Spec{
		Name:        "torso",
		Description: "actor-critic whose heads share one tanh layer (an example agent registered outside agents/)",
		Keys: []agents.Key{{Name: "torso_width", Default: int64(64), Check: "[1,4096]",
			Doc: "Width of the torso agent's shared hidden layer."}},
		New:      newTorso,
		Estimate: estimate,
	})
}

// torsoAgent is obs → tanh(dense) → policy head (the distribution's width)
// and value head.
type torsoAgent struct {
	dev          gpu.Device
	body, pi, vf *layers.Dense // vf is nil without a critic
	head         *dist.Head
	params       layers.Params
	obs          gpu.Tensor // observations being acted on
}

func newTorso(b agents.Build) (agents.Agent, error) {
	if b.Obs.Kind != envs.Box || b.Obs.Dim < 1 {
		return nil, fmt.Errorf("torso needs vector observations, got %v", b.Obs)
	}
	d := b.Dist // the registry filled it (dist.For: categorical or Gaussian)
	w := int(b.Config.Int("torso_width"))
	a := &torsoAgent{dev: b.Device}
	a.body = layers.NewDense(&a.params, "body", b.Obs.Dim, w, gpu.Tanh, layers.Orthogonal(math.Sqrt2, b.RNG))
	a.pi = layers.NewDense(&a.params, "actor", w, d.Width(), gpu.Identity, layers.Orthogonal(0.01, b.RNG))
	if !b.NoCritic {
		a.vf = layers.NewDense(&a.params, "critic", w, 1, gpu.Identity, layers.Orthogonal(1, b.RNG))
	}
	a.head = dist.NewHead(d, &a.params, "actor_logstd", nil)
	a.params.Build(b.Device)
	return a, nil
}

// estimate is the agent's cost: its parameters, and the products of one
// sample's update (forward and weight gradient of each layer, the input
// gradient of the heads).
func estimate(w agents.Workload) agents.Estimate {
	obs, width := float64(w.Obs.Dim), float64(w.Config.Int("torso_width"))
	out := float64(w.Act.N + w.Act.Dim) // logits or means
	return agents.Estimate{
		Params:  obs*width + width + (width+1)*(out+1),
		Widest:  max(obs, out) * width,
		Weights: agents.MemoryPart{Name: "the torso agent's weights", Fix: "a smaller agent.torso_width"},
		FLOPs:   2 * (2*obs*width + 3*width*(out+1)),
	}
}

func (a *torsoAgent) Params() gpu.Tensor            { return a.params.Flat() }
func (a *torsoAgent) Grads() gpu.Tensor             { return a.params.Grads() }
func (a *torsoAgent) Tensors() []agents.NamedTensor { return a.params.Named() }

// Gradients: the shared layer gets both heads' gradients, then its
// activation's; the policy loss is the distribution's.
func (a *torsoAgent) Gradients(obs gpu.Tensor, p gpu.PPOPolicyArgs, v *gpu.ValueArgs) {
	d, rows := a.dev, obs.Rows
	h := a.body.Forward(d, obs)
	p.Out, p.DOut = a.pi.Forward(d, h), a.pi.Grad(rows)
	a.head.Loss(d, p)
	dh := a.body.Grad(rows)
	if v == nil || a.vf == nil {
		a.pi.Backward(d, p.DOut, layers.InputGrad{DX: dh, Through: gpu.Tanh})
		if a.vf != nil {
			layers.Stack{a.vf}.ZeroGrads(d)
		}
	} else {
		v.Value, v.DValue = a.vf.Forward(d, h), a.vf.Grad(rows)
		d.ValueLoss(*v)
		a.pi.Backward(d, p.DOut, layers.InputGrad{DX: dh})
		a.vf.Backward(d, v.DValue, layers.InputGrad{DX: dh, Add: true, Through: gpu.Tanh})
	}
	a.body.Backward(d, dh, layers.InputGrad{})
}

// forward uploads n observations and runs the shared layer.
func (a *torsoAgent) forward(obs []float32, n int) gpu.Tensor {
	dim := a.body.In
	if a.obs.Rows < n {
		a.obs = a.dev.Alloc(n, dim)
	}
	x := a.obs.RowRange(0, n)
	a.dev.Upload(x, obs[:n*dim])
	return a.body.Forward(a.dev, x)
}

func (a *torsoAgent) Values(obs []float32, n int, values []float32) {
	if a.vf == nil {
		clear(values[:n])
		return
	}
	a.dev.Download(values[:n], a.vf.Forward(a.dev, a.forward(obs, n)))
}

func (a *torsoAgent) Act(obs []float32, n int, rng *rand.Rand, deterministic bool, actions, logp, values []float32) {
	h := a.forward(obs, n)
	if a.vf != nil {
		a.dev.Download(values[:n], a.vf.Forward(a.dev, h))
	} else {
		clear(values[:n])
	}
	a.head.Act(a.dev, a.pi.Forward(a.dev, h), rng, deterministic, actions, logp)
}

// train trains the torso agent on CartPole with overrides over the
// defaults, as `agenttrainer train agent.name=torso …` would.
func train(ctx context.Context, runsDir string, overrides ...string) (trainer.Summary, error) {
	at, err := trainer.NewAgentTrainer(trainer.Setup{
		Overrides: append([]string{"agent.name=torso", "trainer.device=cpu", "trainer.runs_dir=" + runsDir}, overrides...),
	})
	if err != nil {
		return trainer.Summary{}, err
	}
	defer at.Close()
	return at.Train(ctx)
}

func main() {
	sum, err := train(context.Background(), "runs", append([]string{"ppo.total_timesteps=100000"}, os.Args[1:]...)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%s: ep_return_mean %.1f after %d steps\n", sum.RunDir, float64(sum.Last.EpReturnMean), sum.Last.Step)
}
