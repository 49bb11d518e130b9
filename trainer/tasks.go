package trainer

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/tasks"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// taskSource deals out tasks: the rows of the training files in a fresh
// shuffled order on every pass, or, without files, env.args with a new reset
// seed each time. A task becomes an environment and the seed it resets with.
type taskSource struct {
	make  func(envs.Params) (envs.Env, error)
	rows  []envs.Params // nil: every task is env.args
	args  envs.Params
	order []int
	pos   int
	src   *rand.PCG
	rng   *rand.Rand
	seed  int64 // reset seed of the next task
	// lastArgs are the arguments of the task next returned, so a group can
	// build more environments of the same task.
	lastArgs envs.Params
}

// withArgs gives every row the keys of env.args it does not set itself
// (settings shared by all tasks, such as FrozenLake's max_size).
func withArgs(rows []envs.Params, args map[string]any) []envs.Params {
	if len(args) == 0 {
		return rows
	}
	out := make([]envs.Params, len(rows))
	for i, row := range rows {
		merged := envs.Params{}
		for k, v := range args {
			merged[k] = v
		}
		for k, v := range row {
			merged[k] = v
		}
		out[i] = merged
	}
	return out
}

func newTaskSource(cfg *config.Config, rows []envs.Params, make func(envs.Params) (envs.Env, error)) *taskSource {
	src := rand.NewPCG(uint64(cfg.Trainer.Seed), 4)
	return &taskSource{make: make, rows: rows, args: envs.Params(cfg.Env.Args),
		src: src, rng: rand.New(src), seed: cfg.Trainer.Seed*1_000_003 + 7}
}

// next builds the next task's environment.
func (s *taskSource) next() (envs.Env, int64, error) {
	args, seed := s.nextTask()
	e, err := s.make(args)
	return e, seed, err
}

// nextTask deals the next task's arguments and reset seed.
func (s *taskSource) nextTask() (envs.Params, int64) {
	args := s.args
	if s.rows != nil {
		if s.pos == len(s.order) {
			s.order = s.rng.Perm(len(s.rows))
			s.pos = 0
		}
		args = s.rows[s.order[s.pos]]
		s.pos++
	}
	s.lastArgs = args
	s.seed++
	return args, s.seed
}

// taskState is the part of a task source a checkpoint saves.
type taskState struct {
	Order []int  `json:"order,omitempty"`
	Pos   int    `json:"pos"`
	RNG   []byte `json:"rng"`
	Seed  int64  `json:"seed"`
}

func (s *taskSource) state() (taskState, error) {
	b, err := s.src.MarshalBinary()
	return taskState{Order: s.order, Pos: s.pos, RNG: b, Seed: s.seed}, err
}

func (s *taskSource) restore(st taskState) error {
	if err := s.src.UnmarshalBinary(st.RNG); err != nil {
		return fmt.Errorf("bad task random stream: %v", err)
	}
	if st.Pos > len(st.Order) || (s.rows != nil && len(st.Order) > 0 && len(st.Order) != len(s.rows)) {
		return fmt.Errorf("task order of %d rows does not fit a dataset of %d", len(st.Order), len(s.rows))
	}
	s.order, s.pos, s.seed = st.Order, st.Pos, st.Seed
	return nil
}

// loadTasks reads and concatenates task files, adds in-memory rows, merges
// env.args under every row, and checks that every row builds.
func loadTasks(files []string, mem []envs.Params, args map[string]any, check func([]envs.Params) error, key string) ([]envs.Params, error) {
	if len(files) == 0 && len(mem) == 0 {
		return nil, nil
	}
	var rows []envs.Params
	for _, f := range files {
		r, err := tasks.LoadTasks(f)
		if err != nil {
			return nil, &config.Error{Key: key, Msg: err.Error()}
		}
		rows = append(rows, r...)
	}
	rows = append(rows, mem...)
	if len(rows) == 0 {
		return nil, &config.Error{Key: key, Msg: fmt.Sprintf("%s hold no tasks", strings.Join(files, ", "))}
	}
	rows = withArgs(rows, args)
	if err := check(rows); err != nil {
		return nil, &config.Error{Key: key, Msg: err.Error()}
	}
	return rows, nil
}
