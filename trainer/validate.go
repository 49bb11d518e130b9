package trainer

import (
	"math/rand/v2"

	"github.com/agenttrainer/agenttrainer/envs"
)

// maxValidationSteps bounds a validation pass for environments whose
// episodes might never end.
const maxValidationSteps = 10_000

// validate plays one episode of every validation task, sampling actions
// from the policy (or taking the most likely ones with
// trainer.val_deterministic), and adds
// val_return_mean and, where the environment reports it, val_success_rate
// to m. It draws from its own random stream, so validating does not change
// what training does.
func (t *Trainer) validate(iter int, m *Metrics) {
	if t.workflow != nil {
		t.validateWorkflow(iter, m)
		return
	}
	list := make([]envs.Env, len(t.valRows))
	for i, row := range t.valRows {
		e, err := t.tasks.make(row)
		if err != nil { // rows were checked when the run was built
			t.logf("validation task %d: %v", i+1, err)
			return
		}
		list[i] = e
	}
	v, err := envs.NewVector(list)
	if err != nil {
		t.logf("validation: %v", err)
		return
	}
	n := v.Len()
	v.Reset(t.cfg.Trainer.Seed + 2_000_000) // the same starts every time
	rng := rand.New(rand.NewPCG(uint64(t.cfg.Trainer.Seed), uint64(iter)))
	obs := v.Obs
	if t.obsNorm != nil {
		obs = make([]float32, len(v.Obs))
	}
	acts, scratch := make([]float32, n*v.ActDim), make([]float32, n*v.ActDim)
	logp, values := make([]float32, n), make([]float32, n)
	done := make([]bool, n)
	var total float64
	successes, withSuccess, finished := 0, 0, 0
	for step := 0; step < maxValidationSteps && finished < n; step++ {
		if t.obsNorm != nil {
			t.obsNorm.normalize(obs, v.Obs, n)
		}
		t.agent.Act(obs, n, rng, t.cfg.Trainer.ValGreedy, acts, logp, values)
		v.Step(t.actSpace.Clip(acts, scratch))
		for _, ep := range v.Finished {
			if done[ep.Env] {
				continue
			}
			done[ep.Env] = true
			finished++
			total += ep.Return
			if ep.HasSuccess {
				withSuccess++
				if ep.Success {
					successes++
				}
			}
		}
	}
	if finished < n {
		t.logf("validation: %d of %d tasks did not finish within %d steps; counted as failures with no return", n-finished, n, maxValidationSteps)
	}
	ret := Float(total / float64(n))
	m.ValReturnMean = &ret
	if withSuccess > 0 {
		rate := Float(float64(successes) / float64(n))
		m.ValSuccessRate = &rate
	}
	t.logf("iteration %d: validation on %d tasks: return %.3f%s", iter, n, float64(ret), successText(m))
}

func successText(m *Metrics) string {
	if m.ValSuccessRate == nil {
		return ""
	}
	return ", success rate " + Float(*m.ValSuccessRate).String()
}
