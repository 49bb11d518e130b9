package trainer

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/agenttrainer/agenttrainer/agents/lm/chat"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
	"github.com/agenttrainer/agenttrainer/gpu"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
	"github.com/agenttrainer/agenttrainer/trainer/textrl"
)

// A language-model checkpoint holds the model's parameters as one flat
// tensor (lm.params) with Adam's moments beside it, and the reference
// policy's (lm.ref_params) when the run has one: after a warm start it is
// not the model the config makes. The run's model/ directory holds the
// policy in the Hugging Face layout. A run with a value head (gae) keeps
// it (lm.value_head: the weight, then the bias) with its Adam moments.
const (
	lmParamsTensor = "lm.params"
	lmRefTensor    = "lm.ref_params"
	lmValueTensor  = "lm.value_head"
)

// adamNames are a parameter tensor's name with those of its Adam moments.
func adamNames(name string) [3]string {
	return [3]string{name, "optimizer.exp_avg." + name, "optimizer.exp_avg_sq." + name}
}

func (t *Trainer) lmCheckpointTensors(opt *adam) []runstore.Tensor {
	m := t.lmr.pol.Model
	n := m.Params.Len()
	out := make([]runstore.Tensor, 3)
	for i, src := range [3]struct {
		name string
		get  func([]float32)
	}{
		{lmParamsTensor, func(h []float32) { t.dev.Download(h, m.Params) }},
		{"optimizer.exp_avg." + lmParamsTensor, func(h []float32) { t.dev.Download(h, opt.m) }},
		{"optimizer.exp_avg_sq." + lmParamsTensor, func(h []float32) { t.dev.Download(h, opt.v) }},
	} {
		out[i] = runstore.Tensor{Name: src.name, Shape: []int{n}, Data: make([]float32, n)}
		src.get(out[i].Data)
	}
	if ref := t.lmr.ref; ref != nil {
		td := runstore.Tensor{Name: lmRefTensor, Shape: []int{n}, Data: make([]float32, n)}
		t.dev.Download(td.Data, ref.Params)
		out = append(out, td)
	}
	if v := t.lmr.value; v != nil {
		k := v.Len()
		for i, src := range [3]gpu.Tensor{v.Params, t.lmr.vopt.m, t.lmr.vopt.v} {
			td := runstore.Tensor{Name: adamNames(lmValueTensor)[i], Shape: []int{k}, Data: make([]float32, k)}
			t.dev.Download(td.Data, src)
			out = append(out, td)
		}
	}
	return out
}

// loadLMWeights puts a checkpoint's parameters into the model and keeps
// its Adam moments for the loop.
func (t *Trainer) loadLMWeights(tensors map[string]runstore.Tensor) error {
	if t.lmr == nil {
		return nil
	}
	m := t.lmr.pol.Model
	n := m.Params.Len()
	var got [3][]float32
	for i, name := range []string{lmParamsTensor, "optimizer.exp_avg." + lmParamsTensor, "optimizer.exp_avg_sq." + lmParamsTensor} {
		td, ok := tensors[name]
		if !ok {
			return fmt.Errorf("checkpoint lacks tensor %s (was it written by a language-model run?)", name)
		}
		if len(td.Data) != n {
			return fmt.Errorf("tensor %s holds %d values, this model has %d parameters (another agent.arch or size?)", name, len(td.Data), n)
		}
		got[i] = td.Data
	}
	t.dev.Upload(m.Params, got[0])
	t.resumeAdam = [2][]float32{got[1], got[2]}
	if ref := t.lmr.ref; ref != nil {
		// A checkpoint of a run without a reference leaves the model the
		// config makes as the reference (a KL term turned on at resume).
		if td, ok := tensors[lmRefTensor]; ok {
			if len(td.Data) != n {
				return fmt.Errorf("tensor %s holds %d values, this model has %d parameters", lmRefTensor, len(td.Data), n)
			}
			t.dev.Upload(ref.Params, td.Data)
		}
	}
	return t.loadValueHead(tensors)
}

// loadValueHead puts a checkpoint's value head and its Adam moments into
// a gae run's; a checkpoint without one (a run of another estimator)
// leaves the head as it was, with a note.
func (t *Trainer) loadValueHead(tensors map[string]runstore.Tensor) error {
	v := t.lmr.value
	if v == nil {
		return nil
	}
	names := adamNames(lmValueTensor)
	if _, ok := tensors[names[0]]; !ok {
		t.notes = append(t.notes, "the checkpoint has no value head (its run did not use algorithm.adv_estimator = gae): the value head starts at 0")
		return nil
	}
	var got [3][]float32
	for i, name := range names {
		td, ok := tensors[name]
		if !ok {
			return fmt.Errorf("checkpoint lacks tensor %s beside %s", name, names[0])
		}
		if len(td.Data) != v.Len() {
			return fmt.Errorf("tensor %s holds %d values, this model's value head has %d (another agent.hidden_size?)", name, len(td.Data), v.Len())
		}
		got[i] = td.Data
	}
	if err := v.Set(got[0][:v.Len()-1], got[0][v.Len()-1:]); err != nil {
		return fmt.Errorf("tensor %s: %w", names[0], err)
	}
	t.dev.Upload(t.lmr.vopt.m, got[1])
	t.dev.Upload(t.lmr.vopt.v, got[2])
	return nil
}

// validateLM plays the validation tasks (data.val_batch_size of them, or
// all) rollout.val_n times each at rollout.val_temperature and adds
// val_success_rate (pass@1: the mean of the samples' successes),
// val_return_mean, and val/pass_at_k (the tasks with a success among their
// val_n samples).
func (t *Trainer) validateLM(ctx context.Context, iter int, m *Metrics, transcripts *runstore.JSONL) error {
	c := &t.cfg
	rows := t.valRows
	if b := c.Data.ValBatchSize; b > 0 && b < len(rows) {
		rows = rows[:b]
	}
	eng, err := t.engine(c.Rollout.ValTemp, c.Trainer.Seed+2_000_000)
	if err != nil {
		return err
	}
	groups, _, err := eng.Run(ctx, rows, c.Rollout.ValN, t.lmr.factory)
	if err != nil {
		return err
	}
	pass1, passK, ret := ValidationFigures(groups)
	m.ValSuccessRate, m.ValReturnMean = floatPtr(pass1), floatPtr(ret)
	m.Set("val/pass_at_1", pass1)
	m.Set("val/pass_at_k", passK)
	m.Set("val/k", float64(c.Rollout.ValN))
	return t.writeTranscripts(transcripts, iter, "val", groups, c.Trainer.TranscriptGroups)
}

// ValidationFigures are pass@1 (the mean success over every sample),
// pass@k (the fraction of tasks with at least one success among their k
// samples) and the mean reward of groups of samples of tasks.
func ValidationFigures(groups [][]*textrl.Episode) (pass1, passK, meanReward float64) {
	n, tasks := 0, 0
	for _, g := range groups {
		if len(g) == 0 {
			continue
		}
		tasks++
		any := false
		for _, ep := range g {
			n++
			meanReward += ep.Reward()
			if ep.Correct {
				pass1++
				any = true
			}
		}
		if any {
			passK++
		}
	}
	if n == 0 {
		nan := math.NaN()
		return nan, nan, nan
	}
	return pass1 / float64(n), passK / float64(tasks), meanReward / float64(n)
}

func floatPtr(v float64) *Float { f := Float(v); return &f }

// writeTranscripts writes the first groups of an iteration's episodes to
// transcripts.jsonl.
func (t *Trainer) writeTranscripts(w *runstore.JSONL, iter int, split string, groups [][]*textrl.Episode, keep int) error {
	for g := 0; g < min(keep, len(groups)); g++ {
		for _, ep := range groups[g] {
			tr := Transcript(ep, t.cfg.Env.ID, t.lmr.spec, t.lmr.pol.Tokenizer)
			tr.Iter, tr.Step, tr.Split, tr.Group = iter, int64(iter), split, g
			tr.Clip()
			if err := w.Write(tr); err != nil {
				return fmt.Errorf("writing %s: %w", runstore.TranscriptsFile, err)
			}
		}
	}
	return nil
}

// Transcript is an episode as transcripts.jsonl keeps it: the chat of its
// first participant with each assistant turn's reward, and its rows.
func Transcript(ep *textrl.Episode, envID string, spec text.Spec, _ textrl.Tokenizer) runstore.Transcript {
	tr := runstore.Transcript{Env: envID, Task: taskName(ep.Task, spec, ep.TaskIndex), Sample: ep.Sample,
		Reward: ep.Reward(), Advantage: ep.Metrics["advantage"], Correct: ep.Correct, Termination: string(ep.Termination), Turns: int(ep.Metrics["turns"]),
		Metrics: map[string]float64{}}
	for k, v := range ep.Metrics {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			tr.Metrics[k] = v
		}
	}
	if e, ok := ep.Info["error"].(string); ok {
		tr.Messages = append(tr.Messages, runstore.TranscriptTurn{Role: "error", Content: e})
	}
	if len(ep.Trajectories) > 0 {
		traj := ep.Trajectories[0]
		var msgs []chat.Message
		if last := traj.Last(); last != nil {
			msgs = last.ChatCompletions
		}
		turn := 0
		for _, msg := range msgs {
			tt := runstore.TranscriptTurn{Role: msg.Role, Content: msg.Content}
			if msg.Role == "assistant" && turn < len(traj.Steps) {
				r := traj.Steps[turn].Reward
				tt.Reward = &r
				turn++
			}
			tr.Messages = append(tr.Messages, tt)
		}
		// The environment's answer to the last move (FrozenLake's final
		// grid) closes the transcript.
		if last, _ := ep.Info["last_observation"].(string); last != "" && len(tr.Messages) > 0 && tr.Messages[len(tr.Messages)-1].Role == "assistant" {
			tr.Messages = append(tr.Messages, runstore.TranscriptTurn{Role: "user", Content: last})
		}
	}
	for _, row := range ep.Rows {
		tr.Rows = append(tr.Rows, runstore.TranscriptRow{PromptIDs: row.PromptIDs, ResponseIDs: row.ResponseIDs, Mask: row.Mask, LogProbs: row.LogProbs})
	}
	return tr
}

// taskName is a task's key in its environment (FrozenLake's map), or its
// index.
func taskName(task envs.Params, spec text.Spec, index int) string {
	if spec.Key != nil {
		if k, err := spec.Key(task); err == nil {
			if len(k) > 200 {
				k = k[:200]
			}
			return k
		}
	}
	return strconv.Itoa(index)
}
