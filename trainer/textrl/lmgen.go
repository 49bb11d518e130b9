package textrl

import (
	"context"
	"slices"

	"github.com/agenttrainer/agenttrainer/agents/lm"
)

// LMGenerator is agents/lm's batched generator as the engine's Generator:
// requests with the same sampling settings (an engine's all share them but
// their seeds) go to the model together. Tokens counts what it generated,
// for a tokens/s figure; its caller resets it.
type LMGenerator struct {
	G      *lm.Generator
	Tokens int64
}

func (a *LMGenerator) Generate(ctx context.Context, reqs []Request) ([]Generation, error) {
	out := make([]Generation, len(reqs))
	for start := 0; start < len(reqs); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := reqs[start].Params
		end := start + 1
		for end < len(reqs) && sameSampling(reqs[end].Params, p) {
			end++
		}
		prompts := make([][]int32, end-start)
		seeds := make([]uint64, end-start)
		for i := range prompts {
			prompts[i] = ToInt32(reqs[start+i].PromptIDs)
			seeds[i] = reqs[start+i].Params.Seed
		}
		comps, err := a.G.Generate(prompts, lm.SampleOptions{MaxNewTokens: p.MaxTokens, Temperature: p.Temperature,
			TopK: p.TopK, TopP: p.TopP, StopIDs: ToInt32(p.StopIDs), Seeds: seeds})
		if err != nil {
			return nil, err
		}
		for i, c := range comps {
			ids := make([]int, len(c.Tokens))
			for j, id := range c.Tokens {
				ids[j] = int(id)
			}
			finish := FinishStop
			if c.Finish == lm.FinishLength {
				finish = FinishLength
			}
			out[start+i] = Generation{IDs: ids, LogProbs: c.LogProbs, Finish: finish}
			a.Tokens += int64(len(ids))
		}
		start = end
	}
	return out, nil
}

func sameSampling(a, b SamplingParams) bool {
	return a.Temperature == b.Temperature && a.TopP == b.TopP && a.TopK == b.TopK && a.MaxTokens == b.MaxTokens && slices.Equal(a.StopIDs, b.StopIDs)
}

// ToInt32 converts token ids to the model's width.
func ToInt32(ids []int) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}
