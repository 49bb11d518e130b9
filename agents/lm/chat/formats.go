package chat

import (
	"fmt"
	"strings"
)

// ChatMLOptions shape the ChatML format.
type ChatMLOptions struct {
	// DefaultSystem is put first as a system turn when the conversation does
	// not start with one ("": none). Qwen2.5's template uses "You are Qwen,
	// created by Alibaba Cloud. You are a helpful assistant."; SmolLM2's "You
	// are a helpful AI assistant named SmolLM, trained by Hugging Face".
	DefaultSystem string
	// NoThinking ends the generation prompt with an empty think block, as
	// Qwen3's template does with enable_thinking=false.
	NoThinking bool
}

// ChatML renders <|im_start|>role\ncontent<|im_end|>\n turns (Qwen, SmolLM).
type ChatML struct{ o ChatMLOptions }

// NewChatML returns the ChatML format.
func NewChatML(o ChatMLOptions) *ChatML { return &ChatML{o} }

// Render renders each message as its own turn and nothing else, so that the
// rendering of messages[:k] is a prefix of that of messages[:k+1] and the
// generation prompt a prefix of the next assistant turn. Unlike Qwen's own
// templates it keeps every assistant turn's content as given (Qwen3's drops
// the <think> part of earlier turns) and gives each tool result its own
// user turn wrapped in <tool_response> (Qwen's groups consecutive ones).
func (c *ChatML) Render(messages []Message, addGenerationPrompt bool) (string, error) {
	var b strings.Builder
	if c.o.DefaultSystem != "" && (len(messages) == 0 || messages[0].Role != "system") {
		turn(&b, "<|im_start|>system\n", c.o.DefaultSystem, "<|im_end|>\n")
	}
	for i, m := range messages {
		switch m.Role {
		case "system", "user", "assistant":
			turn(&b, "<|im_start|>"+m.Role+"\n", m.Content, "<|im_end|>\n")
		case "tool":
			turn(&b, "<|im_start|>user\n<tool_response>\n", m.Content, "\n</tool_response><|im_end|>\n")
		default:
			return "", fmt.Errorf("message %d has the role %q; ChatML takes system, user, assistant and tool", i, m.Role)
		}
	}
	if addGenerationPrompt {
		b.WriteString(c.GenerationPrompt())
	}
	return b.String(), nil
}

// GenerationPrompt is what addGenerationPrompt appends.
func (c *ChatML) GenerationPrompt() string {
	if c.o.NoThinking {
		return "<|im_start|>assistant\n<think>\n\n</think>\n\n"
	}
	return "<|im_start|>assistant\n"
}

func turn(b *strings.Builder, open, content, close string) {
	b.WriteString(open)
	b.WriteString(content)
	b.WriteString(close)
}

// Llama3Options shape the Llama-3 format.
type Llama3Options struct {
	// NoBOS leaves out <|begin_of_text|>, for when the tokenizer adds it
	// (Encode with addSpecial).
	NoBOS bool
}

// Llama3 renders <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>
// turns after <|begin_of_text|>, as Meta-Llama-3-Instruct's template does,
// except that content is kept as given where that template trims it: a
// completion that ends in whitespace must come back as it was generated.
type Llama3 struct{ o Llama3Options }

// NewLlama3 returns the Llama-3 format.
func NewLlama3(o Llama3Options) *Llama3 { return &Llama3{o} }

// Render renders each message as its own turn; tool results take Llama
// 3.1's "ipython" role. It is prefix-preserving like ChatML's. Llama 3.1 and
// later templates also add a system turn with knowledge-cutoff and today's
// dates; this format does not (say so in the system message if needed).
func (l *Llama3) Render(messages []Message, addGenerationPrompt bool) (string, error) {
	var b strings.Builder
	if !l.o.NoBOS {
		b.WriteString("<|begin_of_text|>")
	}
	for i, m := range messages {
		role := m.Role
		switch role {
		case "system", "user", "assistant":
		case "tool", "ipython":
			role = "ipython"
		default:
			return "", fmt.Errorf("message %d has the role %q; Llama-3 takes system, user, assistant and tool", i, m.Role)
		}
		turn(&b, "<|start_header_id|>"+role+"<|end_header_id|>\n\n", m.Content, "<|eot_id|>")
	}
	if addGenerationPrompt {
		b.WriteString(l.GenerationPrompt())
	}
	return b.String(), nil
}

// GenerationPrompt is what addGenerationPrompt appends.
func (l *Llama3) GenerationPrompt() string {
	return "<|start_header_id|>assistant<|end_header_id|>\n\n"
}

// ChatMLTemplate is the ChatML format as a Jinja chat template, for
// tokenizer_config.json of a model made from scratch (`lm init`): each
// message its own turn, as ChatML{} renders it for system, user and
// assistant messages.
const ChatMLTemplate = "{% for message in messages %}" +
	"{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}" +
	"{% endfor %}" +
	"{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
