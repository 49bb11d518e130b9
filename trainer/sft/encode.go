package sft

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agenttrainer/agenttrainer/agents/lm/chat"
	"github.com/agenttrainer/agenttrainer/agents/lm/tokenizer"
)

// Tokenizer is what encoding needs of a tokenizer (agents/lm/tokenizer's
// Tokenizer is one).
type Tokenizer interface {
	Encode(text string, addSpecial bool) []int
	DecodeWith(ids []int, o tokenizer.DecodeOptions) string
	VocabSize() int
}

// Example is one training sequence: token ids and, per id, 1 where the
// model is trained to produce it (an assistant turn's tokens and its
// end-of-turn token) and 0 elsewhere.
type Example struct {
	Line int // the transcript's line in its file
	IDs  []int32
	Mask []uint8
}

// Trained is the number of ids with mask 1.
func (e Example) Trained() int {
	n := 0
	for _, m := range e.Mask {
		n += int(m)
	}
	return n
}

// Encoder turns transcripts into examples the way the RL workflow engine
// builds its rows: for each assistant turn, the chat before it is rendered
// with the generation prompt and only the text beyond what is already
// covered is tokenised (mask 0); the assistant's content is tokenised on
// its own and followed by the end-of-turn id (mask 1), as the policy
// would have sampled it. Messages after the last assistant turn are not
// kept (nothing in them is trained).
type Encoder struct {
	Renderer  chat.Renderer
	Tokenizer Tokenizer
	// EndOfTurn is the id that ends an assistant turn: the stop id the
	// RL trainer generates with (<|im_end|> for ChatML).
	EndOfTurn int
	// MaxLength bounds an example's ids (the model's context, or less).
	MaxLength int
}

// Encode builds one example. It fails, saying why, when the renderer does
// not keep earlier turns as a prefix of later ones, when a role is one
// the renderer does not take, or when the example is over MaxLength.
func (e Encoder) Encode(messages []chat.Message) (Example, error) {
	if e.EndOfTurn < 0 || e.EndOfTurn >= e.Tokenizer.VocabSize() {
		return Example{}, fmt.Errorf("the end-of-turn id %d is outside the vocabulary of %d", e.EndOfTurn, e.Tokenizer.VocabSize())
	}
	eot := e.Tokenizer.DecodeWith([]int{e.EndOfTurn}, tokenizer.DecodeOptions{})
	var ex Example
	covered := ""
	add := func(ids []int, m uint8) {
		for _, id := range ids {
			ex.IDs = append(ex.IDs, int32(id))
			ex.Mask = append(ex.Mask, m)
		}
	}
	last := -1
	for k, m := range messages {
		if m.Role == "assistant" {
			last = k
		}
	}
	if last < 0 {
		return Example{}, errors.New("no assistant turn to learn from")
	}
	for k := 0; k <= last; k++ {
		if messages[k].Role != "assistant" {
			continue
		}
		prompt, err := e.Renderer.Render(messages[:k], true)
		if err != nil {
			return Example{}, fmt.Errorf("rendering the chat before message %d: %w", k, err)
		}
		if !strings.HasPrefix(prompt, covered) {
			return Example{}, fmt.Errorf("the chat template does not keep the turns before message %d as they were rendered (not prefix-preserving); use a ChatML or Llama-3 renderer", k)
		}
		add(e.Tokenizer.Encode(prompt[len(covered):], false), 0)
		content := messages[k].Content
		add(e.Tokenizer.Encode(content, false), 1)
		add([]int{e.EndOfTurn}, 1)
		covered = prompt + content + eot
		if e.MaxLength > 0 && len(ex.IDs) > e.MaxLength {
			return Example{}, fmt.Errorf("the transcript is over %d tokens by message %d (raise the length limit or drop long transcripts)", e.MaxLength, k)
		}
	}
	return ex, nil
}

// EncodeAll encodes transcripts; with skipBad one that fails is counted
// and skipped, else the first failure is the error, naming its line.
func (e Encoder) EncodeAll(ts []Transcript, skipBad bool) ([]Example, []BadLine, error) {
	var out []Example
	var bad []BadLine
	for _, t := range ts {
		ex, err := e.Encode(t.Messages)
		if err != nil {
			if !skipBad {
				return nil, nil, BadLine{t.Line, err}
			}
			bad = append(bad, BadLine{t.Line, err})
			continue
		}
		ex.Line = t.Line
		out = append(out, ex)
	}
	if len(out) == 0 {
		return nil, bad, errors.New("no transcript could be encoded")
	}
	return out, bad, nil
}
