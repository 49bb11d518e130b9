package runstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTranscriptsRoundTripAndResume writes transcripts as a trainer does,
// tears the last line as a kill would, and reopens the run at iteration 1:
// the reader keeps the whole records, Reopen drops what came after the
// checkpoint.
func TestTranscriptsRoundTripAndResume(t *testing.T) {
	dir := t.TempDir()
	w, err := OpenJSONL(filepath.Join(dir, TranscriptsFile))
	if err != nil {
		t.Fatal(err)
	}
	r := 1.0
	for iter := 1; iter <= 3; iter++ {
		tr := Transcript{Iter: iter, Split: "train", Env: "text/FrozenLake", Task: "7", Sample: iter - 1, Reward: float64(iter),
			Termination: "env_done", Turns: 1, Messages: []TranscriptTurn{{Role: "user", Content: "grid"}, {Role: "assistant", Content: "```1```", Reward: &r}},
			Rows: []TranscriptRow{{PromptIDs: []int{1, 2}, ResponseIDs: []int{3, 4}, Mask: []uint8{1, 0}, LogProbs: []float32{-0.5, 0}}}}
		if err := w.Write(tr); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	f, _ := os.OpenFile(filepath.Join(dir, TranscriptsFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"iter":4,"messages":[{"ro`)
	f.Close()

	got, err := ReadTranscripts(dir)
	if err != nil || len(got) != 3 || got[1].Reward != 2 || *got[0].Messages[1].Reward != 1 || got[2].Rows[0].Mask[0] != 1 {
		t.Fatalf("read back %d transcripts (%v): %+v", len(got), err, got)
	}
	if err := Reopen(dir, 1); err != nil {
		t.Fatal(err)
	}
	got, err = ReadTranscripts(dir)
	if err != nil || len(got) != 1 || got[0].Iter != 1 {
		t.Fatalf("after Reopen at iteration 1: %d transcripts (%v)", len(got), err)
	}
}

// TestTranscriptClip: a huge observation is cut on a character boundary,
// saying how much, and the record stays under the reader's line bound.
func TestTranscriptClip(t *testing.T) {
	huge := strings.Repeat("é", MaxRecordLine) // 2 bytes each
	ids := make([]int, MaxRecordLine/4)
	for i := range ids {
		ids[i] = 151643 // 7 bytes a token in JSON: the record is ~1.8 MB
	}
	tr := Transcript{Messages: []TranscriptTurn{{Role: "user", Content: huge}, {Role: "assistant", Content: "ok"}},
		Rows: []TranscriptRow{{PromptIDs: ids}}}
	tr.Clip()
	c := tr.Messages[0].Content
	if !utf8.ValidString(c) || len(c) > MaxTranscriptMessage+40 || !strings.Contains(c, "bytes cut]") || tr.Messages[1].Content != "ok" {
		t.Fatalf("clipped message: %d bytes, valid %v, ends %q", len(c), utf8.ValidString(c), c[len(c)-30:])
	}
	if tr.Rows != nil {
		t.Fatal("rows that make the record too long for its reader were kept")
	}
	small := Transcript{Messages: []TranscriptTurn{{Role: "user", Content: "hi"}}, Rows: []TranscriptRow{{PromptIDs: []int{1}}}}
	small.Clip()
	if small.Messages[0].Content != "hi" || small.Rows == nil {
		t.Fatalf("a small record was changed: %+v", small)
	}
}
