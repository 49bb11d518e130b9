package trainer

import (
	"context"
	"fmt"
	"strings"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/internal/termtext"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// evaluateLM plays o.Episodes tasks (the validation tasks, or the training
// ones) o.Samples times each with a language-model run's policy, at
// rollout.val_temperature (greedy with o.Deterministic), and returns their
// transcripts with pass@1 (Successes) and pass@k. With o.Frame, every
// turn of every episode is shown afterwards as a frame: the observation
// the model saw (FrozenLake's grid) and its words.
func (t *Trainer) evaluateLM(ctx context.Context, o EvalOptions, res EvalResult) (EvalResult, error) {
	c := &t.cfg
	rows, what := t.valRows, fmt.Sprintf("its %d validation tasks", len(t.valRows))
	switch {
	case o.Tasks == "train" || (o.Tasks == "" && len(rows) == 0):
		rows, what = t.tasks.rows, fmt.Sprintf("its %d training tasks", len(t.tasks.rows))
	case o.Tasks != "" && o.Tasks != "val":
		return res, &config.Error{Source: "eval", Msg: fmt.Sprintf("--tasks %q: want val or train", o.Tasks)}
	}
	if len(rows) == 0 {
		return res, &config.Error{Source: "eval", Msg: "the run has no tasks to play (" + o.Tasks + ")"}
	}
	res.Tasks = what
	k := max(o.Samples, 1)
	tasks := make([]envs.Params, min(o.Episodes, len(rows)))
	copy(tasks, rows)
	temp := c.Rollout.ValTemp
	if o.Deterministic {
		temp = 0
	}
	seed := o.Seed
	if seed == 0 {
		seed = c.Trainer.Seed + 1_000_000
	}
	eng, err := t.engine(temp, seed)
	if err != nil {
		return res, err
	}
	groups, _, err := eng.Run(ctx, tasks, k, t.lmr.factory)
	if err != nil {
		return res, err
	}
	_, passK, _ := ValidationFigures(groups)
	res.Samples, res.PassK, res.HasSuccess = k, passK, true
	for g, group := range groups {
		for _, ep := range group {
			tr := Transcript(ep, c.Env.ID, t.lmr.spec, t.lmr.pol.Tokenizer)
			tr.Split, tr.Group, tr.Model = "eval", g, res.Checkpoint
			tr.Clip()
			res.Transcripts = append(res.Transcripts, tr)
			res.Returns = append(res.Returns, ep.Reward())
			res.Lengths = append(res.Lengths, ep.Metrics["turns"])
			if ep.Correct {
				res.Successes++
			}
		}
	}
	if o.Frame == nil {
		return res, nil
	}
	for i, tr := range res.Transcripts {
		step, ret := 0, 0.0
		var seen string
		// What the model and the environment wrote may hold anything; a
		// terminal shows it, but does not obey it.
		show := func(s string) string { return termtext.CleanText(strings.ReplaceAll(s, "\t", "  ")) }
		outcome := fmt.Sprintf("%s, reward %g, correct %v\n", tr.Termination, tr.Reward, tr.Correct)
		for k, msg := range tr.Messages {
			last := k == len(tr.Messages)-1
			switch msg.Role {
			case "user", "tool":
				seen = show(msg.Content)
				if last && step > 0 { // the environment's answer to the final move
					if err := o.Frame(Frame{Episode: i, Step: step, Return: ret, Last: true, Drawing: seen + "\n", Caption: outcome}); err != nil {
						return res, err
					}
				}
			case "assistant":
				step++
				if msg.Reward != nil {
					ret += *msg.Reward
				}
				caption := "model: " + show(strings.TrimSpace(msg.Content)) + "\n"
				if last {
					caption += outcome
				}
				if err := o.Frame(Frame{Episode: i, Step: step, Return: ret, Last: last, Drawing: seen + "\n", Caption: caption}); err != nil {
					return res, err
				}
			}
		}
	}
	return res, nil
}
