package safetensors

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzDecodeSafetensors feeds arbitrary bytes to the reader, as a model's
// file (every dtype it reads) and as a checkpoint (F32 only, as
// trainer/runstore reads them): it must refuse or decode, never panic or
// allocate past what the data holds (two float32 bytes per byte of the
// narrowest dtype), and what it decodes must encode and decode back to the
// same tensors. The corpus lives in testdata/fuzz/FuzzDecodeSafetensors.
func FuzzDecodeSafetensors(f *testing.F) {
	good, _ := Encode([]Tensor{
		{Name: "w", Shape: []int{2, 2}, Data: []float32{1, 2, 3, 4}},
		{Name: "b", Shape: []int{2}, Data: []float32{-1, 0.5}},
	}, map[string]string{"format": "pt"})
	f.Add(good)
	for _, header := range []string{
		`{"w":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]}}`,
		`{"w":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}}`,
		`{"w":{"dtype":"F32","shape":[-1,2],"data_offsets":[8,0]}}`,
		`{"w":{"dtype":"F32","shape":[2305843009213693953,2],"data_offsets":[0,8]}}`,
		`{"__metadata__":{"a":1}}`,
		`{"w":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"v":{"dtype":"F16","shape":[2],"data_offsets":[4,8]}}`,
	} {
		f.Add(file(header, 8))
	}
	f.Add(file(`{"w":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},"__metadata__":{"format":"pt"}}`, 8))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		f32, _, errF32 := Decode(b, Options{DTypes: []DType{F32}})
		tensors, meta, err := Decode(b, Options{})
		if err != nil {
			if errF32 == nil {
				t.Fatalf("a checkpoint decodes but the same bytes as a model do not: %v", err)
			}
			return
		}
		if errF32 == nil && len(f32) != len(tensors) {
			t.Fatalf("%d tensors as a checkpoint, %d as a model", len(f32), len(tensors))
		}
		total := 0
		var list []Tensor
		for _, td := range tensors {
			total += 4 * len(td.Data)
			list = append(list, td)
		}
		if total > 2*len(b) {
			t.Fatalf("decoded %d bytes of tensors from %d bytes of input", total, len(b))
		}
		again, err := Encode(list, meta)
		if err != nil {
			t.Fatalf("re-encoding what was decoded: %v", err)
		}
		back, _, err := Decode(again, Options{})
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

// FuzzOpenIndex feeds arbitrary index files beside two real shards to
// OpenDir: it must refuse or open a set whose every tensor reads back,
// never panic or open a file outside the directory.
func FuzzOpenIndex(f *testing.F) {
	f.Add([]byte(`{"metadata":{"total_size":1200},"weight_map":{"ta":"model-00001-of-00002.safetensors","tb":"model-00002-of-00002.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"ta":"../model-00001-of-00002.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"ta":"model.safetensors","tb":"model.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"ta":"/etc/passwd"}}`))
	f.Add([]byte(`{"weight_map":{"ta":"."}}`))
	dir := f.TempDir()
	if err := WriteDir(dir, testTensors(2), nil, F32, 500); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, index []byte) {
		if err := os.WriteFile(filepath.Join(dir, IndexName), index, 0o644); err != nil {
			t.Fatal(err)
		}
		set, err := OpenDir(dir, Options{})
		if err != nil {
			return
		}
		defer set.Close()
		for _, fl := range set.Files {
			if filepath.Dir(fl.Path) != dir {
				t.Fatalf("opened %s, outside %s", fl.Path, dir)
			}
		}
		for _, name := range set.Names() {
			e, _, _ := set.Lookup(name)
			if err := set.Read(name, make([]float32, e.Elements())); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	})
}
