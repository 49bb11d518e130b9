package trainer

import (
	"context"
	"fmt"
	"math"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// EvalOptions say how to evaluate a run's latest checkpoint.
type EvalOptions struct {
	Episodes      int
	Deterministic bool  // take the distribution's mode instead of sampling
	Seed          int64 // environment seed; 0 means trainer.seed + 1,000,000
	// Frame, when set, receives the environment's text rendering after the
	// reset and after every step (for watching an agent play).
	Frame func(episode int, frame string) error
}

// EvalResult summarises evaluation episodes.
type EvalResult struct {
	EnvID, Agent, Checkpoint string
	Skipped                  []string // newer checkpoints that were invalid, and why
	Returns, Lengths         []float64
	Successes                int
	HasSuccess               bool
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
		return t.loadNormalizers(fc.tensors, fc.state) // counts only matter for further updates
	})
	if err != nil {
		return EvalResult{}, err
	}
	res := EvalResult{EnvID: cfg.Env.ID, Agent: cfg.Agent.Name, Checkpoint: path, Skipped: t.notes}
	seed := o.Seed
	if seed == 0 {
		seed = cfg.Trainer.Seed + 1_000_000 // not the seeds training used
	}
	v := t.venv
	defer t.Close()
	render := func(ep int) error {
		if o.Frame == nil {
			return nil
		}
		var r envs.Renderer
		ok := len(v.Envs) > 0 // a remote batch has no environment here to draw
		if ok {
			r, ok = v.Envs[0].(envs.Renderer)
		}
		if !ok || r.Render() == "" {
			return fmt.Errorf("%s cannot draw itself as text", cfg.Env.ID)
		}
		return o.Frame(ep, r.Render())
	}
	v.Reset(seed)
	if err := render(0); err != nil {
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
		v.Step(t.envActions(acts, scratch))
		if err := v.Err(); err != nil {
			return res, err
		}
		for _, ep := range v.Finished {
			res.Returns = append(res.Returns, ep.Return)
			res.Lengths = append(res.Lengths, float64(ep.Length))
			if ep.HasSuccess {
				res.HasSuccess = true
				if ep.Success {
					res.Successes++
				}
			}
		}
		if len(res.Returns) < o.Episodes {
			if err := render(len(res.Returns)); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}
