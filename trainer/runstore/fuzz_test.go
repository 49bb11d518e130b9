package runstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/internal/termtext"
)

// FuzzDecodeSafetensors feeds arbitrary bytes to the checkpoint reader: it
// must refuse or decode, never panic or allocate past the input, and what
// it decodes must encode and decode back to the same tensors. The corpus
// lives in testdata/fuzz/FuzzDecodeSafetensors.
func FuzzDecodeSafetensors(f *testing.F) {
	good, _ := EncodeSafetensors([]Tensor{
		{Name: "w", Shape: []int{2, 2}, Data: []float32{1, 2, 3, 4}},
		{Name: "b", Shape: []int{2}, Data: []float32{-1, 0.5}},
	}, map[string]string{"format": "agenttrainer/v1", "step": "512"})
	f.Add(good)
	for _, header := range []string{
		`{"w":{"dtype":"F32","shape":[-1,2],"data_offsets":[8,0]}}`,
		`{"w":{"dtype":"F32","shape":[2305843009213693953,2],"data_offsets":[0,8]}}`,
		`{"__metadata__":{"a":1}}`,
		`{"w":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}`,
	} {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
		f.Add(append(append(b, header...), 0, 0, 0, 0, 0, 0, 0, 0))
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		tensors, meta, err := DecodeSafetensors(b)
		if err != nil {
			return
		}
		total := 0
		var list []Tensor
		for _, td := range tensors {
			total += 4 * len(td.Data)
			list = append(list, td)
		}
		if total > len(b) {
			t.Fatalf("decoded %d bytes of tensors from %d bytes of input", total, len(b))
		}
		again, err := EncodeSafetensors(list, meta)
		if err != nil {
			t.Fatalf("re-encoding what was decoded: %v", err)
		}
		back, _, err := DecodeSafetensors(again)
		if err != nil {
			t.Fatalf("decoding what was re-encoded: %v", err)
		}
		for name, td := range tensors {
			if !slices.Equal(back[name].Shape, td.Shape) || len(back[name].Data) != len(td.Data) {
				t.Fatalf("tensor %s changed in a round trip", name)
			}
		}
	})
}

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
