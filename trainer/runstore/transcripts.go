package runstore

import (
	"encoding/json"
	"fmt"
	"path/filepath"
)

// TranscriptsFile holds a language-model run's sampled episodes, one JSON
// object a line (Transcript): what the app's transcript panel, the runs
// browser and `eval` show, and what supervised warm start can train on.
const TranscriptsFile = "transcripts.jsonl"

// Bounds on transcripts as they are read back (see MaxMetricsFile). A
// trainer keeps each record under MaxRecordLine by cutting long messages
// (Transcript.Clip).
const (
	MaxTranscriptsFile = 1 << 30
	// MaxTranscriptMessage is the most bytes of one message a record keeps;
	// the rest is replaced by a note saying how much was cut.
	MaxTranscriptMessage = 16 << 10
)

// Transcript is one episode of a language-model agent as the run
// directory keeps it. Messages distinguish the model's words (role
// "assistant") from the environment's and the template's (every other
// role); Rows, when the trainer is asked to keep them, hold the exact
// training sequences with their masks.
type Transcript struct {
	Iter   int    `json:"iter"`            // the iteration that sampled it (resume truncates by it)
	Step   int64  `json:"step"`            // the trainer's global step when it was written
	Split  string `json:"split"`           // "train" or "val"
	Env    string `json:"env"`             // env.id
	Task   string `json:"task"`            // the task's id or index in its dataset
	Group  int    `json:"group"`           // the task's group in the iteration (GRPO's prompt group)
	Sample int    `json:"sample"`          // the sample within the group (0 … rollout.n-1)
	Model  string `json:"model,omitempty"` // the policy's checkpoint or directory, for eval

	Reward      float64            `json:"reward"`
	Advantage   float64            `json:"advantage"`
	Correct     bool               `json:"correct"`
	Termination string             `json:"termination"` // textrl.Termination: env_done, max_turns, …
	Turns       int                `json:"turns"`
	Messages    []TranscriptTurn   `json:"messages"`
	Rows        []TranscriptRow    `json:"rows,omitempty"`
	Metrics     map[string]float64 `json:"metrics,omitempty"` // what the env or workflow reported
}

// TranscriptTurn is one chat message; Reward is the environment's reward
// after an assistant turn.
type TranscriptTurn struct {
	Role    string   `json:"role"`
	Content string   `json:"content"`
	Reward  *float64 `json:"reward,omitempty"`
}

// TranscriptRow is one training sequence: prompt ids, then response ids
// with Mask 1 on the model's sampled tokens (LogProbs theirs) and 0 on the
// environment's and template's.
type TranscriptRow struct {
	PromptIDs   []int     `json:"prompt_ids"`
	ResponseIDs []int     `json:"response_ids"`
	Mask        []uint8   `json:"mask"`
	LogProbs    []float32 `json:"logprobs"`
}

// Clip cuts every message to MaxTranscriptMessage bytes (on a UTF-8
// boundary), saying how much it cut, and drops Rows if the record would
// still be over MaxRecordLine, so that one huge observation cannot make a
// record its reader refuses.
func (t *Transcript) Clip() {
	for i := range t.Messages {
		c := t.Messages[i].Content
		if len(c) <= MaxTranscriptMessage {
			continue
		}
		cut := MaxTranscriptMessage
		for cut > 0 && c[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
			cut--
		}
		t.Messages[i].Content = c[:cut] + fmt.Sprintf(" […%d bytes cut]", len(c)-cut)
	}
	if t.Rows != nil {
		if b, err := json.Marshal(t); err == nil && len(b) >= MaxRecordLine {
			t.Rows = nil
		}
	}
}

// ReadTranscripts returns the transcripts of the run in dir, oldest first
// (none when the run has no transcripts file). Lines that are not records
// are skipped and reported with a *BadRecordsError (IsPartial), as for
// metrics.
func ReadTranscripts(dir string) ([]Transcript, error) {
	return readJSONL[Transcript](filepath.Join(dir, TranscriptsFile), MaxTranscriptsFile, "transcripts file")
}

// ScanTranscripts calls fn with each transcript of the run in dir, without
// holding them all (the app reads only the latest group).
func ScanTranscripts(dir string, fn func(Transcript)) error {
	return scanRecords(filepath.Join(dir, TranscriptsFile), MaxTranscriptsFile, "transcripts file", func(line []byte) error {
		var t Transcript
		if err := json.Unmarshal(line, &t); err != nil {
			return err
		}
		fn(t)
		return nil
	})
}
