package frozenlake

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
)

// Key implements Spec.Key: the map a row draws (two rows with the same map
// are the same task; slipperiness aside).
func Key(task envs.Params) (string, error) {
	e, err := New(task)
	if err != nil {
		return "", err
	}
	return strings.Join(e.Map(), "/"), nil
}

// Generate makes tasks with distinct maps (Spec.Generate). Args: size
// (default 4), p (default 0.8), is_slippery (default false), max_steps (a
// turn limit written into each row and the longest shortest path allowed;
// default 0: none written, maps of any length). Seeds are drawn at random
// from the set's seed, as rLLM's prepare_frozenlake_data draws them.
func Generate(o text.GenerateOptions) ([]envs.Params, error) {
	if o.N < 1 || o.N > text.MaxGenerated {
		return nil, fmt.Errorf("the number of tasks must be between 1 and %d, got %d", text.MaxGenerated, o.N)
	}
	if err := o.Args.CheckArgs("size", "p", "is_slippery", "max_steps"); err != nil {
		return nil, err
	}
	size, err := o.Args.Int("size", 4)
	if err != nil {
		return nil, err
	}
	p, err := o.Args.Float("p", 0.8)
	if err != nil {
		return nil, err
	}
	slippery, err := o.Args.Bool("is_slippery", false)
	if err != nil {
		return nil, err
	}
	maxSteps, err := o.Args.Int("max_steps", 0)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(uint64(o.Seed), 0xf1a4e))
	seen := map[string]bool{}
	var rows []envs.Params
	for tries := 0; len(rows) < o.N; tries++ {
		if tries > 50*o.N+1000 {
			return nil, fmt.Errorf("only %d distinct %d×%d maps (p %g) for %d asked: ask for fewer or larger lakes", len(rows), size, size, p, o.N)
		}
		row := envs.Params{"seed": r.Int64N(1 << 31), "size": size, "p": p}
		if slippery {
			row["is_slippery"] = true
		}
		if maxSteps > 0 {
			row["max_steps"] = maxSteps
		}
		e, err := New(row)
		if err != nil {
			return nil, err
		}
		key := strings.Join(e.Map(), "/")
		if seen[key] || o.Exclude[key] || (maxSteps > 0 && e.ShortestPath() > int(maxSteps)) {
			continue
		}
		seen[key] = true
		rows = append(rows, row)
	}
	return rows, nil
}
