package frozenlake

import (
	"fmt"
	"io"
	"maps"
	"math"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/tasks"
)

// FrozenLakeTaskOptions describe a generated set of FrozenLake tasks.
type FrozenLakeTaskOptions struct {
	N        int     // how many tasks
	Size     int     // the lakes' side
	P        float64 // probability that a tile is frozen
	Slippery bool
	MaxSteps int
	// Seed picks the maps: set k draws map seeds Seed·10⁹, Seed·10⁹+1, …,
	// so sets made with different seeds never share a map seed.
	Seed int64
	// Exclude are tasks whose maps must not appear (the training set, when
	// making a validation set): two seeds can still draw the same small
	// lake.
	Exclude []envs.Params
}

// flSeedStride separates the map seeds of task sets made with different
// seeds.
const flSeedStride = 1_000_000_000

// MaxTasks bounds a generated task file (ten million rows are about 600 MB).
const MaxTasks = 10_000_000

// GenerateFrozenLakeTasks draws o.N tasks with distinct maps, none of them
// in o.Exclude, each solvable within o.MaxSteps. Map seeds are tried in
// order (see FrozenLakeTaskOptions.Seed); seeds whose map is a repeat or
// needs more than MaxSteps steps are skipped.
func GenerateFrozenLakeTasks(o FrozenLakeTaskOptions) ([]envs.Params, error) {
	if o.N < 1 || o.N > MaxTasks {
		return nil, fmt.Errorf("the number of tasks must be between 1 and %d, got %d", MaxTasks, o.N)
	}
	const maxSeed = math.MaxInt64/flSeedStride - 1
	if o.Seed < -maxSeed || o.Seed > maxSeed {
		return nil, fmt.Errorf("seed must be between %d and %d, got %d", -maxSeed, maxSeed, o.Seed)
	}
	cfg, err := parseFrozenLakeArgs(envs.Params{"size": o.Size, "p": o.P, "is_slippery": o.Slippery,
		"max_steps": o.MaxSteps, "max_size": flMaxMaxSize})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, row := range o.Exclude {
		key, err := frozenLakeMapKey(row)
		if err != nil {
			return nil, fmt.Errorf("excluded task %d: %v", i+1, err)
		}
		seen[key] = true
	}
	tries := min(1000+50*o.N, flSeedStride)
	rows := make([]envs.Params, 0, o.N)
	for k := 0; k < tries && len(rows) < o.N; k++ {
		cfg.seed = o.Seed*flSeedStride + int64(k)
		f, err := newFrozenLake(cfg)
		if err != nil {
			return nil, err
		}
		key := f.MapString()
		if seen[key] || f.shortest > cfg.maxSteps {
			continue
		}
		seen[key] = true
		rows = append(rows, envs.Params{"seed": cfg.seed, "size": int64(cfg.size), "p": cfg.p,
			"is_slippery": cfg.slippery, "max_steps": int64(cfg.maxSteps)})
	}
	if len(rows) < o.N {
		excl := ""
		if len(o.Exclude) > 0 {
			excl = fmt.Sprintf(" and not among the %d excluded tasks", len(o.Exclude))
		}
		return nil, fmt.Errorf("asked for %d tasks, but only %d of %d map seeds gave distinct %d×%d maps solvable in %d steps%s; ask for fewer tasks or larger lakes",
			o.N, len(rows), tries, o.Size, o.Size, o.MaxSteps, excl)
	}
	return rows, nil
}

// FrozenLakeColumns is the column order of generated task files.
var FrozenLakeColumns = []string{"seed", "size", "p", "is_slippery", "max_steps"}

// WriteFrozenLakeTasks writes n generated FrozenLake tasks (see
// GenerateFrozenLakeTasks) to w as "jsonl" or "csv".
func WriteFrozenLakeTasks(w io.Writer, format string, n, size int, p float64, slippery bool, maxSteps int, seed int64) error {
	if err := tasks.CheckFormat(format); err != nil {
		return err
	}
	rows, err := GenerateFrozenLakeTasks(FrozenLakeTaskOptions{N: n, Size: size, P: p, Slippery: slippery, MaxSteps: maxSteps, Seed: seed})
	if err != nil {
		return err
	}
	return tasks.WriteTasks(w, format, FrozenLakeColumns, rows)
}

// SharedFrozenLakeMaps returns the indices (from 0) of the tasks in b whose
// map is also the map of a task in a: a validation set should share none
// with its training set.
func SharedFrozenLakeMaps(a, b []envs.Params) ([]int, error) {
	inA := map[string]bool{}
	for i, row := range a {
		key, err := frozenLakeMapKey(row)
		if err != nil {
			return nil, fmt.Errorf("first set, row %d: %v", i+1, err)
		}
		inA[key] = true
	}
	var shared []int
	for i, row := range b {
		key, err := frozenLakeMapKey(row)
		if err != nil {
			return nil, fmt.Errorf("second set, row %d: %v", i+1, err)
		}
		if inA[key] {
			shared = append(shared, i)
		}
	}
	return shared, nil
}

// frozenLakeMapKey is the map a task row builds (its MapString). A row that
// does not say max_size is read with the largest, since the map does not
// depend on it.
func frozenLakeMapKey(row envs.Params) (string, error) {
	if _, ok := row["max_size"]; !ok {
		row = maps.Clone(row)
		if row == nil {
			row = envs.Params{}
		}
		row["max_size"] = flMaxMaxSize
	}
	cfg, err := parseFrozenLakeArgs(row)
	if err != nil {
		return "", err
	}
	desc, _, _, err := drawMap(cfg)
	if err != nil {
		return "", err
	}
	return (&FrozenLake{cfg: cfg, desc: desc}).MapString(), nil
}
