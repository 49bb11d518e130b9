package runstore

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// readEvents is an independent TFRecord/Event reader: it verifies both
// CRCs of every record and pulls (step, tag → value) out of the protos.
func readEvents(t *testing.T, path string) (version string, scalars []map[string]float32, steps []int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	table := crc32.MakeTable(crc32.Castagnoli)
	mask := func(b []byte) uint32 {
		c := crc32.Checksum(b, table)
		return ((c >> 15) | (c << 17)) + 0xa282ead8
	}
	for off := 0; off < len(data); {
		if len(data)-off < 12 {
			t.Fatalf("torn record header at byte %d", off)
		}
		n := int(binary.LittleEndian.Uint64(data[off:]))
		if binary.LittleEndian.Uint32(data[off+8:]) != mask(data[off:off+8]) {
			t.Fatalf("length CRC mismatch at byte %d", off)
		}
		payload := data[off+12 : off+12+n]
		if binary.LittleEndian.Uint32(data[off+12+n:]) != mask(payload) {
			t.Fatalf("payload CRC mismatch at byte %d", off)
		}
		off += 12 + n + 4
		fields := protoFields(t, payload)
		if v, ok := fields[3]; ok {
			version = string(v[0])
			continue
		}
		step, _ := binary.Uvarint(fields[2][0])
		values := map[string]float32{}
		for _, val := range protoFields(t, fields[5][0])[1] {
			vf := protoFields(t, val)
			values[string(vf[1][0])] = math.Float32frombits(binary.LittleEndian.Uint32(vf[2][0]))
		}
		steps = append(steps, int64(step))
		scalars = append(scalars, values)
	}
	return version, scalars, steps
}

// protoFields splits a protobuf message into raw field values by number
// (varints re-encoded, fixed-width and length-delimited as their bytes).
func protoFields(t *testing.T, b []byte) map[int][][]byte {
	out := map[int][][]byte{}
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		b = b[n:]
		field, wire := int(key>>3), key&7
		var v []byte
		switch wire {
		case 0:
			_, n := binary.Uvarint(b)
			v, b = b[:n], b[n:]
		case 1:
			v, b = b[:8], b[8:]
		case 5:
			v, b = b[:4], b[4:]
		case 2:
			l, n := binary.Uvarint(b)
			v, b = b[n:n+int(l)], b[n+int(l):]
		default:
			t.Fatalf("unexpected wire type %d", wire)
		}
		out[field] = append(out[field], v)
	}
	return out
}

func TestTensorBoardEvents(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	w, err := OpenTensorBoard(dir, start)
	if err != nil {
		t.Fatal(err)
	}
	val := Float(0.75)
	recs := []Metrics{
		{Iter: 1, Step: 512, EpReturnMean: Float(math.NaN()), PolicyLoss: -0.02, LR: 2.5e-4},
		{Iter: 2, Step: 1024, EpReturnMean: 21.5, PolicyLoss: -0.01, LR: 2.4e-4, ValSuccessRate: &val},
	}
	for i := range recs {
		if err := w.Write(&recs[i], start.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*"))
	if len(files) != 1 {
		t.Fatalf("event files: %v", files)
	}
	version, scalars, steps := readEvents(t, files[0])
	if version != "brain.Event:2" || len(scalars) != len(recs) {
		t.Fatalf("version %q, %d events for %d records", version, len(scalars), len(recs))
	}
	for i, r := range recs {
		if steps[i] != r.Step {
			t.Errorf("event %d at step %d, record at %d", i, steps[i], r.Step)
		}
		if got, want := scalars[i]["losses/policy_loss"], float32(r.PolicyLoss); got != want {
			t.Errorf("event %d policy_loss %v, record %v", i, got, want)
		}
	}
	if _, ok := scalars[0]["charts/ep_return_mean"]; ok {
		t.Error("an undefined (NaN) return was written")
	}
	if got := scalars[1]["charts/ep_return_mean"]; got != 21.5 {
		t.Errorf("return %v, want 21.5", got)
	}
	if got, ok := scalars[1]["charts/val_success_rate"]; !ok || got != 0.75 {
		t.Errorf("val_success_rate %v (present %v), want 0.75", got, ok)
	}
	if _, ok := scalars[0]["charts/val_success_rate"]; ok {
		t.Error("a validation scalar was written for a record without validation")
	}
}
