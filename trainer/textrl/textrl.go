// Package textrl plays language-model episodes for token-level RL, rLLM's
// workflow engine in Go: workflows (an agent and a text environment taking
// turns, or any custom logic) call the model through a Model that renders
// the chat, feeds the policy token ids and keeps what it sampled, token in,
// token out. The model's tokens are never re-tokenised: each turn appends
// only the new environment and template text to the ids the model already
// saw, so a row holds the exact sequence the policy was run on, with mask 1
// on sampled tokens and 0 on everything else. Turns whose prompt extends the
// previous one share a row; a turn that does not (an agent that rewrites
// history, a template that drops thinking) starts a new row and the
// mismatch is reported. Episodes end with rLLM's termination reasons.
// Groups of samples of many tasks run at once with bounded concurrency,
// their generations batched for the Generator (the model).
package textrl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agenttrainer/agenttrainer/agents/lm/chat"
	"github.com/agenttrainer/agenttrainer/agents/lm/textagent"
	"github.com/agenttrainer/agenttrainer/agents/lm/tokenizer"
	"github.com/agenttrainer/agenttrainer/envs"
)

// FinishReason says why a generation stopped.
type FinishReason string

const (
	// FinishStop: a stop token (kept as the last id) or stop string.
	FinishStop FinishReason = "stop"
	// FinishLength: MaxTokens were generated.
	FinishLength FinishReason = "length"
)

// SamplingParams are one generation's settings (vLLM's and verl's names).
type SamplingParams struct {
	Temperature float64
	TopP        float64
	TopK        int
	MaxTokens   int   // new tokens at most
	StopIDs     []int // token ids that end the generation (kept in its ids)
	Seed        uint64
}

// Request is one sequence to continue.
type Request struct {
	PromptIDs []int
	Params    SamplingParams
}

// Generation is what the model sampled for a request: the new ids, each
// one's log-probability under the policy that sampled it (at temperature
// 1 over the raw logits, what the RL loss needs), and why it stopped.
type Generation struct {
	IDs      []int
	LogProbs []float32
	Finish   FinishReason
}

// Generator is the policy: it continues a batch of sequences. The language
// model implements it; the engine calls it from one goroutine at a time.
// It must honour each request's seed, so that results do not depend on how
// requests were batched.
type Generator interface {
	Generate(ctx context.Context, reqs []Request) ([]Generation, error)
}

// Tokenizer is what the engine needs of a tokenizer (agents/lm/tokenizer's
// Tokenizer is one).
type Tokenizer interface {
	Encode(text string, addSpecial bool) []int
	DecodeWith(ids []int, o tokenizer.DecodeOptions) string
	VocabSize() int
}

// TemplateRenderer renders through a model's own chat template (with its
// variables, such as enable_thinking). Most templates are not prefix
// preserving across turns (Qwen3's drops earlier thinking), so multi-turn
// episodes then start a new row at such turns; prefer the ChatML or
// Llama-3 renderers for multi-turn training.
type TemplateRenderer struct {
	Template *chat.Template
	Options  chat.Options
}

// Render implements chat.Renderer.
func (r TemplateRenderer) Render(messages []chat.Message, addGenerationPrompt bool) (string, error) {
	o := r.Options
	o.AddGenerationPrompt = addGenerationPrompt
	return r.Template.Render(messages, o)
}

// Termination is why an episode ended: rLLM's TerminationReason values.
type Termination string

const (
	MaxPromptLengthExceeded   Termination = "max_prompt_length_exceeded"
	MaxResponseLengthExceeded Termination = "max_response_length_exceeded"
	EnvDone                   Termination = "env_done"
	MaxTurnsExceeded          Termination = "max_turns_exceeded"
	Timeout                   Termination = "timeout"
	Unknown                   Termination = "unknown"
	Error                     Termination = "error"
)

// Terminated is the error a workflow returns to end its episode for a
// reason (rLLM's TerminationEvent).
type Terminated struct {
	Reason Termination
	Detail string
}

func (t *Terminated) Error() string {
	if t.Detail == "" {
		return "terminated: " + string(t.Reason)
	}
	return "terminated: " + string(t.Reason) + ": " + t.Detail
}

// Row is one training sequence: the prompt the first of its turns was given,
// then everything after it — sampled tokens (Mask 1, with their
// log-probabilities) and the environment's and template's tokens between
// turns (Mask 0, log-probability 0). PromptIDs followed by ResponseIDs is
// exactly what the policy saw.
type Row struct {
	Trajectory  int // index in Episode.Trajectories
	Steps       []int
	PromptIDs   []int
	ResponseIDs []int
	Mask        []uint8
	LogProbs    []float32
	Reward      float64 // the trajectory's reward, broadcast
}

// Episode is one run of a workflow on a task (rLLM's Episode).
type Episode struct {
	ID           string // "task:sample"
	TaskIndex    int
	Sample       int
	Task         envs.Params
	Termination  Termination
	Correct      bool
	Trajectories []*textagent.Trajectory
	Rows         []Row
	// Masked says the rows' masks were zeroed (an error, or a termination
	// in Options.MaskTerminations): the episode is reported but not
	// trained on.
	Masked bool
	// Info holds what went wrong ("error"), prefix mismatches
	// ("prefix_mismatches": a list of {turn, byte, expected, got}) and
	// observations that were not valid UTF-8 ("invalid_utf8": count), and a
	// failure to close the environment at the end ("close_error"), and
	// MultiTurn's "last_observation": what the environment said after the
	// model's last answer (its agent's trajectory drops that unanswered
	// turn).
	Info    map[string]any
	Metrics map[string]float64
}

// Reward is the sum of the trajectories' rewards.
func (e *Episode) Reward() float64 {
	s := 0.0
	for _, t := range e.Trajectories {
		s += t.Reward
	}
	return s
}

// Options configure an Engine.
type Options struct {
	Tokenizer Tokenizer
	Renderer  chat.Renderer
	Generator Generator
	// Sampling is the generations' settings; MaxTokens is set per turn
	// from MaxResponseLength and Seed per request from Seed.
	Sampling SamplingParams
	// MaxPromptLength bounds the ids a turn gives the model (the whole
	// context, earlier turns included); a turn over it ends the episode
	// with max_prompt_length_exceeded before anything is generated.
	MaxPromptLength int
	// MaxResponseLength bounds one turn's sampled tokens; a turn that
	// reaches it ends the episode with max_response_length_exceeded.
	MaxResponseLength int
	// MaxConcurrent bounds the episodes played at once (rLLM's
	// n_parallel_agents); MaxBatch the requests in one Generate call.
	MaxConcurrent, MaxBatch int
	// Timeout bounds one episode (0: none).
	Timeout time.Duration
	// Linger is how long a partial batch waits for more requests while
	// some episodes are busy in their environments (default 20 ms).
	Linger time.Duration
	// Seed makes the requests' seeds: each is a function of Seed, the
	// task, the sample, the participant and the turn.
	Seed int64
	// MaskTerminations are the terminations whose episodes are masked
	// (rLLM's overlong filter masks max_response_length_exceeded,
	// max_turns_exceeded and timeout). Error episodes are always masked.
	MaskTerminations []Termination
}

// Engine plays episodes.
type Engine struct {
	o Options
}

// NewEngine checks the options.
func NewEngine(o Options) (*Engine, error) {
	switch {
	case o.Tokenizer == nil || o.Renderer == nil || o.Generator == nil:
		return nil, errors.New("textrl: the engine needs a tokenizer, a chat renderer and a generator")
	case o.MaxPromptLength < 1 || o.MaxResponseLength < 1:
		return nil, fmt.Errorf("max_prompt_length and max_response_length must be positive, got %d and %d", o.MaxPromptLength, o.MaxResponseLength)
	case o.MaxConcurrent < 0 || o.MaxBatch < 0 || o.Timeout < 0 || o.Linger < 0:
		return nil, errors.New("textrl: concurrency, batch, timeout and linger must not be negative")
	}
	if o.MaxConcurrent == 0 {
		o.MaxConcurrent = 64
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = o.MaxConcurrent
	}
	if o.Linger == 0 {
		o.Linger = 20 * time.Millisecond
	}
	return &Engine{o: o}, nil
}

// maxBytesPerToken bounds the text a prompt of n tokens can take: no
// vocabulary in use has tokens longer than this, so text over
// maxBytesPerToken·MaxPromptLength bytes is refused without tokenising it.
const maxBytesPerToken = 256

// ObservationLimit is the most bytes of text a turn may add before the
// engine refuses it as too long without tokenising it.
func (e *Engine) ObservationLimit() int { return maxBytesPerToken * e.o.MaxPromptLength }
