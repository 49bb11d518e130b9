package trainer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agenttrainer/agenttrainer/trainer/config"
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
	tensors map[string]tensorData
}

// Resume rebuilds the run in dir from its newest valid checkpoint.
// Overrides may change live keys, trainer.device and trainer.runs_dir;
// anything else would make the checkpoint meaningless and is refused.
func Resume(dir string, overrides []string, opts Options) (*Trainer, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, &config.Error{Source: "--resume", Msg: fmt.Sprintf("no run directory at %s", dir)}
	}
	if _, err := os.Stat(filepath.Join(dir, ConfigFile)); err != nil {
		return nil, &config.Error{Source: "--resume", Msg: fmt.Sprintf("%s is not an agenttrainer run directory (it has no %s)", dir, ConfigFile)}
	}
	rp, err := findCheckpoint(filepath.Join(dir, CheckpointsDir), true)
	if err != nil {
		return nil, &config.Error{Source: "--resume", Msg: fmt.Sprintf("%s: %v", dir, err)}
	}
	saved := config.Default()
	if err := saved.LoadTOML(rp.meta["config"], rp.path); err != nil {
		return nil, err
	}
	runCfg := config.Default()
	if err := runCfg.LoadFile(filepath.Join(dir, ConfigFile)); err != nil {
		return nil, err
	}
	if runCfg.Env.ID != saved.Env.ID || runCfg.Agent.Name != saved.Agent.Name {
		return nil, &config.Error{Source: "--resume", Msg: fmt.Sprintf("%s was trained on %s with %s, but this run is %s with %s (a checkpoint from another run?)",
			filepath.Base(rp.path), saved.Env.ID, saved.Agent.Name, runCfg.Env.ID, runCfg.Agent.Name)}
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
	t, err := New(cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := t.loadCheckpoint(rp.resumePoint); err != nil {
		return nil, &config.Error{Source: rp.path, Msg: err.Error()}
	}
	return t, nil
}

type foundCheckpoint struct {
	resumePoint
	meta map[string]string
}

// findCheckpoint returns the newest checkpoint that parses, preferring the
// one `latest` names; it says why others were skipped if none is usable.
// Resuming needs the loop state in the header; evaluating does not.
func findCheckpoint(dir string, needState bool) (*foundCheckpoint, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("no %s directory: this is not a run directory, or the run never saved", CheckpointsDir)
	}
	var names []string
	for _, e := range entries {
		if _, ok := checkpointStep(e.Name()); ok {
			names = append(names, e.Name())
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		sa, _ := checkpointStep(a)
		sb, _ := checkpointStep(b)
		return int(sb - sa)
	})
	if latest, err := os.ReadFile(filepath.Join(dir, LatestFile)); err == nil {
		name := strings.TrimSpace(string(latest))
		if i := slices.Index(names, name); i > 0 {
			names = append([]string{name}, slices.Delete(names, i, i+1)...)
		}
	}
	if len(names) == 0 {
		return nil, errors.New("no checkpoint yet (the run stopped before its first save)")
	}
	var problems []string
	for _, name := range names {
		path := filepath.Join(dir, name)
		tensors, meta, err := readSafetensors(path)
		if err == nil && meta["format"] != checkpointFormat {
			err = fmt.Errorf("not an agenttrainer checkpoint (format %q)", meta["format"])
		}
		var st loopState
		if err == nil && (needState || meta["state"] != "") {
			if err = json.Unmarshal([]byte(meta["state"]), &st); err != nil {
				err = fmt.Errorf("bad training state in header: %v", err)
			}
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		return &foundCheckpoint{resumePoint{path: path, state: st, tensors: tensors}, meta}, nil
	}
	if len(problems) > 3 {
		problems = append(problems[:3], fmt.Sprintf("and %d more", len(problems)-3))
	}
	return nil, fmt.Errorf("no valid checkpoint: %s", strings.Join(problems, "; "))
}

// loadCheckpoint puts a checkpoint's weights, optimizer state and loop
// state into a freshly built trainer.
func (t *Trainer) loadCheckpoint(rp resumePoint) error {
	st := rp.state
	if err := t.loadWeights(rp.tensors); err != nil {
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
func (t *Trainer) loadNormalizers(tensors map[string]tensorData, st loopState) error {
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
func (t *Trainer) loadWeights(tensors map[string]tensorData) error {
	if t.learner != nil {
		n := t.learner.Params().Len()
		flat := map[string][]float32{"": make([]float32, n), "optimizer.exp_avg.": make([]float32, n), "optimizer.exp_avg_sq.": make([]float32, n)}
		for prefix, host := range flat {
			for _, nt := range t.learner.Tensors() {
				td, ok := tensors[prefix+nt.Name]
				if !ok {
					return fmt.Errorf("checkpoint lacks tensor %s (was it written by another agent?)", prefix+nt.Name)
				}
				if len(td.Data) != nt.T.Len() {
					return fmt.Errorf("tensor %s has shape %v, this agent needs %d values (different env or agent.hidden?)", td.Name, td.Shape, nt.T.Len())
				}
				dst := host[nt.T.Offset() : nt.T.Offset()+nt.T.Len()]
				if nt.Transposed {
					for r := 0; r < nt.T.Rows; r++ {
						for c := 0; c < nt.T.Cols; c++ {
							dst[r*nt.T.Cols+c] = td.Data[c*nt.T.Rows+r]
						}
					}
				} else {
					copy(dst, td.Data)
				}
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

// repairJSONL keeps the records of a JSON-lines file whose iteration is at
// most iter, dropping later ones and a torn last line, so that a resumed run
// neither repeats nor skips a record.
func repairJSONL(path string, iter int) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var kept bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<16), 1<<26)
	for sc.Scan() {
		var rec struct {
			Iter *int `json:"iter"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Iter == nil || *rec.Iter > iter {
			continue
		}
		kept.Write(sc.Bytes())
		kept.WriteByte('\n')
	}
	if kept.Len() == len(data) {
		return nil
	}
	return writeFileAtomic(path, kept.Bytes())
}

// newStreams makes the trainer's two random streams from the seed.
func newStreams(seed uint64) (act, shuffle *rand.PCG) {
	return rand.NewPCG(seed, 2), rand.NewPCG(seed, 3)
}
