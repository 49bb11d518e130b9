// Command nim trains a policy by self-play through a custom workflow: two
// players share the policy and take turns removing 1–3 sticks; whoever takes
// the last stick wins. Each player's decisions form a trajectory rewarded +1
// for a win and −1 for a loss. Validation plays a random opponent.
package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/trainer"
)

const maxSticks = 21

type nim struct{}

func (nim) Spaces() (envs.Space, envs.Space) {
	return envs.Space{Kind: envs.Box, Dim: maxSticks + 1}, envs.Space{Kind: envs.Discrete, N: 3}
}

// observe is a one-hot encoding of the sticks left.
func observe(n int) []float32 {
	obs := make([]float32, maxSticks+1)
	obs[n] = 1
	return obs
}

func take(action []float32, left int) int { return min(int(action[0])+1, left) }

// Run plays one self-play game of the task's size.
func (nim) Run(ctx context.Context, task envs.Params, seed int64, actor trainer.Actor) ([]trainer.Trajectory, error) {
	left, err := task.Int("sticks", maxSticks)
	if err != nil || left < 1 || left > maxSticks {
		return nil, fmt.Errorf("sticks must be 1…%d (%v)", maxSticks, err)
	}
	var players [2]trainer.Trajectory
	n := int(left)
	for p := 0; n > 0; p = 1 - p {
		step := actor.Act(observe(n))
		n -= take(step.Action, n)
		players[p] = append(players[p], step)
		if n == 0 {
			players[p][len(players[p])-1].Reward = 1
			if other := players[1-p]; len(other) > 0 {
				other[len(other)-1].Reward = -1
			}
		}
	}
	if len(players[1]) == 0 {
		return players[:1], nil
	}
	return players[:], nil
}

// Score plays the policy against a random opponent; success is a win.
func (nim) Score(ctx context.Context, task envs.Params, seed int64, actor trainer.Actor) (float64, bool, error) {
	left, err := task.Int("sticks", maxSticks)
	if err != nil {
		return 0, false, err
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 9))
	n := int(left)
	for p := int(seed % 2); ; p = 1 - p { // the policy moves first in odd games
		if p == 0 {
			n -= take(actor.Act(observe(n)).Action, n)
		} else {
			n -= min(rng.IntN(3)+1, n)
		}
		if n == 0 {
			if p == 0 {
				return 1, true, nil
			}
			return -1, false, nil
		}
	}
}

func tasks(from, to int) []envs.Params {
	var rows []envs.Params
	for s := from; s <= to; s++ {
		rows = append(rows, envs.Params{"sticks": s})
	}
	return rows
}

func train(ctx context.Context, steps int, runsDir string) (*trainer.AgentTrainer, trainer.Summary, error) {
	at, err := trainer.NewAgentTrainer(trainer.Setup{
		Name:         "Nim",
		Workflow:     func(map[string]any) (trainer.Workflow, error) { return nim{}, nil },
		TrainDataset: trainer.Dataset{Rows: tasks(1, maxSticks)},
		ValDataset:   trainer.Dataset{Rows: append(tasks(1, maxSticks), tasks(1, maxSticks)...)},
		Overrides: []string{fmt.Sprint("ppo.total_timesteps=", steps), "trainer.runs_dir=" + runsDir,
			"ppo.gamma=1", "ppo.ent_coef=0.02", "trainer.test_freq=20"},
	})
	if err != nil {
		return nil, trainer.Summary{}, err
	}
	sum, err := at.Train(ctx)
	return at, sum, err
}

func main() {
	_, sum, err := train(context.Background(), 200_000, "runs")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%s: win rate against a random player %.3f\n", sum.RunDir, float64(*sum.Last.ValSuccessRate))
}
