package textrl

import (
	"context"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/agenttrainer/agenttrainer/agents/lm/chat"
	"github.com/agenttrainer/agenttrainer/agents/lm/textagent"
	"github.com/agenttrainer/agenttrainer/agents/lm/tokenizer"
)

// Output is one model call's result as a workflow sees it.
type Output struct {
	// Text is the answer without special tokens (what an agent reads).
	Text       string
	PromptIDs  []int // the ids the model was given
	Generation Generation
}

// Model is the policy as one episode's workflow sees it. Each participant
// (trajectory) has its own token rows.
type Model struct {
	e        *Engine
	b        *batcher
	episode  *Episode
	sessions map[*textagent.Trajectory]*session
	order    []*textagent.Trajectory
	seed     uint64
}

// session is one participant's token rows.
type session struct {
	index int // the trajectory's index in the episode
	rows  []Row
	// covered is the text the current row's ids decode to: the rendered
	// chat up to the last generation prompt, then the model's answer.
	covered string
	calls   int
}

// Generate renders messages with the generation prompt and samples the
// answer of traj's participant. It extends the participant's current row
// when the rendering starts with what that row already holds, else it
// starts a new row (and records the mismatch). A prompt over
// MaxPromptLength returns *Terminated with max_prompt_length_exceeded; a
// rendering or generator failure, or a generation that breaks the
// Generator contract, returns an error.
func (m *Model) Generate(ctx context.Context, traj *textagent.Trajectory, messages []chat.Message) (Output, error) {
	s := m.sessions[traj]
	if s == nil {
		s = &session{index: len(m.order)}
		m.sessions[traj] = s
		m.order = append(m.order, traj)
	}
	text, err := m.e.o.Renderer.Render(messages, true)
	if err != nil {
		return Output{}, fmt.Errorf("rendering the chat: %w", err)
	}
	if !utf8.ValidString(text) {
		return Output{}, fmt.Errorf("the rendered chat is not valid UTF-8")
	}
	var cur *Row
	if len(s.rows) > 0 {
		cur = &s.rows[len(s.rows)-1]
	}
	var context []int
	extend := cur != nil && strings.HasPrefix(text, s.covered)
	if cur != nil && !extend {
		m.mismatch(s, text)
	}
	limit := m.e.ObservationLimit()
	var delta []int
	if extend {
		add := text[len(s.covered):]
		if len(add) > limit {
			return Output{}, &Terminated{Reason: MaxPromptLengthExceeded, Detail: fmt.Sprintf("the turn adds %d bytes of text", len(add))}
		}
		delta = m.e.o.Tokenizer.Encode(add, false)
		n := len(cur.PromptIDs) + len(cur.ResponseIDs) + len(delta)
		if n > m.e.o.MaxPromptLength {
			return Output{}, &Terminated{Reason: MaxPromptLengthExceeded, Detail: fmt.Sprintf("the prompt has %d tokens, max_prompt_length is %d", n, m.e.o.MaxPromptLength)}
		}
		context = make([]int, 0, n)
		context = append(append(append(context, cur.PromptIDs...), cur.ResponseIDs...), delta...)
	} else {
		if len(text) > limit {
			return Output{}, &Terminated{Reason: MaxPromptLengthExceeded, Detail: fmt.Sprintf("the prompt is %d bytes of text", len(text))}
		}
		context = m.e.o.Tokenizer.Encode(text, false)
		if len(context) > m.e.o.MaxPromptLength {
			return Output{}, &Terminated{Reason: MaxPromptLengthExceeded, Detail: fmt.Sprintf("the prompt has %d tokens, max_prompt_length is %d", len(context), m.e.o.MaxPromptLength)}
		}
	}
	params := m.e.o.Sampling
	params.MaxTokens = m.e.o.MaxResponseLength
	params.Seed = mix(m.seed, uint64(s.index)<<32|uint64(s.calls))
	g, err := m.b.generate(ctx, Request{PromptIDs: context, Params: params})
	if err != nil {
		return Output{}, err
	}
	if err := m.check(g, params.MaxTokens); err != nil {
		return Output{}, err
	}
	step := s.calls
	s.calls++
	if extend {
		cur.Steps = append(cur.Steps, step)
		cur.ResponseIDs = append(cur.ResponseIDs, delta...)
		cur.Mask = append(cur.Mask, make([]uint8, len(delta))...)
		cur.LogProbs = append(cur.LogProbs, make([]float32, len(delta))...)
	} else {
		s.rows = append(s.rows, Row{Trajectory: s.index, Steps: []int{step}, PromptIDs: context})
		cur = &s.rows[len(s.rows)-1]
	}
	cur.ResponseIDs = append(cur.ResponseIDs, g.IDs...)
	for range g.IDs {
		cur.Mask = append(cur.Mask, 1)
	}
	cur.LogProbs = append(cur.LogProbs, g.LogProbs...)
	tok := m.e.o.Tokenizer
	s.covered = text + tok.DecodeWith(g.IDs, tokenizer.DecodeOptions{})
	return Output{
		Text:       tok.DecodeWith(g.IDs, tokenizer.DecodeOptions{SkipSpecial: true}),
		PromptIDs:  context,
		Generation: g,
	}, nil
}

// check holds a generation to the Generator contract.
func (m *Model) check(g Generation, maxTokens int) error {
	if len(g.IDs) != len(g.LogProbs) {
		return fmt.Errorf("the generator returned %d ids with %d log-probabilities", len(g.IDs), len(g.LogProbs))
	}
	if len(g.IDs) > maxTokens {
		return fmt.Errorf("the generator returned %d ids, more than max_tokens %d", len(g.IDs), maxTokens)
	}
	if g.Finish != FinishStop && g.Finish != FinishLength {
		return fmt.Errorf("the generator's finish reason %q is neither %q nor %q", g.Finish, FinishStop, FinishLength)
	}
	vocab := m.e.o.Tokenizer.VocabSize()
	for i, id := range g.IDs {
		if id < 0 || id >= vocab {
			return fmt.Errorf("the generator returned id %d at %d, outside the vocabulary of %d", id, i, vocab)
		}
		if lp := float64(g.LogProbs[i]); math.IsNaN(lp) || lp > 1e-4 || math.IsInf(lp, 1) {
			return fmt.Errorf("the generator returned log-probability %v at %d (must be ≤ 0)", g.LogProbs[i], i)
		}
	}
	return nil
}

// maxMismatches bounds the mismatches an episode records.
const maxMismatches = 16

// mismatch records that a turn's rendering does not extend the row.
func (m *Model) mismatch(s *session, text string) {
	i := 0
	for i < len(text) && i < len(s.covered) && text[i] == s.covered[i] {
		i++
	}
	list, _ := m.episode.Info["prefix_mismatches"].([]map[string]any)
	if len(list) >= maxMismatches {
		return
	}
	excerpt := func(t string) string {
		t = t[i:min(len(t), i+40)]
		return strings.ToValidUTF8(t, "\uFFFD")
	}
	m.episode.Info["prefix_mismatches"] = append(list, map[string]any{
		"trajectory": s.index, "turn": s.calls, "byte": i,
		"expected": excerpt(s.covered), "got": excerpt(text),
	})
}

// mix is SplitMix64 of a and b: well-spread per-request seeds.
func mix(a, b uint64) uint64 {
	z := a ^ (b + 0x9e3779b97f4a7c15 + a<<6 + a>>2)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
