package sft

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/agenttrainer/agenttrainer/agents/lm"
	"github.com/agenttrainer/agenttrainer/agents/lm/chat"
	"github.com/agenttrainer/agenttrainer/envs"
	tfl "github.com/agenttrainer/agenttrainer/envs/text/frozenlake"
	"github.com/agenttrainer/agenttrainer/trainer/textrl"
)

// NewGenerator makes a textrl.Generator of m for up to slots sequences of
// up to maxLen tokens each.
func NewGenerator(m *lm.Model, slots, maxLen int) (textrl.Generator, error) {
	g, err := m.NewGenerator(slots, min(maxLen, m.Config.MaxPositions))
	if err != nil {
		return nil, err
	}
	return &textrl.LMGenerator{G: g}, nil
}

// EvalOptions say how to play held-out tasks.
type EvalOptions struct {
	Workflow          textrl.MultiTurnOptions
	Tokenizer         textrl.Tokenizer
	Renderer          chat.Renderer
	StopIDs           []int
	MaxPromptLength   int
	MaxResponseLength int
	Temperature       float64 // 0: greedy
	Batch             int     // episodes played at once
	Seed              int64
}

// Evaluation is the outcome of playing held-out tasks once each.
type Evaluation struct {
	Episodes     int
	Success      float64 // fraction of episodes the environment counts as solved
	MeanReward   float64
	MeanTurns    float64 // model calls per episode
	SuccessTurns float64 // model calls per solved episode (NaN: none solved)
	Invalid      float64 // fraction of turns whose action was FrozenLake's invalid one ("0")
	// OptimalTurns is the oracle's turns on the solved tasks, on average
	// (NaN: no oracle or none solved): SuccessTurns' shortest path.
	OptimalTurns float64
	Terminations map[string]int
	Elapsed      time.Duration
	List         []*textrl.Episode `json:"-"` // the episodes, in task order
}

// Evaluate plays each task once with m through the same agent, renderer
// and tokenizer as training.
func Evaluate(ctx context.Context, m *lm.Model, tasks []envs.Params, o EvalOptions) (Evaluation, error) {
	start := time.Now()
	if o.Batch < 1 {
		o.Batch = 64
	}
	gen, err := NewGenerator(m, o.Batch, o.MaxPromptLength+o.MaxResponseLength)
	if err != nil {
		return Evaluation{}, err
	}
	eng, err := textrl.NewEngine(textrl.Options{Tokenizer: o.Tokenizer, Renderer: o.Renderer, Generator: gen,
		Sampling:        textrl.SamplingParams{Temperature: o.Temperature, StopIDs: o.StopIDs},
		MaxPromptLength: o.MaxPromptLength, MaxResponseLength: o.MaxResponseLength,
		MaxConcurrent: o.Batch, MaxBatch: o.Batch, Seed: o.Seed})
	if err != nil {
		return Evaluation{}, err
	}
	wf, err := textrl.MultiTurn(o.Workflow)
	if err != nil {
		return Evaluation{}, err
	}
	groups, _, err := eng.Run(ctx, tasks, 1, wf)
	if err != nil {
		return Evaluation{}, err
	}
	ev := Evaluation{Episodes: len(groups), Terminations: map[string]int{}}
	solved, turns, invalid, solvedTurns := 0, 0, 0, 0
	optimal, optimalN := 0, 0
	for _, g := range groups {
		ep := g[0]
		ev.List = append(ev.List, ep)
		ev.Terminations[string(ep.Termination)]++
		ev.MeanReward += ep.Reward()
		n := int(ep.Metrics["turns"])
		turns += n
		if ep.Correct {
			solved++
			solvedTurns += n
			if tr, err := textrl.Demonstrate(o.Workflow, ep.Task); err == nil {
				optimal += tr.Turns
				optimalN++
			}
		}
		for _, t := range ep.Trajectories {
			for _, s := range t.Steps {
				if o.Workflow.Env == tfl.ID && s.Action == "0" {
					invalid++
				}
			}
		}
	}
	if ev.Episodes == 0 {
		return ev, fmt.Errorf("no tasks to evaluate")
	}
	ev.Success = float64(solved) / float64(ev.Episodes)
	ev.MeanReward /= float64(ev.Episodes)
	ev.MeanTurns = float64(turns) / float64(ev.Episodes)
	ev.SuccessTurns = math.NaN()
	if solved > 0 {
		ev.SuccessTurns = float64(solvedTurns) / float64(solved)
	}
	ev.Invalid = float64(invalid) / float64(max(turns, 1))
	ev.OptimalTurns = math.NaN()
	if optimalN > 0 {
		ev.OptimalTurns = float64(optimal) / float64(optimalN)
	}
	ev.Elapsed = time.Since(start)
	return ev, nil
}
