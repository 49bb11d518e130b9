package runstore

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/internal/termtext"
)

// FuzzReadMeta feeds arbitrary bytes to the meta.json reader: it must
// refuse or read, never panic, and what it reads must be safe to print (no
// control characters) and, when its tags are words, write back and read
// back the same.
func FuzzReadMeta(f *testing.F) {
	for _, s := range []string{
		`{"name":"wide net","tags":["baseline","lr"],"note":"diverged after 200k"}`,
		`{"name":"n\u001b]0;t\u0007","note":"\u001b]52;c;ZXZpbA==\u0007","tags":["t\u009b2J"]}`,
		`{"tags":null}`, `{"tags":[1,2]}`, `[]`, `null`, `{"name":`, "\x00\xff", `{"name":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseMeta(b, MetaFile)
		if err != nil {
			if termtext.HasControl(strings.ReplaceAll(err.Error(), "\n", "")) {
				t.Fatalf("the error carries a control character: %q", err)
			}
			return
		}
		for _, s := range append([]string{m.Name, m.Note}, m.Tags...) {
			if termtext.HasControl(s) {
				t.Fatalf("read %q, which a terminal would act on", s)
			}
		}
		// What was read writes back (as WriteMeta encodes it) and reads
		// back the same, one line each.
		m.Name, m.Note = oneLine(m.Name), oneLine(m.Note)
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("encoding what was read: %v", err)
		}
		back, err := parseMeta(again, MetaFile)
		if err != nil || back.Name != m.Name || back.Note != m.Note || !slices.Equal(back.Tags, m.Tags) {
			t.Fatalf("round trip: %+v → %+v (%v)", m, back, err)
		}
	})
}

// FuzzMetricsRecords feeds arbitrary bytes as metrics.jsonl to the listing
// summary (a byte scan, lenient about fields it does not need) and the
// record reader: neither may panic or count more records than the file has
// lines, and the reader's records must encode back.
func FuzzMetricsRecords(f *testing.F) {
	f.Add([]byte(`{"iter":1,"step":512,"time_s":1,"ep_return_mean":21.5}` + "\n"))
	f.Add([]byte(`{"iter":1,"step":512}` + "\n{\n" + `{"iter":2,"step":1024,"ep_return_mean":null}`))
	f.Add([]byte("\x00\xff\n\n" + `{ "step": 5, "time_s": "x" }` + "\n"))
	f.Add([]byte(`{"step":1e400,"time_s":1,"ep_return_mean":1}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := metricsSummary{best: Float(math.NaN()), last: Float(math.NaN())}
		err1 := scanLines(bytes.NewReader(b), MetricsFile, s.add)
		var ms []Metrics
		err2 := scanLines(bytes.NewReader(b), MetricsFile, decodeInto(&ms))
		for _, err := range []error{err1, err2} {
			if err != nil && !IsPartial(err) {
				t.Fatalf("an error other than lines that are not records: %v", err)
			}
		}
		lines := len(strings.Split(string(b), "\n"))
		if s.iters > lines || len(ms) > lines {
			t.Fatalf("%d lines, but the summary counts %d records and the reader %d", lines, s.iters, len(ms))
		}
		for _, m := range ms {
			if _, err := json.Marshal(m); err != nil {
				t.Fatalf("a record read does not encode: %v", err)
			}
		}
	})
}
