package runstore

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/agenttrainer/agenttrainer/internal/inputfile"
)

// Tensor is one float32 tensor bound for or read from a safetensors file.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
}

type safetensorsEntry struct {
	DType   string   `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// EncodeSafetensors lays tensors out in the safetensors format: an 8-byte
// little-endian header length, a JSON header naming each tensor's dtype,
// shape and byte range (plus string metadata), then the raw little-endian
// data. Tensors are stored in name order, as the reference writer does.
func EncodeSafetensors(tensors []Tensor, meta map[string]string) ([]byte, error) {
	sorted := append([]Tensor(nil), tensors...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	header := map[string]any{}
	if len(meta) > 0 {
		header["__metadata__"] = meta
	}
	var off int64
	for _, t := range sorted {
		n := int64(len(t.Data)) * 4
		header[t.Name] = safetensorsEntry{DType: "F32", Shape: t.Shape, Offsets: [2]int64{off, off + n}}
		off += n
	}
	h, err := json.Marshal(header)
	if err != nil {
		return nil, err
	}
	for len(h)%8 != 0 { // the format pads the header with spaces to 8 bytes
		h = append(h, ' ')
	}
	var buf bytes.Buffer
	buf.Grow(8 + len(h) + int(off))
	binary.Write(&buf, binary.LittleEndian, uint64(len(h)))
	buf.Write(h)
	word := make([]byte, 4)
	for _, t := range sorted {
		for _, v := range t.Data {
			binary.LittleEndian.PutUint32(word, math.Float32bits(v))
			buf.Write(word)
		}
	}
	return buf.Bytes(), nil
}

// MaxCheckpoint bounds a checkpoint file read back (the memory estimate
// refuses networks whose checkpoints would come near it).
const MaxCheckpoint = 16 << 30

// ReadSafetensors parses a safetensors file of F32 tensors, checking that
// every shape is sound, that every byte range lies inside the file and that
// the ranges tile the data, before it allocates anything for a tensor.
func ReadSafetensors(path string) (map[string]Tensor, map[string]string, error) {
	b, err := inputfile.Read(path, MaxCheckpoint, "checkpoint")
	if err != nil {
		return nil, nil, err
	}
	return DecodeSafetensors(b)
}

// DecodeSafetensors parses the bytes of a safetensors file, with the
// checks of ReadSafetensors.
func DecodeSafetensors(b []byte) (map[string]Tensor, map[string]string, error) {
	if len(b) < 8 {
		return nil, nil, fmt.Errorf("%d bytes is too short for a safetensors file", len(b))
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n > uint64(len(b)-8) {
		return nil, nil, fmt.Errorf("header of %d bytes runs past the end of the file (truncated?)", n)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &raw); err != nil {
		return nil, nil, fmt.Errorf("bad safetensors header: %v", err)
	}
	data := b[8+n:]
	meta := map[string]string{}
	out := map[string]Tensor{}
	var covered int64
	offsets := map[string][2]int64{}
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &meta); err != nil {
				return nil, nil, fmt.Errorf("bad metadata: %v", err)
			}
			continue
		}
		var e safetensorsEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, nil, fmt.Errorf("tensor %s: %v", name, err)
		}
		if e.DType != "F32" {
			return nil, nil, fmt.Errorf("tensor %s has dtype %s; only F32 is supported", name, e.DType)
		}
		count, err := elements(e.Shape, int64(len(data))/4)
		if err != nil {
			return nil, nil, fmt.Errorf("tensor %s: %v", name, err)
		}
		if e.Offsets[0] < 0 || e.Offsets[1] > int64(len(data)) || e.Offsets[1]-e.Offsets[0] != 4*count {
			return nil, nil, fmt.Errorf("tensor %s: byte range %v does not fit shape %v in %d data bytes (truncated?)",
				name, e.Offsets, e.Shape, len(data))
		}
		vals := make([]float32, count)
		for i := range vals {
			vals[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[e.Offsets[0]+4*int64(i):]))
		}
		out[name] = Tensor{Name: name, Shape: e.Shape, Data: vals}
		covered += 4 * count
		offsets[name] = e.Offsets
	}
	if covered != int64(len(data)) {
		return nil, nil, fmt.Errorf("tensors cover %d of %d data bytes", covered, len(data))
	}
	// The ranges must tile the data: the same total with an overlap
	// would let two tensors share bytes and leave others unread.
	ranges := make([][2]int64, 0, len(raw))
	for name, t := range out {
		ranges = append(ranges, [2]int64{offsets[name][0], offsets[name][0] + 4*int64(len(t.Data))})
	}
	slices.SortFunc(ranges, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	var end int64
	for _, r := range ranges {
		if r[0] != end {
			return nil, nil, fmt.Errorf("tensor byte ranges overlap or leave a gap at byte %d", min(r[0], end))
		}
		end = r[1]
	}
	return out, meta, nil
}

// elements is the number of values a shape holds, refused when a dimension
// is negative or the count exceeds limit (which also rules out overflow).
func elements(shape []int, limit int64) (int64, error) {
	count := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %v has a negative dimension", shape)
		}
		if d > 0 && count > limit/int64(d) {
			return 0, fmt.Errorf("shape %v holds more values than the file's %d data bytes", shape, 4*limit)
		}
		count *= int64(d)
	}
	return count, nil
}
