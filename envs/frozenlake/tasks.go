package frozenlake

import (
	"errors"
	"fmt"
	"hash/fnv"
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
	// Cancel, when closed, ends a draw (an interrupt).
	Cancel <-chan struct{}
}

// flSeedStride separates the map seeds of task sets made with different
// seeds.
const flSeedStride = 1_000_000_000

// MaxTasks bounds a generated task file: ten million rows are about 830 MB
// of JSON lines, written as they are drawn; what the generator holds is a
// set of 64-bit hashes of the maps (to keep them distinct), 128 MiB for ten
// million.
const MaxTasks = 10_000_000

// GenerateFrozenLakeTasks draws o.N tasks with distinct maps, none of them
// in o.Exclude, each solvable within o.MaxSteps. Map seeds are tried in
// order (see FrozenLakeTaskOptions.Seed); seeds whose map is a repeat or
// needs more than MaxSteps steps are skipped.
func GenerateFrozenLakeTasks(o FrozenLakeTaskOptions) ([]envs.Params, error) {
	var rows []envs.Params
	err := EachFrozenLakeTask(o, func(row envs.Params) error {
		rows = append(rows, row)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// DistinctFrozenLakeMaps bounds how many different size×size maps there
// are: a start, a goal elsewhere, every other tile frozen or a hole (some
// of those have no path). It is -1 when that is more than any task set may
// ask for.
func DistinctFrozenLakeMaps(size int) int64 {
	n := int64(size * size)
	if free := n - 2; free < 30 {
		return n * (n - 1) << free
	}
	return -1
}

// EachFrozenLakeTask is GenerateFrozenLakeTasks that hands each task to
// emit as it is drawn instead of gathering them: a large set is written as
// it comes. emit's error ends the draw. A request that cannot be met is an
// error before the first task when the lake has too few maps for it, and
// after the last one it found otherwise.
func EachFrozenLakeTask(o FrozenLakeTaskOptions, emit func(envs.Params) error) error {
	if o.N < 1 || o.N > MaxTasks {
		return fmt.Errorf("the number of tasks must be between 1 and %d, got %d", MaxTasks, o.N)
	}
	const maxSeed = math.MaxInt64/flSeedStride - 1
	if o.Seed < -maxSeed || o.Seed > maxSeed {
		return fmt.Errorf("seed must be between %d and %d, got %d", -maxSeed, maxSeed, o.Seed)
	}
	cfg, err := parseFrozenLakeArgs(envs.Params{"size": o.Size, "p": o.P, "is_slippery": o.Slippery,
		"max_steps": o.MaxSteps, "max_size": flMaxMaxSize})
	if err != nil {
		return err
	}
	if d := DistinctFrozenLakeMaps(cfg.size); d >= 0 && int64(o.N)+int64(len(o.Exclude)) > d {
		excl := ""
		if len(o.Exclude) > 0 {
			excl = fmt.Sprintf(", and %d are excluded", len(o.Exclude))
		}
		return fmt.Errorf("asked for %d tasks, but a %d×%d lake has only %d distinct maps%s; ask for fewer tasks or a larger lake (--size)", o.N, cfg.size, cfg.size, d, excl)
	}
	// Maps are told apart by a 64-bit hash of their tiles: two maps that
	// share one (about one chance in 10¹² for ten million) would skip a
	// map, never repeat one.
	seen := newHashSet(o.N + len(o.Exclude))
	for i, row := range o.Exclude {
		key, err := frozenLakeMapKey(row)
		if err != nil {
			return fmt.Errorf("excluded task %d: %v", i+1, err)
		}
		seen.add(mapHash(key))
	}
	tries := min(1000+50*o.N, flSeedStride)
	found := 0
	for k := 0; k < tries && found < o.N; k++ {
		if k%4096 == 0 && o.Cancel != nil {
			select {
			case <-o.Cancel:
				return errCancelled
			default:
			}
		}
		cfg.seed = o.Seed*flSeedStride + int64(k)
		f, err := newFrozenLake(cfg)
		if err != nil {
			return err
		}
		h := mapHash(f.MapString())
		if f.shortest > cfg.maxSteps || !seen.add(h) {
			continue
		}
		if err := emit(envs.Params{"seed": cfg.seed, "size": int64(cfg.size), "p": cfg.p,
			"is_slippery": cfg.slippery, "max_steps": int64(cfg.maxSteps)}); err != nil {
			return err
		}
		found++
	}
	if found < o.N {
		excl := ""
		if len(o.Exclude) > 0 {
			excl = fmt.Sprintf(" and not among the %d excluded tasks", len(o.Exclude))
		}
		return fmt.Errorf("asked for %d tasks, but only %d of %d map seeds gave distinct %d×%d maps solvable in %d steps%s; ask for fewer tasks or larger lakes",
			o.N, found, tries, o.Size, o.Size, o.MaxSteps, excl)
	}
	return nil
}

// errCancelled ends a draw whose Cancel closed.
var errCancelled = errors.New("the draw was cancelled")

// IsCancelled reports whether err is a draw that Cancel ended.
func IsCancelled(err error) bool { return errors.Is(err, errCancelled) }

// hashSet is a set of 64-bit hashes sized once for n of them (open
// addressing, at most 3/4 full): 8 to 16 bytes a hash, never regrown, where
// a Go map of ten million would peak at several times that while growing.
type hashSet struct {
	slots []uint64 // 0: empty (a hash of 0 is stored as 1)
	mask  uint64
}

func newHashSet(n int) *hashSet {
	size := uint64(16)
	for size < uint64(n)*4/3+1 {
		size *= 2
	}
	return &hashSet{slots: make([]uint64, size), mask: size - 1}
}

// add puts h in the set and reports whether it was new.
func (s *hashSet) add(h uint64) bool {
	if h == 0 {
		h = 1
	}
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		switch s.slots[i] {
		case h:
			return false
		case 0:
			s.slots[i] = h
			return true
		}
	}
}

// mapHash is FNV-1a of a map's text.
func mapHash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
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
	desc, _, _, err := generateFrozenLakeMap(cfg.size, cfg.p, cfg.seed)
	if err != nil {
		return "", err
	}
	return (&FrozenLake{cfg: cfg, desc: desc}).MapString(), nil
}
