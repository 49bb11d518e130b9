package trainer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agenttrainer/agenttrainer/agents/lm"
	"github.com/agenttrainer/agenttrainer/agents/lm/hf"
	"github.com/agenttrainer/agenttrainer/agents/lmagent"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/lmrl"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
	"github.com/agenttrainer/agenttrainer/trainer/textrl"
)

// This file builds a language-model run: the lm agent on a text
// environment. Its loop (lmloop.go) lives in the same run life as PPO's
// (run.go): run directory, events, pause, live edits, checkpoints and the
// control socket are the same.

// lmRun is what a language-model run holds besides the Trainer's own.
type lmRun struct {
	pol     *lmagent.Policy
	ref     *lm.Model // the frozen reference policy; nil without a KL term
	spec    text.Spec
	factory textrl.WorkflowFactory
	gen     *textrl.LMGenerator
	// The passes of the policy and the reference, grown on demand.
	pass, refPass           *lm.Pass
	passTokens, refPassToks int
	stats                   gpu.Tensor // the device's statistics (the gradient norm)
	// The value head of PPO proper (algorithm.adv_estimator = gae) and its
	// Adam moments; nil otherwise.
	value *lm.ValueHead
	vopt  adam
	// WarmStart, when set, runs once on the model before the first
	// iteration (supervised warm start: trainer/sft).
	warmStart        func(ctx context.Context, w WarmStart) error
	warmStateDropped bool // dropWarmStartState's work is done
}

// WarmStart is what a warm-start phase (supervised fine-tuning before RL,
// in the same run) is given: the policy, its tokenizer and chat format,
// the run directory, and a way to log.
type WarmStart struct {
	Policy *lmagent.Policy
	RunDir string
	Config config.Config
	Logf   func(format string, args ...any)
}

// WarmStartState is the file in a run directory where a warm-start phase
// keeps its progress: a run stopped in the phase, before its first
// checkpoint, continues the phase from it on Resume.
const WarmStartState = "warm-start-state.safetensors"

// resumeInWarmStart builds the trainer that continues a language-model run
// stopped in its warm-start phase: the run's config (live keys may be
// overridden), its directory reopened, and the phase picking up its state.
// ok is false when dir's run is not such a run (it has a checkpoint, or
// no warm-start state).
func resumeInWarmStart(dir string, overrides []string, opts Options) (t *Trainer, ok bool, err error) {
	if names, err := runstore.Checkpoints(filepath.Join(dir, runstore.CheckpointsDir)); err == nil && len(names) > 0 {
		return nil, false, nil
	}
	state := filepath.Join(dir, WarmStartState)
	if _, err := os.Stat(state); err != nil {
		return nil, false, nil
	}
	runCfg := config.Default()
	if err := runCfg.LoadFile(filepath.Join(dir, runstore.ConfigFile)); err != nil {
		return nil, true, err
	}
	fc := &foundCheckpoint{resumePoint: resumePoint{path: state}, cfg: runCfg}
	if t, err = resumeTrainer(dir, fc, runCfg, overrides, opts); err != nil {
		return nil, true, err
	}
	if t.lmr == nil || t.lmr.warmStart == nil {
		t.Close()
		return nil, true, &config.Error{Source: "--resume", Msg: fmt.Sprintf("%s has no checkpoint yet, and its config has no warm-start phase (sft.data) for %s to continue", dir, WarmStartState)}
	}
	t.reopen = true
	return t, true, nil
}

// dropWarmStartState removes the warm start's state once the run has
// written a checkpoint (checkpoint calls it: a resume starts from that; the
// state is as large as the model three times over).
func (t *Trainer) dropWarmStartState(dir string) {
	if t.lmr.warmStart == nil || t.lmr.warmStateDropped {
		return
	}
	if err := os.Remove(filepath.Join(dir, WarmStartState)); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.logf("warning: removing %s: %v", WarmStartState, err)
	}
	t.lmr.warmStateDropped = true
}

// WarmStartFor, when set, gives every language-model run that New builds
// its warm-start phase from the run's config (nil: the config asks for
// none; an error is the config's mistake). The supervised warm start
// (trainer/sft) sets it from its init function, so that `train`, detached
// runs and the app get the phase without knowing of it; SetWarmStart
// replaces it for one run.
var WarmStartFor func(cfg config.Config) (func(ctx context.Context, w WarmStart) error, error)

// isTextEnv reports whether id names a text environment.
func isTextEnv(id string) bool { _, ok := text.Lookup(id); return ok }

// newLM builds a language-model run: the lm agent must meet a text
// environment, and a text environment the lm agent.
func newLM(cfg config.Config, opts Options) (*Trainer, error) {
	spec, isText := text.Lookup(cfg.Env.ID)
	switch {
	case !cfg.LM():
		return nil, &config.Error{Key: "agent.name", Msg: fmt.Sprintf("%s is a text environment: it needs a language model, agent.name = %q (agent %q acts on numbers)", cfg.Env.ID, config.LMAgent, cfg.Agent.Name)}
	case !isText:
		return nil, &config.Error{Key: "env.id", Msg: fmt.Sprintf("the lm agent plays text environments (%s); %q is not one", strings.Join(text.IDs(), ", "), cfg.Env.ID)}
	case opts.EnvFactory != nil || opts.Workflow != nil || opts.AgentFactory != nil:
		return nil, errors.New("a language-model run builds its own environments, workflow and agent; Options.EnvFactory, Workflow and AgentFactory are for numeric runs")
	}
	if n := cfg.Data.MaxPromptLength + cfg.Data.MaxResponseLength; n > 1<<20 {
		return nil, &config.Error{Key: "data.max_prompt_length", Msg: fmt.Sprintf("with data.max_response_length it makes %d tokens, more than any model's context", n)}
	}
	t := &Trainer{cfg: cfg, opts: opts, broker: newBroker(), wake: make(chan struct{}, 1)}
	t.reports = newReports(t.logf)
	check := func(rows []envs.Params) error { return checkTextRows(spec, rows) }
	trainRows, err := loadTasks(cfg.Data.TrainFiles, opts.TrainTasks, cfg.Env.Args, check, "data.train_files")
	if err != nil {
		return nil, err
	}
	valRows, err := loadTasks(cfg.Data.ValFiles, opts.ValTasks, cfg.Env.Args, check, "data.val_files")
	if err != nil {
		return nil, err
	}
	if trainRows, valRows, err = generateTasks(&cfg, spec, trainRows, valRows); err != nil {
		return nil, err
	}
	t.tasks, t.valRows = newTaskSource(&cfg, trainRows, nil), valRows
	factory, err := textrl.MultiTurn(textrl.MultiTurnOptions{Env: spec.ID, MaxTurns: cfg.Rollout.MaxTurns,
		Agent: cfg.Workflow.Agent, AgentArgs: envs.Params(cfg.Workflow.AgentArgs)})
	if err != nil {
		key := "env.id"
		if cfg.Workflow.Agent != "" || len(cfg.Workflow.AgentArgs) > 0 {
			key = "workflow.agent"
		}
		return nil, &config.Error{Key: key, Msg: err.Error()}
	}
	if opts.Device != nil {
		t.dev, t.devInfo = opts.Device, opts.Device.Name()
	} else {
		if err := checkThreads(cfg.Trainer.Threads); err != nil && cfg.Trainer.Device != "cuda" && !strings.HasPrefix(cfg.Trainer.Device, "cuda:") {
			return nil, err
		}
		est, _ := lmagent.ArchConfig(cfg.Agent.Params)
		work := 1e9 // a language model is always worth a GPU that answers
		if est != nil {
			work = 6 * float64(est.Params()) * float64(cfg.Actor.MicroBatch*(cfg.Data.MaxPromptLength+cfg.Data.MaxResponseLength))
		}
		if t.dev, t.devInfo, err = gpu.Open(cfg.Trainer.Device, cfg.Trainer.Threads, work); err != nil {
			return nil, &config.Error{Key: "trainer.device", Msg: err.Error()}
		}
	}
	built := false
	defer func() {
		if !built && opts.Device == nil && t.dev != nil {
			t.dev.Close()
		}
	}()
	limit := int64(opts.MemoryLimit)
	if limit == 0 {
		limit = int64(memoryLimit())
	}
	pol, err := lmagent.Open(cfg.Agent.Params, t.dev, uint64(cfg.Trainer.Seed), limit)
	if err != nil {
		return nil, agentError(err)
	}
	mc := pol.Model.Config
	if need := cfg.Data.MaxPromptLength + cfg.Data.MaxResponseLength; need > mc.MaxPositions {
		return nil, &config.Error{Key: "data.max_prompt_length", Msg: fmt.Sprintf("data.max_prompt_length %d + data.max_response_length %d = %d tokens, more than the model's context of %d",
			cfg.Data.MaxPromptLength, cfg.Data.MaxResponseLength, need, mc.MaxPositions)}
	}
	if need := float64(lm.TrainBytes(mc)); need > float64(limit) {
		return nil, &config.Error{Key: "agent.name", Msg: fmt.Sprintf("training this %s-parameter model needs about %.1f GB (weights, gradients, Adam), more than the %.1f GB available; pick a smaller model",
			lm.ParamCount(mc.Params()), need/1e9, float64(limit)/1e9)}
	}
	r := &lmRun{pol: pol, spec: spec, factory: factory, stats: t.dev.Alloc(1, gpu.NumStats)}
	if cfg.Actor.UseKLLoss || cfg.Algorithm.UseKLInReward {
		if r.ref, err = frozenCopy(pol.Model, limit); err != nil {
			return nil, &config.Error{Key: "actor.use_kl_loss", Msg: "the reference model: " + err.Error()}
		}
	}
	if cfg.Algorithm.AdvEstimator == lmrl.GAE {
		r.value = pol.Model.NewValueHead()
		n := r.value.Len()
		r.vopt = adam{m: t.dev.Alloc(1, n), v: t.dev.Alloc(1, n)}
		if dir := cfg.Agent.Params.String("model"); dir != "" {
			// A model directory this program saved carries its value head.
			if _, err := r.value.Load(dir); err != nil {
				return nil, &config.Error{Key: "agent.model", Msg: "the value head: " + err.Error()}
			}
		}
	}
	maxLen := cfg.Data.MaxPromptLength + cfg.Data.MaxResponseLength
	g, err := pol.Model.NewGenerator(cfg.Rollout.MaxNumSeqs, maxLen)
	if err != nil {
		return nil, &config.Error{Key: "rollout.max_num_seqs", Msg: err.Error()}
	}
	r.gen = &textrl.LMGenerator{G: g}
	if WarmStartFor != nil {
		if r.warmStart, err = WarmStartFor(cfg); err != nil {
			var ce *config.Error
			if errors.As(err, &ce) {
				return nil, err
			}
			return nil, &config.Error{Msg: "the warm start: " + err.Error()}
		}
	}
	t.lmr = r
	seed := uint64(cfg.Trainer.Seed)
	t.actSrc, t.shuffleSrc = newStreams(seed)
	t.actRNG, t.shuffleRNG = newRand(t.actSrc), newRand(t.shuffleSrc)
	t.shadow = cfg.Clone()
	built = true
	return t, nil
}

// agentError is the lm agent's error as a config error on the key it
// names ("agent.model: …"), else on agent.name.
func agentError(err error) error {
	msg := err.Error()
	if key, rest, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(key, "agent.") && !strings.ContainsAny(key, " \t") {
		return &config.Error{Key: key, Msg: rest}
	}
	return &config.Error{Key: "agent.name", Msg: "the lm agent: " + msg}
}

// SetWarmStart gives a language-model run a phase that runs once, before
// its first iteration (not on resume), on the policy: supervised warm
// start. An error from it fails the run.
func (t *Trainer) SetWarmStart(f func(ctx context.Context, w WarmStart) error) error {
	if t.lmr == nil {
		return errors.New("a warm start is for language-model runs (agent.name = \"lm\")")
	}
	t.lmr.warmStart = f
	return nil
}

// Policy is a language-model run's policy (nil for a numeric run).
func (t *Trainer) Policy() *lmagent.Policy {
	if t.lmr == nil {
		return nil
	}
	return t.lmr.pol
}

// frozenCopy makes a copy of m that never trains: the reference policy.
func frozenCopy(m *lm.Model, limit int64) (*lm.Model, error) {
	ref, err := lm.New(m.Dev, m.Config, limit)
	if err != nil {
		return nil, err
	}
	host := make([]float32, m.Params.Len())
	m.Dev.Download(host, m.Params)
	ref.Dev.Upload(ref.Params, host)
	return ref, nil
}

// checkTextRows builds an environment of every row (at most the first
// three failures reported).
func checkTextRows(spec text.Spec, rows []envs.Params) error {
	var bad []string
	for i, row := range rows {
		if _, err := text.Make(spec.ID, row, nil); err != nil {
			bad = append(bad, fmt.Sprintf("row %d: %v", i+1, err))
			if len(bad) == 3 {
				bad = append(bad, "…")
				break
			}
		}
	}
	if len(bad) > 0 {
		return errors.New(spec.ID + " cannot be built from these tasks: " + strings.Join(bad, "; "))
	}
	return nil
}

// generatedTrain and generatedVal are the sizes of the task sets a text
// environment makes for itself when no files are given; a training set is
// made smaller when the environment has fewer distinct tasks (1-digit
// addition has 100).
const (
	generatedTrain = 10_000
	generatedVal   = 64
)

// generateTasks makes the validation and training sets the files do not
// give, with the environment's own generator from env.args: validation
// first, then training tasks other than those. The sets depend on env.args
// and trainer.seed alone, so a resumed run finds the same ones.
func generateTasks(cfg *config.Config, spec text.Spec, train, val []envs.Params) ([]envs.Params, []envs.Params, error) {
	if train != nil && (val != nil || cfg.Trainer.TestFreq == 0) {
		return train, val, nil
	}
	if spec.Generate == nil {
		if train == nil {
			return nil, nil, &config.Error{Key: "data.train_files", Msg: fmt.Sprintf("%s makes no tasks of its own: give task files (JSONL, CSV or Parquet rows of %s)", spec.ID, strings.Join(spec.Columns, ", "))}
		}
		return train, val, nil
	}
	args := envs.Params(cfg.Env.Args)
	keys := func(rows []envs.Params) map[string]bool {
		out := map[string]bool{}
		if spec.Key != nil {
			for _, row := range rows {
				if k, err := spec.Key(row); err == nil {
					out[k] = true
				}
			}
		}
		return out
	}
	var err error
	if val == nil && cfg.Trainer.TestFreq > 0 {
		n := generatedVal
		if cfg.Data.ValBatchSize > 0 {
			n = cfg.Data.ValBatchSize
		}
		if val, err = spec.Generate(text.GenerateOptions{N: n, Seed: cfg.Trainer.Seed + 1_000_003, Args: args, Exclude: keys(train)}); err != nil {
			return nil, nil, &config.Error{Key: "env.args", Msg: "validation tasks: " + err.Error()}
		}
	}
	if train == nil {
		exclude := keys(val)
		for _, n := range []int{generatedTrain, 5000, 2000, 1000, 500, 200, 100, 50, 20, 10, 5, 2, 1} {
			if train, err = spec.Generate(text.GenerateOptions{N: n, Seed: cfg.Trainer.Seed, Args: args, Exclude: exclude}); err == nil {
				break
			}
		}
		if err != nil {
			return nil, nil, &config.Error{Key: "env.args", Msg: "training tasks: " + err.Error()}
		}
	}
	return train, val, nil
}

// saveModel writes the policy as a Hugging Face model directory in the run
// directory (model/), with its tokenizer: what eval, a later run's
// agent.model and PyTorch load.
func (r *lmRun) saveModel(runDir string, cfg *config.Config) error {
	dir := filepath.Join(runDir, "model")
	if err := r.pol.Model.Save(dir, hf.SaveOptions{From: cfg.Agent.Params.String("model")}); err != nil {
		return fmt.Errorf("saving the model: %w", err)
	}
	if cfg.Agent.Params.String("model") == "" {
		if err := r.pol.Tokenizer.Save(dir); err != nil {
			return fmt.Errorf("saving the tokenizer: %w", err)
		}
	}
	if r.value != nil {
		if err := r.value.Save(dir); err != nil {
			return fmt.Errorf("saving the value head: %w", err)
		}
	}
	return nil
}
