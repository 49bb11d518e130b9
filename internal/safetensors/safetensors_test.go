package safetensors

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRoundTripEachDType(t *testing.T) {
	in := []Tensor{
		{Name: "model.layers.0.mlp.up_proj.weight", Shape: []int{2, 3}, Data: []float32{1, -2, 3.5, 0.25, 1e-3, -65504}},
		{Name: "model.norm.weight", Shape: []int{2}, Data: []float32{-0.5, 0.125}},
		{Name: "scalar", Shape: []int{}, Data: []float32{7}},
		{Name: "empty", Shape: []int{0, 4}, Data: []float32{}},
	}
	for _, dt := range []DType{F32, BF16, F16} {
		t.Run(string(dt), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.safetensors")
			if err := Write(path, in, map[string]string{"format": "pt"}, dt); err != nil {
				t.Fatal(err)
			}
			f, err := Open(path, Options{Finite: true})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Meta["format"] != "pt" || len(f.Entries) != len(in) {
				t.Fatalf("meta %v, %d entries", f.Meta, len(f.Entries))
			}
			raw, _ := os.ReadFile(path)
			whole, _, err := Decode(raw, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range in {
				got := make([]float32, len(want.Data))
				if err := f.Read(want.Name, got); err != nil {
					t.Fatal(err)
				}
				e, _ := f.Entry(want.Name)
				if e.DType != dt || !slices.Equal(e.Shape, want.Shape) {
					t.Errorf("%s: entry %+v", want.Name, e)
				}
				for i, v := range want.Data {
					if r := roundTo(v, dt); got[i] != r {
						t.Errorf("%s[%d] = %v, want %v (%v as %s)", want.Name, i, got[i], r, v, dt)
					}
				}
				if !slices.Equal(whole[want.Name].Data, got) {
					t.Errorf("%s: Decode and File.Read differ", want.Name)
				}
			}
		})
	}
}

// roundTo is v stored as dt and read back.
func roundTo(v float32, dt DType) float32 {
	switch dt {
	case BF16:
		return math.Float32frombits(uint32(Float32ToBF16(v)) << 16)
	case F16:
		return HalfToFloat32(Float32ToHalf(v))
	}
	return v
}

// Every binary16 value widens to the value its fields define, and narrows
// back to itself.
func TestHalfConversionIsExact(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		sign, exp, frac := h>>15, (h>>10)&0x1f, h&0x3ff
		got := HalfToFloat32(uint16(h))
		var want float64
		switch {
		case exp == 0x1f && frac == 0:
			want = math.Inf(1)
		case exp == 0x1f:
			if !math.IsNaN(float64(got)) {
				t.Fatalf("%#04x: %v, want NaN", h, got)
			}
			if back := Float32ToHalf(got); back != uint16(h)|0x200 {
				t.Fatalf("%#04x: NaN narrows to %#04x", h, back)
			}
			continue
		case exp == 0:
			want = math.Ldexp(float64(frac), -24)
		default:
			want = math.Ldexp(1+float64(frac)/1024, exp-15)
		}
		if sign == 1 {
			want = -want
		}
		if float64(got) != want || math.Signbit(float64(got)) != (sign == 1) {
			t.Fatalf("%#04x widens to %v, want %v", h, got, want)
		}
		if back := Float32ToHalf(got); back != uint16(h) {
			t.Fatalf("%#04x: %v narrows to %#04x", h, got, back)
		}
	}
}

// Narrowing picks the nearest representable value, ties to even.
func TestNarrowingRoundsToNearestEven(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200000; i++ {
		f := math.Float32frombits(r.Uint32())
		if math.IsNaN(float64(f)) {
			continue
		}
		if i%2 == 0 { // also values in binary16's range, subnormals included
			f = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-26)))
		}
		checkNearest(t, "F16", f, Float32ToHalf(f), HalfToFloat32, 65520)
		checkNearest(t, "BF16", f, Float32ToBF16(f), func(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }, 0x1.ffp127)
	}
	for _, c := range []struct {
		f    float32
		want uint16
	}{{1 + 1.0/2048, 0x3c00}, {1 + 3.0/2048, 0x3c02}, {65520, 0x7c00}, {65519.99, 0x7bff}, {float32(math.Ldexp(1, -25)), 0}, {float32(math.Ldexp(1.5, -25)), 1}} {
		if got := Float32ToHalf(c.f); got != c.want {
			t.Errorf("Float32ToHalf(%v) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}

func checkNearest(t *testing.T, name string, f float32, got uint16, widen func(uint16) float32, overflow float64) {
	t.Helper()
	g := float64(widen(got))
	if overflow > 0 && math.Abs(float64(f)) >= overflow {
		if !math.IsInf(g, 0) {
			t.Fatalf("%s: %v narrows to %v, want infinity", name, f, g)
		}
		return
	}
	if math.IsInf(float64(f), 0) {
		if g != float64(f) {
			t.Fatalf("%s: %v narrows to %v", name, f, g)
		}
		return
	}
	for _, n := range []uint16{got - 1, got + 1} {
		o := float64(widen(n))
		if math.IsNaN(o) || math.IsInf(o, 0) || math.Signbit(o) != math.Signbit(g) && g != 0 {
			continue
		}
		dg, do := math.Abs(g-float64(f)), math.Abs(o-float64(f))
		if do < dg || do == dg && got&1 == 1 {
			t.Fatalf("%s: %v narrows to %v (%#04x), but %v (%#04x) is nearer or even", name, f, g, got, o, n)
		}
	}
}

// file builds a safetensors file from a header and data bytes.
func file(header string, data int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), make([]byte, data)...)
}

// Crafted headers are refused with a message naming what is wrong, never a
// panic or a large allocation.
func TestRefusesCraftedHeaders(t *testing.T) {
	tests := []struct {
		name, header string
		data         int
		opt          Options
		want         string
	}{
		{"negative dimension", `{"w":{"dtype":"F32","shape":[-1,2],"data_offsets":[8,0]}}`, 8, Options{}, "negative dimension"},
		{"element count overflows", `{"w":{"dtype":"F32","shape":[2305843009213693953,2],"data_offsets":[0,8]}}`, 8, Options{}, "more values"},
		{"count past the data", `{"w":{"dtype":"BF16","shape":[1000000,1000000],"data_offsets":[0,8]}}`, 8, Options{}, "more values"},
		{"range past the end", `{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}}`, 8, Options{}, "does not fit"},
		{"range unlike the shape", `{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}}`, 8, Options{}, "does not fit"},
		{"range unlike the dtype", `{"w":{"dtype":"F16","shape":[4],"data_offsets":[0,16]}}`, 16, Options{}, "does not fit"},
		{"reversed range", `{"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}`, 8, Options{}, "does not fit"},
		{"three offsets", `{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}}`, 8, Options{}, "data_offsets"},
		{"dtype outside a restriction", `{"w":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}}`, 8, Options{DTypes: []DType{F32}}, "only F32"},
		{"unknown dtype", `{"w":{"dtype":"F12","shape":[8],"data_offsets":[0,8]}}`, 8, Options{}, "does not define"},
		{"gap in the data", `{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 8, Options{}, "cover 4 of 8"},
		{"not JSON", `{"w":`, 0, Options{}, "bad safetensors header"},
		{"not an object", `[1,2]   `, 0, Options{}, "not a JSON object"},
		{"trailing bytes", `{}x`, 0, Options{}, "after the JSON object"},
		{"name given twice", `{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8, Options{}, "appears twice"},
		{"metadata not strings", `{"__metadata__":{"a":1}}`, 0, Options{}, "bad metadata"},
		{"overlapping ranges", `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"c":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 12, Options{}, "overlap or leave a gap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := file(tt.header, tt.data)
			_, _, err := Decode(b, tt.opt)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode: error %v, want one mentioning %q", err, tt.want)
			}
			path := filepath.Join(t.TempDir(), "bad.safetensors")
			os.WriteFile(path, b, 0o644)
			_, err = Open(path, tt.opt)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Open: error %v, want one naming the file and mentioning %q", err, tt.want)
			}
		})
	}
	huge := binary.LittleEndian.AppendUint64(nil, MaxHeader+1)
	if _, _, err := Decode(append(huge, make([]byte, MaxHeader+1)...), Options{}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized header: %v", err)
	}
	if _, _, err := Decode(binary.LittleEndian.AppendUint64(nil, 1<<40), Options{}); err == nil || !strings.Contains(err.Error(), "past the end") {
		t.Errorf("truncated header: %v", err)
	}
}

// A file may hold an integer tensor beside its weights: it opens, its
// floats read, and reading the integer one as float32 is refused by name.
func TestIntegerTensorsOpenButDoNotRead(t *testing.T) {
	b := file(`{"ids":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},"w":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}`, 12)
	path := filepath.Join(t.TempDir(), "m.safetensors")
	os.WriteFile(path, b, 0o644)
	f, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Read("w", make([]float32, 1)); err != nil {
		t.Errorf("the float tensor: %v", err)
	}
	if err := f.Read("ids", make([]float32, 1)); err == nil || !strings.Contains(err.Error(), "tensor ids has dtype I64; only F32, BF16 and F16") {
		t.Errorf("the integer tensor: %v", err)
	}
	if _, _, err := Decode(b, Options{}); err == nil || !strings.Contains(err.Error(), "tensor ids has dtype I64") {
		t.Errorf("Decode: %v", err)
	}
	if _, err := Open(path, Options{DTypes: []DType{F32}}); err == nil || !strings.Contains(err.Error(), "only F32 is supported") {
		t.Errorf("as a checkpoint: %v", err)
	}
}

func TestFiniteRefusesNaNAndInfinityByName(t *testing.T) {
	for _, dt := range []DType{F32, BF16, F16} {
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(-1))} {
			path := filepath.Join(t.TempDir(), "m.safetensors")
			vals := []float32{1, 2, bad, 4}
			if err := Write(path, []Tensor{{Name: "lm_head.weight", Shape: []int{4}, Data: vals}}, nil, dt); err != nil {
				t.Fatal(err)
			}
			f, err := Open(path, Options{Finite: true})
			if err != nil {
				t.Fatal(err)
			}
			err = f.Read("lm_head.weight", make([]float32, 4))
			f.Close()
			if err == nil || !strings.Contains(err.Error(), "lm_head.weight") || !strings.Contains(err.Error(), "index 2") || !strings.Contains(err.Error(), path) {
				t.Errorf("%s %v: error %v, want one naming the tensor, the index and the file", dt, bad, err)
			}
			f, _ = Open(path, Options{})
			if err := f.Read("lm_head.weight", make([]float32, 4)); err != nil {
				t.Errorf("%s %v without Finite: %v", dt, bad, err)
			}
			f.Close()
		}
	}
}

// A file cut short after it was opened is reported, not read as zeros.
func TestReadNoticesATruncatedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	Write(path, []Tensor{{Name: "w", Shape: []int{1000}, Data: make([]float32, 1000)}}, nil, F32)
	f, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := os.Stat(path)
	os.Truncate(path, st.Size()-100)
	if err := f.Read("w", make([]float32, 1000)); err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("error %v, want a truncation", err)
	}
	if err := f.Read("w", make([]float32, 10)); err == nil || !strings.Contains(err.Error(), "holds 1000 values") {
		t.Errorf("wrong length: %v", err)
	}
}

func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
	if _, err := OpenDir(dir, Options{}); err == nil || !strings.Contains(err.Error(), "not a model directory") {
		t.Errorf("empty directory: %v", err)
	}
}

func testTensors(n int) []Tensor {
	var ts []Tensor
	for i := 0; i < n; i++ {
		d := make([]float32, 100*(i+1))
		for j := range d {
			d[j] = float32(i*1000 + j)
		}
		ts = append(ts, Tensor{Name: "t" + string(rune('a'+i)), Shape: []int{i + 1, 100}, Data: d})
	}
	return ts
}

func TestWriteDirShardsAndReadsBack(t *testing.T) {
	dir := t.TempDir()
	ts := testTensors(5)
	if err := WriteDir(dir, ts, map[string]string{"format": "pt"}, F32, 1200); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(names) != 5 { // four shards (400, 800+…) and the index
		t.Errorf("files %v", names)
	}
	set, err := OpenDir(dir, Options{Finite: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Files) < 2 || set.Float32Bytes() != 4*1500 {
		t.Fatalf("%d files, %d bytes", len(set.Files), set.Float32Bytes())
	}
	for _, want := range ts {
		got := make([]float32, len(want.Data))
		if err := set.Read(want.Name, got); err != nil || !slices.Equal(got, want.Data) {
			t.Fatalf("%s: %v", want.Name, err)
		}
	}
	set.Close()
	// Written again in one piece, the shards and the index go.
	if err := WriteDir(dir, ts, nil, BF16, 0); err != nil {
		t.Fatal(err)
	}
	names, _ = filepath.Glob(filepath.Join(dir, "*"))
	if len(names) != 1 || filepath.Base(names[0]) != SingleName {
		t.Errorf("after a single write: %v", names)
	}
}

func TestIndexRefusesInconsistentShards(t *testing.T) {
	tests := []struct {
		name, index, want string
	}{
		{"outside the directory", `{"weight_map":{"ta":"../model-00001-of-00002.safetensors"}}`, "not a file name beside the index"},
		{"missing shard", `{"weight_map":{"ta":"model-00009-of-00009.safetensors"}}`, "no such file"},
		{"tensor in another shard", `{"weight_map":{"ta":"model-00002-of-00002.safetensors","tb":"model-00002-of-00002.safetensors"}}`, "does not hold it"},
		{"shard tensor not listed", `{"weight_map":{"ta":"model-00001-of-00002.safetensors","tc":"model-00002-of-00002.safetensors"}}`, "does not list"},
		{"empty map", `{"metadata":{}}`, "missing or empty"},
		{"not JSON", `{"weight_map":`, "unexpected end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			WriteDir(dir, testTensors(3), nil, F32, 1300) // shards {ta, tb}, {tc}
			os.WriteFile(filepath.Join(dir, IndexName), []byte(tt.index), 0o644)
			_, err := OpenDir(dir, Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestWriteRefusesBadTensors(t *testing.T) {
	for _, tt := range []struct {
		ts   []Tensor
		want string
	}{
		{[]Tensor{{Name: "w", Shape: []int{3}, Data: []float32{1}}}, "holds 3 values"},
		{[]Tensor{{Name: "w", Shape: []int{1}, Data: []float32{1}}, {Name: "w", Shape: []int{1}, Data: []float32{1}}}, "twice"},
		{[]Tensor{{Name: "__metadata__", Shape: []int{1}, Data: []float32{1}}}, "cannot be named"},
	} {
		if _, err := Encode(tt.ts, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want %q", err, tt.want)
		}
	}
}
