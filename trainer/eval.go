package trainer

import (
	"context"
	"fmt"
	"math"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/trainer/config"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// EvalOptions say how to evaluate a run's latest checkpoint.
type EvalOptions struct {
	Episodes      int
	Deterministic bool  // take the distribution's mode instead of sampling
	Seed          int64 // environment seed; 0 means trainer.seed + 1,000,000
	// Frame, when set, receives the environment's text rendering after the
	// reset and after every step, the last step of an episode included
	// (for watching an agent play); an error it returns ends the
	// evaluation with that error.
	Frame func(Frame) error
	// Tasks picks the task rows episodes are played on, one task an
	// episode: "val" (data.val_files), "train" (data.train_files), or ""
	// for the validation tasks when the run has them, else the training
	// tasks, else env.args alone.
	Tasks string
	// Samples is how many times a language model plays each task (pass@k
	// is over them; 0: 1).
	Samples int
}

// Frame is one drawing of an evaluation episode in play.
type Frame struct {
	Episode int     // counted from 0
	Step    int     // steps taken in the episode so far
	Return  float64 // reward summed over those steps
	Last    bool    // the episode ended on this step: Return is its return
	Drawing string  // the environment's picture, ending in a newline
	Caption string  // the figures or legend drawn under it, when apart
	// Colours, when the environment has them, are the xterm-256 colours of
	// the drawing's cell letters (and the legend's): see envs.Paint.
	Colours map[rune]int
}

// Text is the frame as the environment renders it: drawing, then caption.
func (f Frame) Text() string { return f.Drawing + f.Caption }

// EvalResult summarises evaluation episodes.
type EvalResult struct {
	EnvID, Agent, Checkpoint string
	Skipped                  []string // newer checkpoints that were invalid, and why
	Returns, Lengths         []float64
	Successes                int
	HasSuccess               bool
	Tasks                    string // what the episodes were played on
	// A language model's episodes: their transcripts, in task order, and
	// pass@k over Samples per task (PassK is NaN for other agents).
	Transcripts []runstore.Transcript
	Samples     int
	PassK       float64
}

// Mean and Std of the returns.
func (r EvalResult) Mean() float64 { return mean(r.Returns) }

// Std is the population standard deviation of the returns.
func (r EvalResult) Std() float64 {
	m, s := r.Mean(), 0.0
	for _, x := range r.Returns {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(max(len(r.Returns), 1)))
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(max(len(xs), 1))
}

// Evaluate plays episodes with the policy of the newest valid checkpoint in
// a run directory.
func Evaluate(ctx context.Context, dir string, o EvalOptions) (EvalResult, error) {
	if o.Episodes <= 0 {
		return EvalResult{}, &config.Error{Source: "eval", Msg: fmt.Sprintf("--episodes must be at least 1, got %d", o.Episodes)}
	}
	var cfg config.Config
	var path string
	t, err := loadNewestValid(dir, false, func(fc *foundCheckpoint) (*Trainer, error) {
		cfg = fc.cfg.Clone()
		cfg.Env.NumEnvs = 1
		return New(cfg, Options{})
	}, func(t *Trainer, fc *foundCheckpoint) error {
		path = fc.path
		if err := t.loadWeights(fc.tensors); err != nil {
			return err
		}
		if err := t.loadLMWeights(fc.tensors); err != nil {
			return err
		}
		return t.loadNormalizers(fc.tensors, fc.state) // counts only matter for further updates
	})
	if err != nil {
		return EvalResult{}, err
	}
	res := EvalResult{EnvID: cfg.Env.ID, Agent: cfg.Agent.Name, Checkpoint: path, Skipped: t.notes}
	if t.lmr != nil {
		defer t.Close()
		return t.evaluateLM(ctx, o, res)
	}
	seed := o.Seed
	if seed == 0 {
		seed = cfg.Trainer.Seed + 1_000_000 // not the seeds training used
	}
	v := t.venv
	defer t.Close()
	var renderErr error
	var step int    // of the episode in play
	var ret float64 // its return so far
	frame := func(last bool) error {
		if o.Frame == nil {
			return nil
		}
		f := Frame{Episode: len(res.Returns), Step: step, Return: ret, Last: last}
		ok := len(v.Envs) > 0 // a remote batch has no environment here to draw
		if ok {
			f.Drawing, f.Caption, ok = envs.Picture(v.Envs[0])
			f.Colours = envs.Colours(v.Envs[0])
		}
		if !ok { // a mistake in what was asked of it
			return &config.Error{Msg: fmt.Sprintf("%s cannot draw itself as text", cfg.Env.ID)}
		}
		return o.Frame(f)
	}
	// The last step of an episode is drawn before the automatic reset.
	v.BeforeReset = func(int) {
		ep := v.Finished[len(v.Finished)-1]
		step, ret = ep.Length, ep.Return
		if renderErr == nil {
			renderErr = frame(true)
		}
	}
	tasks, what, err := evalTasks(t, o.Tasks)
	if err != nil {
		return res, err
	}
	res.Tasks = what
	if tasks != nil {
		if err := nextEvalTask(v, tasks); err != nil {
			return res, err
		}
	} else {
		v.Reset(seed)
	}
	if err := frame(false); err != nil {
		return res, err
	}
	acts := make([]float32, v.ActDim)
	scratch := make([]float32, v.ActDim)
	logp, value := make([]float32, 1), make([]float32, 1)
	for len(res.Returns) < o.Episodes {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		t.observe(false) // normalise with the frozen training statistics
		t.agent.Act(t.policyObs, 1, t.actRNG, o.Deterministic, acts, logp, value)
		v.Step(t.actSpace.Clip(acts, scratch))
		if err := v.Err(); err != nil {
			return res, err
		}
		step, ret = step+1, ret+float64(v.Rewards[0])
		if renderErr != nil {
			return res, renderErr
		}
		for _, ep := range v.Finished {
			step, ret = 0, 0
			res.Returns = append(res.Returns, ep.Return)
			res.Lengths = append(res.Lengths, float64(ep.Length))
			if ep.HasSuccess {
				res.HasSuccess = true
				if ep.Success {
					res.Successes++
				}
			}
			if tasks != nil && len(res.Returns) < o.Episodes {
				if err := nextEvalTask(v, tasks); err != nil { // one task an episode
					return res, err
				}
			}
		}
		if len(res.Returns) < o.Episodes {
			if err := frame(false); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// evalTasks is the source of the tasks an evaluation plays (nil: env.args
// alone), and words for it.
func evalTasks(t *Trainer, which string) (*taskSource, string, error) {
	val, train := t.valRows, t.tasks.rows
	switch {
	case which == "val" && len(val) == 0:
		return nil, "", &config.Error{Source: "eval", Msg: "--tasks val: the run has no validation tasks (data.val_files)"}
	case which == "train" && len(train) == 0:
		return nil, "", &config.Error{Source: "eval", Msg: "--tasks train: the run has no training tasks (data.train_files)"}
	case which != "" && which != "val" && which != "train":
		return nil, "", &config.Error{Source: "eval", Msg: fmt.Sprintf("--tasks %q: want val or train", which)}
	case which == "val" || (which == "" && len(val) > 0):
		return newTaskSource(&t.cfg, val, t.tasks.make), fmt.Sprintf("its %d validation tasks", len(val)), nil
	case len(train) > 0:
		return newTaskSource(&t.cfg, train, t.tasks.make), fmt.Sprintf("its %d training tasks", len(train)), nil
	}
	return nil, "env.args", nil
}

// nextEvalTask puts the next task's environment into the one slot.
func nextEvalTask(v *envs.Vector, tasks *taskSource) error {
	e, seed, err := tasks.next()
	if err != nil {
		return err
	}
	return v.Replace(0, e, seed)
}
