package runstore

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSafetensorsRoundTrip(t *testing.T) {
	in := []Tensor{
		{Name: "actor.0.weight", Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, 6}},
		{Name: "actor.0.bias", Shape: []int{2}, Data: []float32{-0.5, 0.25}},
	}
	data, err := EncodeSafetensors(in, map[string]string{"format": "test"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, meta, err := ReadSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	if meta["format"] != "test" || len(out) != len(in) {
		t.Fatalf("meta %v, %d tensors", meta, len(out))
	}
	for _, want := range in {
		got := out[want.Name]
		if !slices.Equal(got.Shape, want.Shape) || !slices.Equal(got.Data, want.Data) {
			t.Errorf("%s: got %v %v, want %v %v", want.Name, got.Shape, got.Data, want.Shape, want.Data)
		}
	}
}

// Crafted headers are refused with a message, never a panic or a huge
// allocation.
func TestSafetensorsRefusesCraftedHeaders(t *testing.T) {
	tests := []struct {
		name, header string
		data         int // bytes of tensor data after the header
		want         string
	}{
		{"negative dimension", `{"w":{"dtype":"F32","shape":[-1,2],"data_offsets":[8,0]}}`, 8, "negative dimension"},
		{"element count overflows", `{"w":{"dtype":"F32","shape":[2305843009213693953,2],"data_offsets":[0,8]}}`, 8, "more values"},
		{"count past the data", `{"w":{"dtype":"F32","shape":[1000000,1000000],"data_offsets":[0,8]}}`, 8, "more values"},
		{"range past the end", `{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}}`, 8, "does not fit"},
		{"range unlike the shape", `{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}}`, 8, "does not fit"},
		{"other dtype", `{"w":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}}`, 8, "only F32"},
		{"gap in the data", `{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 8, "cover 4 of 8"},
		{"not JSON", `{"w":`, 0, "bad safetensors header"},
		// Found by the hostile suite: the right total, but two tensors on the same bytes.
		{"overlapping ranges", `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"c":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 12, "overlap or leave a gap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := binary.LittleEndian.AppendUint64(nil, uint64(len(tt.header)))
			b = append(append(b, tt.header...), make([]byte, tt.data)...)
			path := filepath.Join(t.TempDir(), "bad.safetensors")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := ReadSafetensors(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}
