// Command customenv trains PPO on an environment defined right here, through
// the library API: a corridor the agent must walk to the end of.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/trainer"
)

// corridor: start at 0, reach `length`; each step costs 0.01, the end pays 1.
type corridor struct{ pos, length, t int }

func (c *corridor) ObservationSpace() envs.Space { return envs.Space{Kind: envs.Box, Dim: 1} }
func (c *corridor) ActionSpace() envs.Space      { return envs.Space{Kind: envs.Discrete, N: 2} }
func (c *corridor) Reset(_ int64, obs []float32) { c.pos, c.t, obs[0] = 0, 0, 0 }
func (c *corridor) Step(a, obs []float32) (float64, bool, bool) {
	if a[0] == 1 {
		c.pos++
	} else if c.pos > 0 {
		c.pos--
	}
	c.t++
	obs[0] = float32(c.pos) / float32(c.length)
	if c.pos == c.length {
		return 1, true, false
	}
	return -0.01, false, c.t == 5*c.length
}

func train(ctx context.Context, steps int, runsDir string) (trainer.Summary, error) {
	at, err := trainer.NewAgentTrainer(trainer.Setup{
		Name: "Corridor",
		Env: func(args envs.Params) (envs.Env, error) {
			n, err := args.Int("length", 10)
			return &corridor{length: int(n)}, err
		},
		EnvArgs:   map[string]any{"length": 10},
		Overrides: map[string]any{"ppo.total_timesteps": steps, "trainer.runs_dir": runsDir},
	})
	if err != nil {
		return trainer.Summary{}, err
	}
	return at.Train(ctx)
}

func main() {
	sum, err := train(context.Background(), 50_000, "runs")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%s: ep_return_mean %.3f after %d steps\n", sum.RunDir, float64(sum.Last.EpReturnMean), sum.Last.Step)
}
