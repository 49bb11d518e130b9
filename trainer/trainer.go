// Package trainer trains agents with PPO: it builds the environments, the
// agent and the device from a resolved config, runs the PPO loop (ppo.go),
// writes the run directory (resolved config, metrics.jsonl, live edits,
// checkpoints) and publishes an event stream that viewers subscribe to.
package trainer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenttrainer/agenttrainer/agents"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/tasks"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/internal/suggest"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// Options are the parts of a run that are not configuration.
type Options struct {
	// RunDir puts the run exactly there; empty means a new directory under
	// trainer.runs_dir.
	RunDir string
	// Device overrides trainer.device (tests use it).
	Device gpu.Device
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MemoryLimit is the bytes a training may plan to use; 0 means 80 % of
	// the memory the machine has available.
	MemoryLimit float64

	// Library use (see AgentTrainer). EnvFactory builds environments
	// instead of the registry entry env.id names; AgentFactory builds the
	// agent instead of agent.name's; TrainTasks and ValTasks add in-memory
	// task rows to data.train_files and data.val_files; Workflow replaces
	// the environments with custom episode logic.
	EnvFactory   func(args envs.Params) (envs.Env, error)
	AgentFactory func(b agents.Build) (agents.Agent, error)
	TrainTasks   []envs.Params
	ValTasks     []envs.Params
	Workflow     Workflow
}

// Info describes a run for viewers.
type Info struct {
	RunDir     string
	Device     string
	EnvID      string
	Agent      string
	TotalSteps int64
	ObsSpace   envs.Space
	ActSpace   envs.Space
}

// Summary is how a run ended.
type Summary struct {
	RunDir     string
	State      State
	Last       Metrics
	Iterations int
	Checkpoint string // path of the last checkpoint written
}

// Trainer is one training run. Build it with New, start it with Run; the
// control methods (Pause, Resume, Stop, SaveCheckpoint, Edit, Subscribe)
// may be called from any goroutine while it runs.
type Trainer struct {
	cfg   config.Config // the loop's config: only the loop changes it
	opts  Options
	venv  *envs.Vector // nil when a workflow plays the episodes
	tasks *taskSource  // where environments come from
	// The spaces the agent sees, and the workflow, if any.
	obsSpace, actSpace envs.Space
	workflow           Workflow
	valRows            []envs.Params // validation tasks (data.val_files)
	agent              agents.Agent
	learner            agents.Learner // nil for agents that do not learn
	lmr                *lmRun         // a language-model run's model and engine (lm.go); nil for numeric runs
	dev                gpu.Device
	devInfo            string
	broker             *broker
	reports            *reports // the figures envs, the agent and the workflow report this iteration

	// Random streams: action sampling and minibatch shuffling, with their
	// sources kept so checkpoints can save them.
	actRNG, shuffleRNG *rand.Rand
	actSrc, shuffleSrc *rand.PCG

	// Observation normalisation and reward scaling (nil when off), and the
	// observations the policy sees: v.Obs itself, or its normalised copy.
	obsNorm   *obsNormalizer
	rewScale  *rewardScaler
	policyObs []float32

	resume         *resumePoint // set by Resume
	reopen         bool         // Resume of a language-model run stopped in its warm-start phase: no checkpoint, the run directory reopened
	resumeAdam     [2][]float32 // Adam moments from the checkpoint
	warnedSnapshot bool         // said once that the envs cannot be saved
	warnedSkip     bool         // said once that an update was skipped for want of samples
	notes          []string     // said in the log when the run starts (skipped checkpoints)

	mu        sync.Mutex
	pending   []Edit        // validated live edits, applied at the next iteration
	shadow    config.Config // cfg with the pending edits applied
	paused    bool
	cancel    context.CancelFunc
	stopAsked bool // Stop came before Run set cancel: Run stops at once
	runDir    string
	wake      chan struct{}
	saveReq   atomic.Bool
	stopping  atomic.Bool  // set once the run's context ends
	iterStart time.Time    // when the current iteration began
	stepsDone atomic.Int64 // env steps of the iterations completed, for live edits
	started   atomic.Bool
	closeOnce sync.Once
}

// New validates cfg and builds the environments, device and agent. It writes
// nothing to disk: configuration mistakes surface here as *config.Error.
func New(cfg config.Config, opts Options) (*Trainer, error) {
	cfg = cfg.Clone()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if cfg.LM() || isTextEnv(cfg.Env.ID) {
		return newLM(cfg, opts)
	}
	if opts.Device == nil && cfg.Trainer.Device != "cuda" && !strings.HasPrefix(cfg.Trainer.Device, "cuda:") {
		if err := checkThreads(cfg.Trainer.Threads); err != nil {
			return nil, err
		}
	}
	if opts.MemoryLimit == 0 {
		opts.MemoryLimit = memoryLimit()
	}
	// A first estimate with the smallest spaces, before any environment is
	// built: env.num_envs alone can be too many.
	if err := checkMemory(&cfg, envs.Space{Kind: envs.Box, Dim: 1}, envs.Space{Kind: envs.Discrete, N: 1}, opts.MemoryLimit); err != nil {
		return nil, err
	}
	makeEnv, validateRows, newBatch, err := envBuilder(&cfg, &opts)
	if err != nil {
		return nil, err
	}
	spec, ok := agents.Lookup(cfg.Agent.Name)
	if !ok && opts.AgentFactory == nil {
		return nil, &config.Error{Key: "agent.name", Msg: unknownName("agent", cfg.Agent.Name, agents.Names())}
	}
	trainRows, err := loadTasks(cfg.Data.TrainFiles, opts.TrainTasks, cfg.Env.Args, validateRows, "data.train_files")
	if err != nil {
		return nil, err
	}
	valRows, err := loadTasks(cfg.Data.ValFiles, opts.ValTasks, cfg.Env.Args, validateRows, "data.val_files")
	if err != nil {
		return nil, err
	}
	t := &Trainer{cfg: cfg, opts: opts, tasks: newTaskSource(&cfg, trainRows, makeEnv), valRows: valRows,
		workflow: opts.Workflow, broker: newBroker(), wake: make(chan struct{}, 1)}
	t.reports = newReports(t.logf)
	switch {
	case t.workflow != nil:
		t.obsSpace, t.actSpace = t.workflow.Spaces()
	case newBatch != nil:
		// One backend (a remote server) steps every sub-environment with one message.
		if len(trainRows) > 0 {
			return nil, &config.Error{Key: "data.train_files", Msg: "a remote environment takes its tasks from its server, not from task files"}
		}
		if t.venv, err = newBatch(cfg.Env.NumEnvs, envs.Params(cfg.Env.Args)); err != nil {
			var argsErr *envs.ArgsError
			if errors.As(err, &argsErr) {
				return nil, &config.Error{Key: "env.args", Msg: err.Error()}
			}
			return nil, fmt.Errorf("env.args: %w", err) // the world failed, not the config
		}
		t.obsSpace, t.actSpace = t.venv.ObservationSpace(), t.venv.ActionSpace()
	default:
		list := make([]envs.Env, cfg.Env.NumEnvs)
		for i := range list {
			e, _, err := t.tasks.next()
			if err != nil {
				return nil, &config.Error{Key: "env.args", Msg: err.Error()}
			}
			list[i] = e
		}
		if t.venv, err = envs.NewVector(list); err != nil {
			return nil, &config.Error{Key: "env.id", Msg: err.Error()}
		}
		t.venv.SetThreads(cfg.Trainer.Threads) // many costly sub-environments step on the trainer's cores (envs/steppool.go)
		t.obsSpace, t.actSpace = t.venv.ObservationSpace(), t.venv.ActionSpace()
	}
	built := false
	defer func() { // a trainer that is not returned must not leave a server running
		if !built && t.venv != nil {
			t.venv.Close()
		}
	}()
	if t.obsSpace.Kind != envs.Box || t.obsSpace.Dim <= 0 {
		return nil, &config.Error{Key: "env.id", Msg: fmt.Sprintf("observations must be vectors of floats (a Box space), got %v", t.obsSpace)}
	}
	// The spaces (a remote server declares its own) size the networks.
	if err := checkMemory(&cfg, t.obsSpace, t.actSpace, opts.MemoryLimit); err != nil {
		return nil, err
	}
	t.dev, t.devInfo = opts.Device, ""
	if t.dev == nil {
		work := minibatchFLOPs(cfg, t.obsSpace, t.actSpace)
		if t.dev, t.devInfo, err = gpu.Open(cfg.Trainer.Device, cfg.Trainer.Threads, work); err != nil {
			return nil, &config.Error{Key: "trainer.device", Msg: err.Error()}
		}
	} else {
		t.devInfo = t.dev.Name()
	}
	seed := uint64(cfg.Trainer.Seed)
	build := agents.Build{Obs: t.obsSpace, Act: t.actSpace, Config: cfg.Agent.Params, NoCritic: cfg.Grouped(),
		Device: t.dev, RNG: rand.New(rand.NewPCG(seed, 1))}
	if opts.AgentFactory != nil {
		t.agent, err = opts.AgentFactory(build)
	} else {
		t.agent, err = agents.New(spec.Name, build)
	}
	if err != nil {
		return nil, &config.Error{Key: "agent.name", Msg: err.Error()}
	}
	t.learner, _ = t.agent.(agents.Learner)
	t.actSrc, t.shuffleSrc = newStreams(seed)
	t.actRNG, t.shuffleRNG = rand.New(t.actSrc), rand.New(t.shuffleSrc)
	if t.venv != nil {
		t.policyObs = t.venv.Obs
	}
	if cfg.Env.NormalizeObs && t.venv != nil {
		t.obsNorm = &obsNormalizer{stat: newRunningStat(t.venv.ObsDim), clip: cfg.Env.ClipObs}
		t.policyObs = make([]float32, len(t.venv.Obs))
	}
	if cfg.Env.NormalizeReward {
		t.rewScale = newRewardScaler(cfg.Env.NumEnvs, cfg.PPO.Gamma, cfg.Env.ClipReward)
	}
	t.shadow = cfg.Clone()
	built = true
	return t, nil
}

// SetRunDir puts the run in dir (as Options.RunDir does); call it before
// Run, once the config is known to be good.
func (t *Trainer) SetRunDir(dir string) { t.opts.RunDir = dir }

// Close releases what New acquired: a remote environment's server, and the
// device when the trainer opened it (not one passed in Options). Call it
// when done with the trainer, after Run or instead of it; Actor keeps
// working on the CPU device afterwards.
func (t *Trainer) Close() {
	t.closeOnce.Do(func() {
		if t.venv != nil {
			t.venv.Close()
		}
		if t.opts.Device == nil && t.dev != nil {
			t.dev.Close()
		}
	})
}

// envBuilder says how environments are made: by the caller's factory, or
// by the registry entry env.id names; and how task rows are checked. When
// the entry builds its sub-environments as one batch (a remote server),
// newBatch is its NewBatch, used instead of building them one by one.
func envBuilder(cfg *config.Config, opts *Options) (func(envs.Params) (envs.Env, error), func([]envs.Params) error,
	func(int, envs.Params) (*envs.Vector, error), error) {
	if opts.EnvFactory != nil || opts.Workflow != nil {
		build := opts.EnvFactory
		if build == nil { // a workflow's tasks are its own business
			build = func(envs.Params) (envs.Env, error) { return nil, errors.New("a workflow builds no environments") }
		}
		check := func(rows []envs.Params) error {
			if opts.Workflow != nil {
				return nil
			}
			return checkRows(rows, build)
		}
		return build, check, nil, nil
	}
	spec, ok := envs.Lookup(cfg.Env.ID)
	if !ok {
		return nil, nil, nil, &config.Error{Key: "env.id", Msg: unknownName("environment", cfg.Env.ID, envs.IDs())}
	}
	build := func(args envs.Params) (envs.Env, error) { return envs.Make(spec.ID, args) }
	return build, func(rows []envs.Params) error { return tasks.ValidateTasks(spec.ID, rows) }, spec.NewBatch, nil
}

// checkRows builds an environment from every row, reporting the first few
// that fail and rows whose spaces differ from the first row's.
func checkRows(rows []envs.Params, build func(envs.Params) (envs.Env, error)) error {
	var bad []string
	var first envs.Env
	for i, row := range rows {
		e, err := build(row)
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("row %d: %v", i+1, err))
		case first == nil:
			first = e
		case e.ObservationSpace().Size() != first.ObservationSpace().Size() || e.ActionSpace().Size() != first.ActionSpace().Size():
			bad = append(bad, fmt.Sprintf("row %d: spaces %v/%v differ from row 1's %v/%v", i+1,
				e.ObservationSpace(), e.ActionSpace(), first.ObservationSpace(), first.ActionSpace()))
		}
		if len(bad) == 3 {
			bad = append(bad, "…")
			break
		}
	}
	if len(bad) > 0 {
		return errors.New("the environment cannot be built from these tasks: " + strings.Join(bad, "; "))
	}
	return nil
}

// observe prepares the policy's view of the current observations, first
// folding them into the running statistics when learn is set.
func (t *Trainer) observe(learn bool) {
	if t.obsNorm == nil || t.venv == nil {
		return
	}
	if learn {
		t.obsNorm.stat.update(t.venv.Obs, t.venv.Len())
	}
	t.obsNorm.normalize(t.policyObs, t.venv.Obs, t.venv.Len())
}

func unknownName(what, name string, known []string) string {
	msg := fmt.Sprintf("unknown %s %q", what, name)
	msg += suggest.DidYouMean(suggest.Names(name, known))
	return msg + " (available: " + strings.Join(known, ", ") + ")"
}

// Config returns the config the run uses now (live edits included).
func (t *Trainer) Config() config.Config {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.shadow.Clone()
}

// Info describes the run. RunDir is empty until Run has created it.
func (t *Trainer) Info() Info {
	t.mu.Lock()
	defer t.mu.Unlock()
	total := t.shadow.PPO.TotalTimesteps
	if t.lmr != nil {
		total = int64(t.shadow.Trainer.TotalTrainingSteps) // a language-model run's steps are its iterations
	}
	return Info{RunDir: t.runDir, Device: t.devInfo, EnvID: t.cfg.Env.ID, Agent: t.cfg.Agent.Name,
		TotalSteps: total, ObsSpace: t.obsSpace, ActSpace: t.actSpace}
}

// Subscribe returns a stream of events with room for buffer of them, and a
// function that ends the subscription. A subscriber that falls behind loses
// events (never the end of the run); the trainer never waits for it. The
// stream begins with the run's recent log and its latest state change, so
// a viewer that attaches late sees them too.
func (t *Trainer) Subscribe(buffer int) (<-chan Event, func()) { return t.broker.subscribe(buffer) }

// Pause holds training at the next iteration boundary.
func (t *Trainer) Pause() { t.setPaused(true) }

// Resume continues a paused run.
func (t *Trainer) Resume() { t.setPaused(false) }

// Paused reports whether the run is paused.
func (t *Trainer) Paused() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.paused
}

func (t *Trainer) setPaused(p bool) {
	t.mu.Lock()
	t.paused = p
	t.mu.Unlock()
	t.poke()
}

// poke wakes a paused loop to look at its controls again.
func (t *Trainer) poke() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Stop ends the run at the next iteration boundary, keeping what was done.
func (t *Trainer) Stop() {
	t.mu.Lock()
	t.stopAsked = true
	cancel := t.cancel
	t.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// SaveCheckpoint asks for a checkpoint at the next iteration boundary.
func (t *Trainer) SaveCheckpoint() {
	t.saveReq.Store(true)
	t.poke()
}

// ErrNotLive is returned when a running training is asked to change a key
// that only takes effect when a run starts.
var ErrNotLive = errors.New("applies only when a run starts; change it before starting")

// Edit validates a live change of key to the TOML value raw and queues it
// for the next iteration. Unknown keys, bad values and keys that need a
// restart are refused with a *config.Error.
func (t *Trainer) Edit(key, raw string) error {
	k, ok := config.Lookup(key)
	if !ok {
		probe := config.Default()
		return probe.SetString(key, raw) // yields the unknown-key message
	}
	if !k.Live {
		return &config.Error{Key: key, Msg: ErrNotLive.Error()}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	next := t.shadow.Clone()
	if err := next.SetString(key, raw); err != nil {
		return err
	}
	if err := next.Validate(); err != nil {
		return err
	}
	if done := t.stepsDone.Load(); key == "ppo.total_timesteps" && next.PPO.TotalTimesteps <= done {
		// Lowering it below what was done would end the run unannounced.
		return &config.Error{Key: key, Msg: fmt.Sprintf("%d is not above the %d steps this run has already taken; to end the run, stop it", next.PPO.TotalTimesteps, done)}
	}
	if done := t.stepsDone.Load(); t.lmr != nil && key == "trainer.total_training_steps" && int64(next.Trainer.TotalTrainingSteps) <= done {
		return &config.Error{Key: key, Msg: fmt.Sprintf("%d is not above the %d iterations this run has already done; to end the run, stop it", next.Trainer.TotalTrainingSteps, done)}
	}
	old, _ := t.shadow.Get(key)
	val, _ := next.Get(key)
	t.shadow = next
	t.pending = append(t.pending, Edit{Key: key, Value: config.FormatValue(val), Old: config.FormatValue(old)})
	t.poke()
	return nil
}

// takeEdits removes the queued edits and the config they produce.
func (t *Trainer) takeEdits() ([]Edit, config.Config) {
	t.mu.Lock()
	defer t.mu.Unlock()
	edits := t.pending
	t.pending = nil
	return edits, t.shadow.Clone()
}

func (t *Trainer) logf(format string, args ...any) {
	t.broker.publish(Event{Kind: EventLog, Time: t.opts.Now(), Message: fmt.Sprintf(format, args...)})
}
