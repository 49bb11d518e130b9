package trainer

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// Version is the program version recorded in checkpoints.
const Version = "0.1.0"

// checkpointFormat names the layout of our safetensors checkpoints.
const checkpointFormat = "agenttrainer/v1"

// loopState is everything besides tensors that a resumed run needs to
// continue exactly: counters, random streams, the episode window, and the
// environments' own state. It travels as JSON in the checkpoint header.
type loopState struct {
	Iter       int         `json:"iter"`
	Step       int64       `json:"step"`
	AdamStep   int         `json:"adam_step"`
	ElapsedS   float64     `json:"elapsed_s"`
	Episodes   windowState `json:"episodes"`
	ActRNG     []byte      `json:"act_rng"`
	ShuffleRNG []byte      `json:"shuffle_rng"`
	Envs       []byte      `json:"envs,omitempty"` // absent when the envs cannot save their state
	// Normalisation counts and the reward scaler's running returns.
	ObsNormCount    float64   `json:"obs_norm_count,omitempty"`
	RewardNormCount float64   `json:"reward_norm_count,omitempty"`
	RewardReturns   []float64 `json:"reward_returns,omitempty"`
	Tasks           taskState `json:"tasks"`
}

type windowState struct {
	Returns []float64 `json:"returns"`
	Lengths []float64 `json:"lengths"`
	Next    int       `json:"next"`
	Count   int       `json:"count"`
	Total   int64     `json:"total"`
}

func (w *episodeWindow) state() windowState {
	return windowState{Returns: w.returns, Lengths: w.lengths, Next: w.next, Count: w.count, Total: w.total}
}

func (w *episodeWindow) restore(s windowState) error {
	if len(s.Returns) != len(w.returns) || len(s.Lengths) != len(w.lengths) || s.Next >= len(w.returns) || s.Count > len(w.returns) {
		return errors.New("episode window of the wrong size")
	}
	copy(w.returns, s.Returns)
	copy(w.lengths, s.Lengths)
	w.next, w.count, w.total = s.Next, s.Count, s.Total
	return nil
}

// resumePoint is a checkpoint a run continues from.
type resumePoint struct {
	path    string
	state   loopState
	tensors map[string]runstore.Tensor
}

// Resume rebuilds the run in dir from its newest valid checkpoint.
// Overrides may change live keys, trainer.device and trainer.runs_dir;
// anything else would make the checkpoint meaningless and is refused.
func Resume(dir string, overrides []string, opts Options) (*Trainer, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, &config.Error{Source: "--resume", Msg: fmt.Sprintf("no run directory at %s", dir)}
	}
	if _, err := os.Stat(filepath.Join(dir, runstore.ConfigFile)); err != nil {
		return nil, &config.Error{Source: "--resume", Msg: fmt.Sprintf("%s is not an agenttrainer run directory (it has no %s)", dir, runstore.ConfigFile)}
	}
	if err := runstore.CheckFree(dir); err != nil {
		return nil, err // resuming a live run would interleave two trainers' records
	}
	if t, ok, err := resumeInWarmStart(dir, overrides, opts); ok {
		return t, err
	}
	t, err := loadNewestValid(dir, true, func(fc *foundCheckpoint) (*Trainer, error) {
		runCfg := config.Default()
		if err := runCfg.LoadFile(filepath.Join(dir, runstore.ConfigFile)); err != nil {
			return nil, err
		}
		return resumeTrainer(dir, fc, runCfg, overrides, opts)
	}, func(t *Trainer, fc *foundCheckpoint) error { return t.loadCheckpoint(fc.resumePoint) })
	if err != nil {
		return nil, err
	}
	return t, nil
}

// resumeTrainer builds the trainer a checkpoint continues: its config, with
// overrides of live keys only.
func resumeTrainer(dir string, fc *foundCheckpoint, runCfg config.Config, overrides []string, opts Options) (*Trainer, error) {
	saved := fc.cfg
	if runCfg.Env.ID != saved.Env.ID || runCfg.Agent.Name != saved.Agent.Name {
		return nil, &config.Error{Source: "--resume", Msg: fmt.Sprintf("%s was trained on %s with %s, but this run is %s with %s (a checkpoint from another run?)",
			filepath.Base(fc.path), saved.Env.ID, saved.Agent.Name, runCfg.Env.ID, runCfg.Agent.Name)}
	}
	cfg := saved.Clone()
	if err := cfg.ApplyArgs(overrides); err != nil {
		return nil, err
	}
	for _, k := range config.Schema() {
		if k.Live || k.Name == "trainer.device" || k.Name == "trainer.runs_dir" {
			continue
		}
		was, _ := saved.Get(k.Name)
		now, _ := cfg.Get(k.Name)
		if config.FormatValue(was) != config.FormatValue(now) {
			return nil, &config.Error{Key: k.Name, Msg: fmt.Sprintf("cannot change when resuming: the checkpoint was trained with %s", config.FormatValue(was))}
		}
	}
	opts.RunDir = dir
	return New(cfg, opts)
}

// loadNewestValid builds a trainer with build and loads into it, with
// load, the newest checkpoint of the run in dir that passes every check
// (the one `latest` names first). A checkpoint that cannot be parsed,
// validated or loaded is skipped for the next older one, and the trainer
// says so when it starts; an error of build (a config mistake, an override
// the run refuses) ends the search, since an older checkpoint would meet it
// too.
func loadNewestValid(dir string, needState bool, build func(*foundCheckpoint) (*Trainer, error), load func(*Trainer, *foundCheckpoint) error) (*Trainer, error) {
	ckDir := filepath.Join(dir, runstore.CheckpointsDir)
	names, err := runstore.Checkpoints(ckDir)
	if err != nil {
		return nil, &config.Error{Source: dir, Msg: fmt.Sprintf("no %s directory: this is not a run directory, or the run never saved", runstore.CheckpointsDir)}
	}
	if len(names) == 0 {
		return nil, &config.Error{Source: dir, Msg: "no checkpoint yet (the run stopped before its first save)"}
	}
	var skipped []string
	for _, name := range names {
		fc, err := readCheckpoint(filepath.Join(ckDir, name), needState)
		if err == nil {
			var t *Trainer
			if t, err = build(fc); err != nil {
				return nil, err
			}
			if err = load(t, fc); err == nil {
				for _, s := range skipped {
					t.notes = append(t.notes, "skipped checkpoint "+s)
				}
				return t, nil
			}
			t.Close()
		}
		skipped = append(skipped, fmt.Sprintf("%s: %v", name, err))
	}
	if len(skipped) > 3 {
		skipped = append(skipped[:3], fmt.Sprintf("and %d more", len(skipped)-3))
	}
	return nil, &config.Error{Source: dir, Msg: "no valid checkpoint: " + strings.Join(skipped, "; ")}
}

// foundCheckpoint is a checkpoint read and checked, with its header and
// the config it was trained with.
type foundCheckpoint struct {
	resumePoint
	meta map[string]string
	cfg  config.Config
}

// readCheckpoint reads and checks one checkpoint file: its format, its
// config, every value finite and in range, and (when needState, for
// resuming) its loop state.
func readCheckpoint(path string, needState bool) (*foundCheckpoint, error) {
	tensors, meta, err := runstore.ReadSafetensors(path)
	if err != nil {
		return nil, err
	}
	if meta["format"] != checkpointFormat {
		return nil, fmt.Errorf("not an agenttrainer checkpoint (format %q)", meta["format"])
	}
	fc := &foundCheckpoint{resumePoint: resumePoint{path: path, tensors: tensors}, meta: meta, cfg: config.Default()}
	if strings.TrimSpace(meta["config"]) == "" {
		return nil, errors.New("the header holds no config")
	}
	if err := fc.cfg.LoadTOML(meta["config"], "its config"); err != nil {
		return nil, err
	}
	if meta["env"] != fc.cfg.Env.ID || meta["agent"] != fc.cfg.Agent.Name {
		return nil, fmt.Errorf("the header says %s with %s, its config %s with %s", meta["env"], meta["agent"], fc.cfg.Env.ID, fc.cfg.Agent.Name)
	}
	if err := checkTensorValues(tensors); err != nil {
		return nil, err
	}
	if needState || meta["state"] != "" {
		if err := json.Unmarshal([]byte(meta["state"]), &fc.state); err != nil {
			return nil, fmt.Errorf("bad training state in header: %v", err)
		}
		if err := fc.state.check(meta); err != nil {
			return nil, err
		}
		if a, ok := meta["adam_step"]; ok && a != strconv.Itoa(fc.state.AdamStep) {
			return nil, fmt.Errorf("header says Adam step %s, training state %d", a, fc.state.AdamStep)
		}
	}
	return fc, nil
}

// Bounds on a checkpoint's values: a trained weight or an Adam moment far
// beyond these is a corrupt file, not a network worth continuing.
const (
	maxWeight = 1e6
	maxMoment = 1e12
)

// checkTensorValues refuses non-finite values anywhere, weights and first
// moments beyond their bound, and negative or huge second moments and
// variances.
func checkTensorValues(tensors map[string]runstore.Tensor) error {
	for name, td := range tensors {
		limit, nonNegative := maxWeight, false
		switch {
		case strings.HasPrefix(name, "optimizer.exp_avg_sq."):
			limit, nonNegative = maxMoment, true
		case strings.HasPrefix(name, "optimizer."):
			limit = maxMoment
		case strings.HasSuffix(name, "_norm.var"):
			limit, nonNegative = math.MaxFloat32, true
		case strings.HasSuffix(name, "_norm.mean"):
			limit = math.MaxFloat32
		}
		for i, x := range td.Data {
			v := float64(x)
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
				return fmt.Errorf("tensor %s holds %v at %d", name, x, i)
			case nonNegative && v < 0:
				return fmt.Errorf("tensor %s holds the negative %v at %d, where only values ≥ 0 make sense", name, x, i)
			case math.Abs(v) > limit:
				return fmt.Errorf("tensor %s holds %v at %d, beyond any trained value (%g)", name, x, i, limit)
			}
		}
	}
	return nil
}

// check refuses a loop state that no training could have written, or one
// that disagrees with the header's own counters.
func (st *loopState) check(meta map[string]string) error {
	switch {
	case st.Iter < 0 || st.Step < 0 || st.AdamStep < 0:
		return fmt.Errorf("negative counters in the training state (iter %d, step %d, adam step %d)", st.Iter, st.Step, st.AdamStep)
	case math.IsNaN(st.ElapsedS) || math.IsInf(st.ElapsedS, 0) || st.ElapsedS < 0:
		return fmt.Errorf("training state has elapsed time %v", st.ElapsedS)
	case meta["iter"] != "" && meta["iter"] != strconv.Itoa(st.Iter):
		return fmt.Errorf("header says iteration %s, training state %d", meta["iter"], st.Iter)
	case meta["step"] != "" && meta["step"] != strconv.FormatInt(st.Step, 10):
		return fmt.Errorf("header says step %s, training state %d", meta["step"], st.Step)
	}
	return nil
}

// loadCheckpoint puts a checkpoint's weights, optimizer state and loop
// state into a freshly built trainer.
func (t *Trainer) loadCheckpoint(rp resumePoint) error {
	st := rp.state
	if err := t.loadWeights(rp.tensors); err != nil {
		return err
	}
	if err := t.loadLMWeights(rp.tensors); err != nil {
		return err
	}
	if err := t.actSrc.UnmarshalBinary(st.ActRNG); err != nil {
		return fmt.Errorf("bad action random stream: %v", err)
	}
	if err := t.shuffleSrc.UnmarshalBinary(st.ShuffleRNG); err != nil {
		return fmt.Errorf("bad shuffle random stream: %v", err)
	}
	if len(st.Envs) > 0 && t.venv != nil {
		if err := t.venv.Restore(st.Envs); err != nil {
			return err
		}
	}
	if err := t.loadNormalizers(rp.tensors, st); err != nil {
		return err
	}
	if err := t.tasks.restore(st.Tasks); err != nil {
		return err
	}
	if t.rewScale != nil {
		if len(st.RewardReturns) != len(t.rewScale.returns) {
			return errors.New("checkpoint lacks the reward scaler's running returns")
		}
		copy(t.rewScale.returns, st.RewardReturns)
	}
	t.resume = &rp
	return nil
}

// loadNormalizers restores the observation and reward statistics.
func (t *Trainer) loadNormalizers(tensors map[string]runstore.Tensor, st loopState) error {
	if t.obsNorm != nil {
		if err := t.obsNorm.stat.load(tensors, "obs_norm", st.ObsNormCount); err != nil {
			return err
		}
	}
	if t.rewScale != nil {
		if err := t.rewScale.stat.load(tensors, "reward_norm", st.RewardNormCount); err != nil {
			return err
		}
	}
	return nil
}

// loadWeights loads parameters and Adam moments, checking that every tensor
// the agent has is present with the right size.
func (t *Trainer) loadWeights(tensors map[string]runstore.Tensor) error {
	if t.learner != nil {
		n := t.learner.Params().Len()
		flat := map[string][]float32{"": make([]float32, n), "optimizer.exp_avg.": make([]float32, n), "optimizer.exp_avg_sq.": make([]float32, n)}
		for prefix, host := range flat {
			for _, nt := range t.learner.Tensors() {
				td, ok := tensors[prefix+nt.Name]
				if !ok {
					return fmt.Errorf("checkpoint lacks tensor %s (was it written by another agent?)", prefix+nt.Name)
				}
				want := nt.ExportShape()
				if !slices.Equal(td.Shape, want) || len(td.Data) != nt.T.Len() {
					return fmt.Errorf("tensor %s has shape %v, this agent needs %v (different env, agent.conv or agent.hidden?)", td.Name, td.Shape, want)
				}
				nt.Import(host[nt.T.Offset():nt.T.Offset()+nt.T.Len()], td.Data)
			}
		}
		for _, v := range flat[""] {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return errors.New("checkpoint holds non-finite weights")
			}
		}
		t.dev.Upload(t.learner.Params(), flat[""])
		t.resumeAdam = [2][]float32{flat["optimizer.exp_avg."], flat["optimizer.exp_avg_sq."]}
	}
	return nil
}

// saveState captures the loop state for a checkpoint.
func (t *Trainer) saveState(iter int, step int64, adamStep int, elapsed time.Duration, w *episodeWindow) (loopState, error) {
	st := loopState{Iter: iter, Step: step, AdamStep: adamStep, ElapsedS: elapsed.Seconds(), Episodes: w.state()}
	var err error
	if st.ActRNG, err = t.actSrc.MarshalBinary(); err != nil {
		return st, err
	}
	if st.ShuffleRNG, err = t.shuffleSrc.MarshalBinary(); err != nil {
		return st, err
	}
	if st.Tasks, err = t.tasks.state(); err != nil {
		return st, err
	}
	if t.obsNorm != nil {
		st.ObsNormCount = t.obsNorm.stat.count
	}
	if t.rewScale != nil {
		st.RewardNormCount, st.RewardReturns = t.rewScale.stat.count, t.rewScale.returns
	}
	if t.venv == nil {
		return st, nil
	}
	if envs, err := t.venv.Snapshot(); err == nil {
		st.Envs = envs
	} else if !t.warnedSnapshot {
		t.warnedSnapshot = true
		t.logf("note: %v; a resumed run will restart its episodes", err)
	}
	return st, nil
}

// newStreams makes the trainer's two random streams from the seed.
func newStreams(seed uint64) (act, shuffle *rand.PCG) {
	return rand.NewPCG(seed, 2), rand.NewPCG(seed, 3)
}

// checkpoint writes checkpoints/step-<N>.safetensors atomically, points
// checkpoints/latest at it, and prunes old ones.
func (t *Trainer) checkpoint(f *runFiles, sum *Summary, p *progress, pinned bool) error {
	dir := filepath.Join(f.dir, runstore.CheckpointsDir)
	if sum.Checkpoint == filepath.Join(dir, runstore.CheckpointName(p.step)) {
		if pinned { // asked for by hand: the one just written is kept
			return t.pin(dir, sum.Checkpoint, p.step)
		}
		return nil // nothing new since the last one
	}
	if err := f.metrics.Sync(); err != nil { // the records a checkpoint vouches for are on disk first
		return err
	}
	st, err := t.saveState(p.iter, p.step, p.opt.step, p.elapsed(t.opts.Now()), p.episodes)
	if err != nil {
		return err
	}
	stateJSON, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tensors, meta := t.checkpointTensors(&p.opt)
	for _, td := range tensors {
		for _, x := range td.Data {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("refusing to checkpoint non-finite values in %s; the previous checkpoint stays the latest", td.Name)
			}
		}
	}
	meta["iter"], meta["step"], meta["state"] = fmt.Sprint(p.iter), fmt.Sprint(p.step), string(stateJSON)
	data, err := runstore.EncodeSafetensors(tensors, meta)
	if err != nil {
		return err
	}
	path, err := runstore.WriteCheckpoint(dir, p.step, data)
	if err != nil {
		return err
	}
	sum.Checkpoint, p.lastSave = path, t.opts.Now()
	if t.lmr != nil { // the policy as a Hugging Face directory too (model/)
		if err := t.lmr.saveModel(f.dir, &t.cfg); err != nil {
			t.logf("warning: %v", err)
		}
		t.dropWarmStartState(f.dir)
	}
	if pinned {
		return t.pin(dir, path, p.step)
	}
	runstore.PruneCheckpoints(dir, t.cfg.Trainer.Keep)
	t.broker.publish(Event{Kind: EventCheckpoint, Time: t.opts.Now(), Checkpoint: path, Message: "checkpoint saved: " + filepath.Base(path)})
	return nil
}

// pin keeps a checkpoint asked for by hand through the rotation, and says
// so with its step.
func (t *Trainer) pin(dir, path string, step int64) error {
	if err := runstore.Pin(dir, step); err != nil {
		return fmt.Errorf("pinning %s: %w", filepath.Base(path), err)
	}
	runstore.PruneCheckpoints(dir, t.cfg.Trainer.Keep)
	t.broker.publish(Event{Kind: EventCheckpoint, Time: t.opts.Now(), Checkpoint: path, Pinned: true,
		Message: fmt.Sprintf("checkpoint saved at step %d as asked: %s (pinned: the rotation keeps it)", step, filepath.Base(path))})
	return nil
}

// checkpointTensors gathers the parameters in PyTorch layout (weights
// out×in) and the Adam moments under "optimizer.exp_avg.<name>" and
// "optimizer.exp_avg_sq.<name>".
func (t *Trainer) checkpointTensors(opt *adam) ([]runstore.Tensor, map[string]string) {
	meta := map[string]string{
		"format": checkpointFormat, "version": Version, "env": t.cfg.Env.ID, "agent": t.cfg.Agent.Name,
		"config": t.cfg.TOML(),
	}
	var out []runstore.Tensor
	if t.obsNorm != nil {
		out = append(out, t.obsNorm.stat.tensors("obs_norm")...)
	}
	if t.rewScale != nil {
		out = append(out, t.rewScale.stat.tensors("reward_norm")...)
	}
	if t.lmr != nil {
		meta["adam_step"] = fmt.Sprint(opt.step)
		return append(out, t.lmCheckpointTensors(opt)...), meta
	}
	if t.learner == nil {
		return out, meta
	}
	meta["adam_step"] = fmt.Sprint(opt.step)
	n := t.learner.Params().Len()
	host := map[string][]float32{"": make([]float32, n), "optimizer.exp_avg.": make([]float32, n), "optimizer.exp_avg_sq.": make([]float32, n)}
	t.dev.Download(host[""], t.learner.Params())
	t.dev.Download(host["optimizer.exp_avg."], opt.m)
	t.dev.Download(host["optimizer.exp_avg_sq."], opt.v)
	for prefix, flat := range host {
		for _, nt := range t.learner.Tensors() {
			td := runstore.Tensor{Name: prefix + nt.Name, Shape: nt.ExportShape(), Data: make([]float32, nt.T.Len())}
			nt.Export(td.Data, flat[nt.T.Offset():nt.T.Offset()+nt.T.Len()])
			out = append(out, td)
		}
	}
	return out, meta
}
