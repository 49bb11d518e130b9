// Package sft is supervised warm start for language-model agents: it reads
// chat transcripts (what `agenttrainer data demos` writes, or a run's
// transcripts.jsonl), tokenises each through the same chat renderer and
// tokenizer the RL trainer uses, turn by turn as the workflow engine does,
// and trains the model on the assistant turns only (mask 1 on an assistant
// turn's tokens and its end-of-turn token, 0 on the system, user and
// template tokens) with AdamW, a warmup and cosine schedule, and a held-out
// loss.
package sft

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agenttrainer/agenttrainer/agents/lm/chat"
)

// Transcript is one line of a transcript file: its messages and the line
// it came from.
type Transcript struct {
	Line     int
	Messages []chat.Message
}

// Roles a transcript may use.
var knownRoles = map[string]bool{"system": true, "user": true, "assistant": true, "tool": true}

// MaxLineBytes bounds one line of a transcript file.
var MaxLineBytes = 16 << 20

// BadLine is a transcript that could not be used, with why.
type BadLine struct {
	Line int
	Err  error
}

func (b BadLine) Error() string { return fmt.Sprintf("line %d: %v", b.Line, b.Err) }

// ReadFile reads a JSONL file of {"messages": [{role, content}, ...]}
// objects (other fields are ignored). With skipBad a malformed line is
// counted in the returned list and skipped; without it the first one is
// the error, naming its line. Blank lines are skipped.
func ReadFile(path string, skipBad bool) ([]Transcript, []BadLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("transcripts: %w", err)
	}
	defer f.Close()
	ts, bad, err := Read(f, skipBad)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return ts, bad, nil
}

// Read is ReadFile over a reader.
func Read(r io.Reader, skipBad bool) ([]Transcript, []BadLine, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out []Transcript
	var bad []BadLine
	for line := 1; ; line++ {
		b, tooLong, err := readLine(br)
		if err == io.EOF && len(b) == 0 && !tooLong {
			break
		}
		if err != nil && err != io.EOF {
			return nil, nil, fmt.Errorf("line %d: %w", line, err)
		}
		var perr error
		var t Transcript
		switch {
		case tooLong:
			perr = fmt.Errorf("the line is longer than %d bytes", MaxLineBytes)
		case len(bytes.TrimSpace(b)) == 0:
			if err == io.EOF {
				return out, bad, nil
			}
			continue
		default:
			t, perr = parseLine(b)
			t.Line = line
		}
		if perr != nil {
			if !skipBad {
				return nil, nil, BadLine{line, perr}
			}
			bad = append(bad, BadLine{line, perr})
		} else {
			out = append(out, t)
		}
		if err == io.EOF {
			break
		}
	}
	if len(out) == 0 {
		return nil, bad, errors.New("no usable transcript in the file")
	}
	return out, bad, nil
}

// readLine reads one line without its newline; a line over MaxLineBytes
// is read to its end and reported as too long.
func readLine(br *bufio.Reader) ([]byte, bool, error) {
	var buf []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > MaxLineBytes+1 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimRight(buf, "\r\n"), tooLong, err
	}
}

// parseLine checks one transcript: valid JSON, known roles, at least one
// assistant turn with text.
func parseLine(b []byte) (Transcript, error) {
	var v struct {
		Messages *[]chat.Message `json:"messages"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return Transcript{}, fmt.Errorf("not a JSON transcript object: %v", err)
	}
	if v.Messages == nil {
		return Transcript{}, errors.New(`no "messages" list (want {"messages": [{"role": ..., "content": ...}, ...]})`)
	}
	ms := *v.Messages
	assistant := false
	for i, m := range ms {
		if !knownRoles[m.Role] {
			return Transcript{}, fmt.Errorf("message %d has the unknown role %q (system, user, assistant or tool)", i, m.Role)
		}
		if m.Role == "assistant" {
			assistant = true
		}
	}
	if !assistant {
		return Transcript{}, errors.New("no assistant turn to learn from")
	}
	return Transcript{Messages: ms}, nil
}
