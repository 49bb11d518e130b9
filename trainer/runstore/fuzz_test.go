package runstore

import (
	"encoding/binary"
	"slices"
	"testing"
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
