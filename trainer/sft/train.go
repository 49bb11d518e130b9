package sft

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/agenttrainer/agenttrainer/agents/lm"
	"github.com/agenttrainer/agenttrainer/gpu"
)

// TrainOptions are the optimisation's settings (TRL's SFTTrainer names
// where it has them).
type TrainOptions struct {
	Epochs int
	// BatchTokens bounds one step's padded batch: rows × the longest row.
	BatchTokens  int
	LearningRate float64
	// WarmupRatio is the fraction of steps over which the rate rises
	// linearly from 0; it then follows a cosine down to
	// LearningRate·MinLRRatio at the last step.
	WarmupRatio  float64
	MinLRRatio   float64
	WeightDecay  float64 // AdamW's decoupled decay, on every parameter
	Beta1, Beta2 float64
	Eps          float64
	MaxGradNorm  float64 // 0: no clipping
	Seed         uint64  // the batches' order
	// EvalEvery is the steps between held-out losses (0: at each epoch's
	// end only).
	EvalEvery int
	// TimeBudget, when set, is the training's length for the schedule:
	// the warmup and cosine follow whichever of the steps or the time is
	// further along, so that a run cut by a time limit still anneals.
	TimeBudget time.Duration
	// State, when set, is a file that keeps the training's progress: Train
	// writes it every SaveEvery (0: only at the end) and when it stops or
	// ends, and when the file is there at the start it continues from it
	// (a training that had ended is not run again).
	State     string
	SaveEvery time.Duration
}

// DefaultTrainOptions are settings that train the small from-scratch
// models of the presets.
var DefaultTrainOptions = TrainOptions{Epochs: 3, BatchTokens: 4096, LearningRate: 1e-3, WarmupRatio: 0.05,
	MinLRRatio: 0.1, Beta1: 0.9, Beta2: 0.98, Eps: 1e-8, MaxGradNorm: 1}

func (o TrainOptions) check() error {
	switch {
	case o.Epochs < 1:
		return fmt.Errorf("epochs must be at least 1, got %d", o.Epochs)
	case o.BatchTokens < 2:
		return fmt.Errorf("batch_tokens must be at least 2, got %d", o.BatchTokens)
	case !(o.LearningRate > 0 && o.LearningRate <= 1):
		return fmt.Errorf("learning_rate must be in (0, 1], got %v", o.LearningRate)
	case !(o.WarmupRatio >= 0 && o.WarmupRatio < 1):
		return fmt.Errorf("warmup_ratio must be in [0, 1), got %v", o.WarmupRatio)
	case !(o.MinLRRatio >= 0 && o.MinLRRatio <= 1):
		return fmt.Errorf("min_lr_ratio must be in [0, 1], got %v", o.MinLRRatio)
	case !(o.WeightDecay >= 0 && o.WeightDecay < 1):
		return fmt.Errorf("weight_decay must be in [0, 1), got %v", o.WeightDecay)
	case !(o.Beta1 >= 0 && o.Beta1 < 1 && o.Beta2 >= 0 && o.Beta2 < 1):
		return fmt.Errorf("adam betas must be in [0, 1), got %v and %v", o.Beta1, o.Beta2)
	case !(o.Eps > 0):
		return fmt.Errorf("adam eps must be positive, got %v", o.Eps)
	case !(o.MaxGradNorm >= 0):
		return fmt.Errorf("max_grad_norm must not be negative, got %v", o.MaxGradNorm)
	case o.EvalEvery < 0:
		return fmt.Errorf("eval_every must not be negative, got %d", o.EvalEvery)
	case o.SaveEvery < 0:
		return fmt.Errorf("the state's save interval must not be negative, got %v", o.SaveEvery)
	}
	return nil
}

// LR is the learning rate at step (0-based) of steps: linear warmup, then
// a cosine to LearningRate·MinLRRatio.
func (o TrainOptions) LR(step, steps int) float64 {
	warm := int(math.Ceil(o.WarmupRatio * float64(steps)))
	if step < warm {
		return o.LearningRate * float64(step+1) / float64(warm+1)
	}
	span := max(steps-warm-1, 1)
	frac := math.Min(float64(step-warm)/float64(span), 1)
	lo := o.LearningRate * o.MinLRRatio
	return lo + (o.LearningRate-lo)*0.5*(1+math.Cos(math.Pi*frac))
}

// LRAt is the learning rate at a fraction of the training (0 to 1): the
// same warmup and cosine as LR, continuous in the fraction.
func (o TrainOptions) LRAt(frac float64) float64 {
	frac = math.Min(math.Max(frac, 0), 1)
	if frac < o.WarmupRatio {
		return o.LearningRate * frac / o.WarmupRatio
	}
	f := (frac - o.WarmupRatio) / (1 - o.WarmupRatio)
	lo := o.LearningRate * o.MinLRRatio
	return lo + (o.LearningRate-lo)*0.5*(1+math.Cos(math.Pi*f))
}

// Trainer holds a model's optimiser state and a pass sized for its
// batches.
type Trainer struct {
	m               *lm.Model
	o               TrainOptions
	pass            *lm.Pass
	mom, vel, stats gpu.Tensor
	decay, scale    gpu.Tensor // weight decay: a copy of the parameters and the factor
	step            int        // optimiser steps taken
}

// NewTrainer prepares to train m; examples longer than o.BatchTokens
// cannot be trained on.
func NewTrainer(m *lm.Model, o TrainOptions) (*Trainer, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	p, err := m.NewPass(o.BatchTokens, o.BatchTokens)
	if err != nil {
		return nil, err
	}
	n := m.NumParams()
	t := &Trainer{m: m, o: o, pass: p, mom: m.Dev.Alloc(1, n), vel: m.Dev.Alloc(1, n), stats: m.Dev.Alloc(1, gpu.NumStats)}
	m.Dev.Fill(t.mom, 0)
	m.Dev.Fill(t.vel, 0)
	if o.WeightDecay > 0 {
		t.decay, t.scale = m.Dev.Alloc(n, 1), m.Dev.Alloc(1, 1)
	}
	return t, nil
}

// Steps is the optimiser steps taken.
func (t *Trainer) Steps() int { return t.step }

// batch pads examples on the right into one batch whose targets are the
// trained ids.
func batch(exs []Example) (lm.Batch, int) {
	seq := 0
	for _, e := range exs {
		seq = max(seq, len(e.IDs))
	}
	b := lm.Batch{Rows: len(exs), Seq: seq, IDs: make([]int32, len(exs)*seq), Mask: make([]int32, len(exs)*seq), Targets: make([]int32, len(exs)*seq)}
	n := 0
	for r, e := range exs {
		row := r * seq
		for i := range seq {
			b.Targets[row+i] = -1
		}
		copy(b.IDs[row:], e.IDs)
		for i := range e.IDs {
			b.Mask[row+i] = 1
			if i+1 < len(e.IDs) && e.Mask[i+1] == 1 {
				b.Targets[row+i] = e.IDs[i+1]
				n++
			}
		}
	}
	return b, n
}

// Loss is the mean negative log-likelihood of exs' trained tokens and the
// number of them, without touching gradients or optimiser state.
func (t *Trainer) Loss(exs []Example) (float64, int, error) {
	sum, n := 0.0, 0
	for _, bs := range pack(exs, t.o.BatchTokens) {
		b, _ := batch(bs)
		s, err := t.pass.Forward(b, lm.ForwardOptions{})
		if err != nil {
			return 0, 0, err
		}
		for _, lp := range s.LogProbs {
			sum -= float64(lp)
		}
		n += len(s.LogProbs)
	}
	if n == 0 {
		return 0, 0, errors.New("no trained tokens to score")
	}
	return sum / float64(n), n, nil
}

// Gradient sets the model's gradients to those of the mean negative
// log-likelihood of exs' trained tokens (one batch) and returns the loss.
func (t *Trainer) Gradient(exs []Example) (float64, error) {
	b, n := batch(exs)
	if n == 0 {
		return 0, errors.New("the batch has no trained tokens")
	}
	s, err := t.pass.Forward(b, lm.ForwardOptions{})
	if err != nil {
		return 0, err
	}
	loss := 0.0
	d := make([]float32, len(s.LogProbs))
	for i, lp := range s.LogProbs {
		loss -= float64(lp)
		d[i] = -1 / float32(n)
	}
	t.m.ZeroGrad()
	if err := t.pass.Backward(d, nil); err != nil {
		return 0, err
	}
	return loss / float64(n), nil
}

// Step takes one AdamW step on exs at learning rate lr and returns the
// loss before it and the gradient's norm before clipping.
func (t *Trainer) Step(exs []Example, lr float64) (loss, gradNorm float64, err error) {
	loss, err = t.Gradient(exs)
	if err != nil {
		return 0, 0, err
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return 0, 0, fmt.Errorf("the loss is %v at step %d (lower the learning rate)", loss, t.step)
	}
	dev := t.m.Dev
	dev.Fill(t.stats, 0)
	clip := float32(t.o.MaxGradNorm)
	if clip == 0 {
		clip = float32(math.Inf(1))
	}
	dev.ClipGradNorm(t.m.Grads, clip, t.stats)
	st := make([]float32, gpu.NumStats)
	dev.Download(st, t.stats)
	gradNorm = float64(st[gpu.StatGradNorm])
	if t.o.WeightDecay > 0 { // params ← params·(1 − lr·wd), as a product with a 1×1 factor
		dev.Copy(t.decay, t.m.Params.Reshape(t.m.NumParams(), 1))
		dev.Upload(t.scale, []float32{float32(1 - lr*t.o.WeightDecay)})
		dev.MatMul(t.m.Params.Reshape(t.m.NumParams(), 1), t.decay, false, t.scale, false, 0)
	}
	t.step++
	dev.Adam(t.m.Params, t.m.Grads, t.mom, t.vel, gpu.AdamArgs{LR: float32(lr), Beta1: float32(t.o.Beta1), Beta2: float32(t.o.Beta2), Eps: float32(t.o.Eps), Step: t.step})
	return loss, gradNorm, nil
}

// pack groups examples, in order, into batches of at most batchTokens
// padded tokens.
func pack(exs []Example, batchTokens int) [][]Example {
	var out [][]Example
	start, longest := 0, 0
	for i, e := range exs {
		l := max(longest, len(e.IDs))
		if i > start && l*(i-start+1) > batchTokens {
			out = append(out, exs[start:i])
			start, l = i, len(e.IDs)
		}
		longest = l
	}
	if start < len(exs) {
		out = append(out, exs[start:])
	}
	return out
}

// epochBatches shuffles exs, sorts runs of them by length (less padding)
// and packs them, then shuffles the batches.
func epochBatches(exs []Example, batchTokens int, r *rand.Rand) [][]Example {
	exs = slices.Clone(exs)
	r.Shuffle(len(exs), func(i, j int) { exs[i], exs[j] = exs[j], exs[i] })
	const run = 1024
	for i := 0; i < len(exs); i += run {
		part := exs[i:min(i+run, len(exs))]
		slices.SortStableFunc(part, func(a, b Example) int { return len(a.IDs) - len(b.IDs) })
	}
	bs := pack(exs, batchTokens)
	r.Shuffle(len(bs), func(i, j int) { bs[i], bs[j] = bs[j], bs[i] })
	return bs
}

// Progress is what Train reports after each step.
type Progress struct {
	Epoch, Step, Steps int
	LR, Loss, GradNorm float64
	// HeldOut is the held-out loss when it was measured at this step (NaN
	// otherwise).
	HeldOut float64
	Tokens  int64 // trained tokens so far
	Elapsed time.Duration
}

// Result is a finished training's summary.
type Result struct {
	Steps        int
	TrainLoss    float64 // the last epoch's mean step loss
	HeldOutLoss  float64 // NaN without held-out examples
	Tokens       int64
	Elapsed      time.Duration
	StoppedEarly bool // ctx ended training before the last step
	TokensPerSec float64
}

// Train runs the epochs over train, measuring heldout's loss every
// EvalEvery steps and at the end. Cancelling ctx stops after the current
// step with what was learnt (Result.StoppedEarly). With o.State it keeps
// its progress there and continues from it.
func Train(ctx context.Context, m *lm.Model, train, heldout []Example, o TrainOptions, report func(Progress)) (Result, error) {
	t, err := NewTrainer(m, o)
	if err != nil {
		return Result{}, err
	}
	for _, e := range append(slices.Clip(train), heldout...) {
		if len(e.IDs) > o.BatchTokens {
			return Result{}, fmt.Errorf("line %d: the example has %d tokens, more than batch_tokens %d (raise batch_tokens)", e.Line, len(e.IDs), o.BatchTokens)
		}
		if len(e.IDs) > m.Config.MaxPositions {
			return Result{}, fmt.Errorf("line %d: the example has %d tokens, more than the model's context of %d", e.Line, len(e.IDs), m.Config.MaxPositions)
		}
	}
	if len(train) == 0 {
		return Result{}, errors.New("no training examples")
	}
	r := newRand(o.Seed)
	plan := make([][][]Example, o.Epochs)
	steps := 0
	for e := range plan {
		plan[e] = epochBatches(train, o.BatchTokens, r)
		steps += len(plan[e])
	}
	start := time.Now()
	res := Result{HeldOutLoss: math.NaN(), TrainLoss: math.NaN()}
	fp := ""
	var resumed trainState
	if o.State != "" {
		fp = fingerprint(train, heldout, o)
		st, found, err := t.loadState(o.State, fp, steps)
		if err != nil {
			return res, err
		}
		if found {
			resumed = st
			start = start.Add(-st.Elapsed)
			res.Tokens, res.HeldOutLoss, res.TrainLoss = st.Tokens, st.HeldOut, st.Loss
			if st.Done {
				res.Steps, res.Elapsed, res.TrainLoss = t.step, st.Elapsed, st.Loss
				return res, nil
			}
		}
	}
	lastSave := time.Now()
	save := func(epochSum float64, done bool) error {
		if o.State == "" {
			return nil
		}
		lastSave = time.Now()
		return t.saveState(o.State, fp, trainState{Step: t.step, EpochSum: epochSum, Loss: res.TrainLoss, HeldOut: res.HeldOutLoss, Tokens: res.Tokens, Elapsed: time.Since(start), Done: done})
	}
	heldOut := func() (float64, error) {
		if len(heldout) == 0 {
			return math.NaN(), nil
		}
		l, _, err := t.Loss(heldout)
		return l, err
	}
	outOfTime := func() bool { return o.TimeBudget > 0 && time.Since(start) >= o.TimeBudget }
	done := 0 // batches of earlier epochs
	sum := 0.0
	for e, bs := range plan {
		sum = 0
		for i, b := range bs {
			if done+i < resumed.Step { // trained before the state was saved
				if done+i == resumed.Step-1 {
					sum = resumed.EpochSum
				}
				continue
			}
			if ctx.Err() != nil || outOfTime() {
				res.StoppedEarly = true
				break
			}
			lr := o.LR(t.step, steps)
			if o.TimeBudget > 0 {
				done := math.Max(float64(t.step)/float64(steps), time.Since(start).Seconds()/o.TimeBudget.Seconds())
				lr = max(o.LRAt(done), o.LearningRate*1e-3)
			}
			loss, gn, err := t.Step(b, lr)
			if err != nil {
				return res, err
			}
			sum += loss
			for _, x := range b {
				res.Tokens += int64(x.Trained())
			}
			p := Progress{Epoch: e + 1, Step: t.step, Steps: steps, LR: lr, Loss: loss, GradNorm: gn, HeldOut: math.NaN(), Tokens: res.Tokens}
			if o.EvalEvery > 0 && t.step%o.EvalEvery == 0 || i == len(bs)-1 {
				if p.HeldOut, err = heldOut(); err != nil {
					return res, err
				}
				res.HeldOutLoss = p.HeldOut
			}
			p.Elapsed = time.Since(start)
			res.TrainLoss = sum / float64(i+1)
			if report != nil {
				report(p)
			}
			if o.SaveEvery > 0 && time.Since(lastSave) >= o.SaveEvery && t.step < steps {
				if err := save(sum, false); err != nil {
					return res, fmt.Errorf("saving the state: %w", err)
				}
			}
		}
		if res.StoppedEarly {
			break
		}
		done += len(bs)
	}
	if res.StoppedEarly {
		if res.HeldOutLoss, err = heldOut(); err != nil {
			return res, err
		}
	}
	// A training cut by its time budget has ended; one cut by ctx goes on
	// when the state is next loaded.
	if err := save(sum, !res.StoppedEarly || outOfTime()); err != nil {
		return res, fmt.Errorf("saving the state: %w", err)
	}
	res.Steps, res.Elapsed = t.step, time.Since(start)
	res.TokensPerSec = float64(res.Tokens) / max(res.Elapsed.Seconds(), 1e-9)
	return res, nil
}

// newRand is the batch order's generator ("sft").
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x736674)) }
